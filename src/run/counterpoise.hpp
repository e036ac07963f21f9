// The counterpoise-corrected interaction energy of a dimer A···B (Boys and Bernardi): the dimer,
// then each monomer in the dimer's basis (the other monomer's atoms as ghost atoms: basis
// functions without charge or electrons), and, for the uncorrected energy beside it, each
// monomer alone in its own basis. Five whole runs, one after the other.
#pragma once

#include <array>
#include <string>

#include "src/common/progress.hpp"
#include "src/run/options.hpp"
#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// ΔE = E(AB) − E(A) − E(B) at three levels (Eh).
struct InteractionEnergy {
  double scf = 0.0, mp2 = 0.0, scs_mp2 = 0.0;
};

// The runs, in the order they run.
enum class CounterpoiseRun { dimer, a_in_dimer_basis, b_in_dimer_basis, a_alone, b_alone };
inline constexpr std::size_t kCounterpoiseRuns = 5;
struct CounterpoiseRunName {
  CounterpoiseRun run;
  const char* key;          // in the JSON: "dimer", "a_in_dimer_basis", …
  const char* label;        // in the report's table: "A in the dimer basis"
  const char* description;  // in the progress line before it runs
};
// In the order of the runs.
const std::array<CounterpoiseRunName, kCounterpoiseRuns>& counterpoise_runs();

struct CounterpoiseResult {
  int natom_a = 0;  // monomer A: the first natom_a atoms; B: the rest
  std::array<RunResult, kCounterpoiseRuns> runs;
  InteractionEnergy corrected, uncorrected;  // monomers in the dimer basis, and alone

  const RunResult& operator[](CounterpoiseRun run) const { return runs[static_cast<std::size_t>(run)]; }
};

// Runs all five. The dimer is the input's molecule with the options' charge and multiplicity,
// which must leave it neutral and closed-shell; the monomers are neutral singlets. Throws
// InputError before any run for: orbitals or a DF tensor given instead of a molecule alone, ghost
// atoms in the input, natom_a leaving a monomer without atoms, a charged or open-shell dimer,
// or a monomer with an odd electron count. Collective over the MPI ranks, as run().
CounterpoiseResult run_counterpoise(const RunInput& input, const RunOptions& options, int natom_a,
                                    Progress& progress);

}  // namespace dfmp2
