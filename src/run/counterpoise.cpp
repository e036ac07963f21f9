#include "src/run/counterpoise.hpp"

#include "src/common/errors.hpp"
#include "src/run/driver.hpp"

namespace dfmp2 {
namespace {

constexpr std::array<CounterpoiseRunName, kCounterpoiseRuns> kRuns{{
    {CounterpoiseRun::dimer, "dimer", "dimer", "the dimer"},
    {CounterpoiseRun::a_in_dimer_basis, "a_in_dimer_basis", "A in the dimer basis",
     "monomer A in the dimer basis (B's atoms as ghosts)"},
    {CounterpoiseRun::b_in_dimer_basis, "b_in_dimer_basis", "B in the dimer basis",
     "monomer B in the dimer basis (A's atoms as ghosts)"},
    {CounterpoiseRun::a_alone, "a_alone", "A alone", "monomer A alone"},
    {CounterpoiseRun::b_alone, "b_alone", "B alone", "monomer B alone"},
}};

// One run's molecule: every atom of the dimer, or one monomer's atoms with the other's as
// ghosts (in the dimer basis) or left out (alone).
Molecule molecule_of(const Molecule& dimer, std::size_t natom_a, CounterpoiseRun run) {
  if (run == CounterpoiseRun::dimer) return dimer;
  const bool a = run == CounterpoiseRun::a_in_dimer_basis || run == CounterpoiseRun::a_alone;
  const bool ghosts = run == CounterpoiseRun::a_in_dimer_basis || run == CounterpoiseRun::b_in_dimer_basis;
  Molecule monomer;
  monomer.name = dimer.name.empty() ? "" : dimer.name + ", monomer " + (a ? "A" : "B");
  for (std::size_t k = 0; k < dimer.atoms.size(); ++k) {
    Atom atom = dimer.atoms[k];
    atom.ghost = (k < natom_a) != a;
    if (!atom.ghost || ghosts) monomer.atoms.push_back(atom);
  }
  return monomer;  // a neutral singlet: charge 0, multiplicity 1
}

std::string atom_range(std::size_t first, std::size_t last) {
  if (first == last) return "atom " + std::to_string(first);
  return "atoms " + std::to_string(first) + "-" + std::to_string(last);
}

// Everything that would stop a later run is refused before the first one.
void check_dimer(const RunInput& input, const RunOptions& options, int natom_a) {
  if (!input.molecule || input.orbitals || input.df)
    throw InputError("--counterpoise runs an SCF for the dimer and for each monomer: it needs a molecule alone "
                     "(XYZ, or HDF5 without /scf or /df), not given orbitals or a DF tensor");
  const Molecule& dimer = *input.molecule;
  if (has_ghost_atoms(dimer))
    throw InputError("--counterpoise places the ghost atoms itself: give the dimer without any");
  const auto natom = static_cast<int>(dimer.atoms.size());
  if (natom_a < 1 || natom_a >= natom)
    throw InputError("--counterpoise " + std::to_string(natom_a) + " must leave each monomer an atom: between 1 and " +
                     std::to_string(natom - 1) + " for this dimer of " + std::to_string(natom) + " atoms");
  if (options.charge.value_or(dimer.charge) != 0 || options.multiplicity.value_or(dimer.multiplicity) != 1)
    throw InputError("--counterpoise takes a neutral closed-shell dimer of neutral closed-shell monomers "
                     "(charge 0, multiplicity 1)");
  for (const CounterpoiseRun run : {CounterpoiseRun::a_alone, CounterpoiseRun::b_alone}) {
    const Molecule monomer = molecule_of(dimer, static_cast<std::size_t>(natom_a), run);
    if (electron_count(monomer) % 2 != 0) {
      const bool a = run == CounterpoiseRun::a_alone;
      throw InputError("--counterpoise takes neutral closed-shell monomers, and monomer " + std::string(a ? "A" : "B") +
                       " (" + (a ? atom_range(1, natom_a) : atom_range(natom_a + 1, natom)) + ") has " +
                       std::to_string(electron_count(monomer)) + " electrons");
    }
  }
}

double scs_mp2_total(const RunResult& r) { return r.e_scf + r.e_scs_corr; }

InteractionEnergy interaction(const RunResult& dimer, const RunResult& a, const RunResult& b) {
  return {dimer.e_scf - a.e_scf - b.e_scf, dimer.e_total - a.e_total - b.e_total,
          scs_mp2_total(dimer) - scs_mp2_total(a) - scs_mp2_total(b)};
}

}  // namespace

const std::array<CounterpoiseRunName, kCounterpoiseRuns>& counterpoise_runs() { return kRuns; }

CounterpoiseResult run_counterpoise(const RunInput& input, const RunOptions& options, int natom_a,
                                    Progress& progress) {
  check_dimer(input, options, natom_a);
  CounterpoiseResult cp;
  cp.natom_a = natom_a;
  for (const CounterpoiseRunName& name : kRuns) {
    progress.message("dfmp2: counterpoise: " + std::string(name.description));
    RunInput fragment = input;
    fragment.molecule = molecule_of(*input.molecule, static_cast<std::size_t>(natom_a), name.run);
    RunOptions fragment_options = options;  // a monomer is a neutral singlet (molecule_of)
    if (name.run != CounterpoiseRun::dimer) fragment_options.charge = fragment_options.multiplicity = std::nullopt;
    cp.runs[static_cast<std::size_t>(name.run)] = run(fragment, fragment_options, progress);
  }
  using enum CounterpoiseRun;
  cp.corrected = interaction(cp[dimer], cp[a_in_dimer_basis], cp[b_in_dimer_basis]);
  cp.uncorrected = interaction(cp[dimer], cp[a_alone], cp[b_alone]);
  return cp;
}

}  // namespace dfmp2
