#include "src/run/stages.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <tuple>
#include <type_traits>

#include <omp.h>

#include "src/common/errors.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/io/ao_conventions.hpp"
#include "src/mp2/df_transform.hpp"
#include "src/scf/df_fock.hpp"
#include "src/scf/exact_fock.hpp"
#include "src/scf/rhf.hpp"
#include "src/scf/sad_guess.hpp"

namespace dfmp2 {
namespace {

std::string choose(const std::optional<std::string>& option, const std::string& stored, const std::string& fallback) {
  if (option && !option->empty()) return *option;
  if (!stored.empty()) return stored;
  return fallback;
}

// The auxiliary set Psi4 pairs with the orbital basis; an orbital basis given without a name
// (Molden, TREXIO) has none, so the user must name it.
std::string default_auxiliary(const std::string& basis, std::string (*rule)(const std::string&), const RunInput& input,
                              const std::string& option) {
  if (!basis.empty()) return rule(basis);
  throw InputError("'" + input.path + "' does not name its orbital basis: give the auxiliary set with " + option);
}

Eigen::Map<const Eigen::VectorXd> as_vector(const std::vector<double>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}

// MP2's denominators ε_a + ε_b − ε_i − ε_j must be positive: every virtual above every occupied.
void require_energy_gap(Eigen::Ref<const Eigen::VectorXd> eps_occ, Eigen::Ref<const Eigen::VectorXd> eps_vir,
                        const std::string& source) {
  if (eps_occ.size() == 0 || eps_vir.size() == 0) return;
  const double homo = eps_occ.maxCoeff(), lumo = eps_vir.minCoeff();
  if (!(lumo > homo)) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "highest occupied %.6f Eh, lowest virtual %.6f Eh", homo, lumo);
    throw InputError(source + " have no occupied-virtual gap (" + numbers +
                     "): MP2 needs every virtual orbital above every occupied one");
  }
}

void check_spin_orbitals(const SpinOrbitals& orbitals, const Eigen::MatrixXd& S, const std::string& name) {
  if (!std::is_sorted(orbitals.eps.data(), orbitals.eps.data() + orbitals.eps.size()))
    throw InputError(name + " are not sorted by orbital energy");
  constexpr double kTolerance = 1e-8;
  if (const double error = orthonormality_error(orbitals.C, S); !(error <= kTolerance)) {
    char detail[64];
    std::snprintf(detail, sizeof detail, "max |C^T S C - 1| = %.1e > %.0e", error, kTolerance);
    throw InputError(name + " are not orthonormal in the basis's overlap (" + detail +
                     "): they do not belong to this molecule and basis");
  }
  require_energy_gap(orbitals.eps.head(orbitals.nocc), orbitals.eps.tail(orbitals.eps.size() - orbitals.nocc), name);
}

// Orbitals from the input (/scf, Molden, TREXIO) must fit the problem and be canonical SCF
// orbitals' shape; checked before any integral beyond the overlap.
void check_given_orbitals(const Orbitals& orbitals, const Problem& problem) {
  const std::size_t nbf = problem.obs.nbf();
  if (static_cast<std::size_t>(orbitals.C.rows()) != nbf)
    throw InputError("given orbitals have " + std::to_string(orbitals.C.rows()) + " rows but the basis has " +
                     std::to_string(nbf) + " functions");
  if (orbitals.unrestricted() != problem.unrestricted)
    throw InputError(std::string("given orbitals are ") + (orbitals.unrestricted() ? "UHF's (α and β)" : "RHF's") +
                     " but the run is " + (problem.unrestricted ? "UHF" : "RHF"));
  if (orbitals.nocc != problem.nocc)
    throw InputError("given orbitals have nocc = " + std::to_string(orbitals.nocc) + " but the molecule has " +
                     std::to_string(problem.nocc) + (problem.unrestricted ? " α" : " doubly") + " occupied orbitals");
  if (problem.unrestricted && orbitals.beta->nocc != problem.nocc_beta)
    throw InputError("given orbitals have nocc_beta = " + std::to_string(orbitals.beta->nocc) +
                     " but the molecule has " + std::to_string(problem.nocc_beta) + " β occupied orbitals");
  const Eigen::MatrixXd S = overlap_matrix(problem.obs);
  check_spin_orbitals(orbitals, S, orbitals.unrestricted() ? "the given α orbitals" : "the given orbitals");
  if (orbitals.beta) check_spin_orbitals(*orbitals.beta, S, "the given β orbitals");
}

// Electrons beyond what the basis can hold are refused before anything is sized from them.
void check_occupation(const Problem& problem) {
  const std::size_t nbf = problem.obs.nbf();
  if (static_cast<std::size_t>(problem.nocc) > nbf)
    throw InputError(std::to_string(electron_count(problem.molecule)) + " electrons need " +
                     std::to_string(problem.nocc) + (problem.unrestricted ? " α" : " doubly occupied") +
                     " orbitals, but the basis has " + std::to_string(nbf) + " functions");
}

// The active orbitals' B_ia^P of one set of orbitals (RHF's, or one spin's), adding to `stats`.
DFTensor transform_set(const Problem& problem, const Integrals& integrals, const SpinOrbitals& orbitals,
                       const RunContext& context, DFTransformStats& stats) {
  const int nactive = orbitals.nocc - problem.nfrozen;
  const int nvir = static_cast<int>(orbitals.C.cols()) - orbitals.nocc;
  const Eigen::MatrixXd C_occ = orbitals.C.middleCols(problem.nfrozen, nactive);
  const Eigen::MatrixXd C_vir = orbitals.C.rightCols(nvir);
  const Eigen::VectorXd eps_occ = orbitals.eps.segment(problem.nfrozen, nactive);
  const Eigen::VectorXd eps_vir = orbitals.eps.tail(nvir);
  return build_df_tensor({problem.obs, problem.aux, integrals.pairs, C_occ, C_vir, eps_occ, eps_vir}, context.budget,
                         [&context](double done) { context.progress.fraction(done); }, context.comm, stats);
}

void report_iteration(Progress& progress, const ScfIteration& it) {
  char line[112];
  std::snprintf(line, sizeof line, "SCF iter %3d  E = %20.12f  dE = %10.3e  |grad| = %9.3e%s", it.iteration,
                it.energy, it.delta_e, it.gradient_rms, it.fp32 ? "  (fp32 K)" : "");
  progress.message(line);
}

}  // namespace

Problem define_problem(const RunInput& input, const RunContext& context) {
  const RunOptions& options = context.options;
  if (!input.molecule) throw InputError("'" + input.path + "' holds neither a molecule nor /df");
  Problem p;
  p.molecule = *input.molecule;
  if (options.charge) p.molecule.charge = *options.charge;
  if (options.multiplicity) p.molecule.multiplicity = *options.multiplicity;
  validate(p.molecule);
  p.unrestricted = unrestricted(options.reference, p.molecule.multiplicity);
  p.name = p.molecule.name.empty() ? formula(p.molecule) : p.molecule.name;
  p.e_nuc = nuclear_repulsion(p.molecule);
  p.nocc = alpha_electrons(p.molecule);  // a singlet's α and β counts are its doubly occupied orbitals
  p.nocc_beta = beta_electrons(p.molecule);
  // As Psi4, frozen core orbitals are the same number of each spin.
  p.nfrozen = options.frozen_core ? frozen_core_orbitals(p.molecule) : 0;
  if (p.nfrozen >= p.nocc) throw InputError("frozen core leaves no active occupied orbital");
  if (p.nfrozen > p.nocc_beta)
    throw InputError("frozen core needs " + std::to_string(p.nfrozen) + " β orbitals, the molecule has " +
                     std::to_string(p.nocc_beta));

  if (input.orbital_basis && options.basis)
    throw InputError("the orbital basis comes with the orbitals in '" + input.path + "': --basis cannot replace it");
  p.basis = choose(options.basis, input.basis, "");
  if (p.basis.empty() && !input.orbital_basis)
    throw InputError("no basis set given: use --basis NAME or the 'basis' attribute");
  p.df_basis = choose(options.df_basis, input.df_basis, "");
  if (p.df_basis.empty()) p.df_basis = default_auxiliary(p.basis, default_df_basis, input, "--df-basis NAME");
  if (options.scf_type == ScfType::df) {
    p.jk_basis = choose(options.jk_basis, input.jk_basis, "");
    if (p.jk_basis.empty()) p.jk_basis = default_auxiliary(p.basis, default_jk_basis, input, "--jk-basis NAME (or --scf exact)");
  }
  // Every basis set is loaded and placed before any integral, so a bad one fails at once.
  if (input.orbital_basis) {  // only its spherical/Cartesian choice is needed (no SAD guess: orbitals given)
    p.orbital_basis.pure = input.orbital_basis->pure;
    p.obs = input.orbital_basis->shells;
  } else {
    p.orbital_basis = load_basis(p.basis, BasisRole::orbital);
    p.obs = place_on(p.orbital_basis, p.molecule);
  }
  p.aux = place_on(load_basis(p.df_basis, BasisRole::auxiliary), p.molecule);
  // As Psi4 1.3 does, the SCF fitting set takes the orbital set's spherical/Cartesian choice.
  if (!p.jk_basis.empty())
    p.jk_aux = place_on(load_basis(p.jk_basis, BasisRole::auxiliary), p.molecule, p.orbital_basis.pure);
  check_occupation(p);
  if (input.orbitals) check_given_orbitals(*input.orbitals, p);
  context.progress.message("dfmp2: " + p.name + ", nbf " + std::to_string(p.obs.nbf()) + ", naux " +
                           std::to_string(p.aux.nbf()) + ", nocc " + std::to_string(p.nocc) +
                           (p.unrestricted ? " α, " + std::to_string(p.nocc_beta) + " β (UHF)" : ""));
  return p;
}

namespace {

// One spin's active orbitals (RHF: the one set): occupied in all and on this rank, virtual.
struct SpinBlock {
  std::size_t nocc, nocc_mine, nvir;
};

SpinBlock block_of(const DFTensor& df) { return {df.eps_occ.size(), df.nocc, df.nvir}; }

// What the energy step holds beside B: the backend's workspace (lent to it from the budget's
// pages) and, over MPI, a chunk of B visiting from another rank; each the most of any pair block
// this rank sums (UHF: αα, ββ, and its α share against β shares).
struct EnergyWorkspace {
  std::size_t backend = 0, visiting = 0;
  std::size_t total() const { return backend + visiting; }
};
EnergyWorkspace energy_workspace(const std::vector<SpinBlock>& spins, std::size_t naux, kernels::Backend backend,
                                 kernels::Precision precision, std::size_t memory_bytes, const Communicator& comm) {
  const std::size_t elem = precision == kernels::Precision::fp32 ? sizeof(float) : sizeof(double);
  const int threads = omp_get_max_threads();
  EnergyWorkspace most;
  for (const SpinBlock& s : spins) {
    most.backend = std::max(most.backend, kernels::energy_workspace_bytes(backend, precision, s.nocc_mine, s.nvir,
                                                                          threads, memory_bytes));
    most.visiting = std::max(most.visiting, visiting_chunk_bytes(s.nocc, s.nvir, naux, elem, comm));
  }
  if (spins.size() == 2)
    most.backend = std::max(most.backend, kernels::energy_workspace_bytes_opposite_spin(
                                              backend, precision, spins[0].nocc_mine, spins[0].nvir,
                                              spins[1].nocc_mine, spins[1].nvir, threads, memory_bytes));
  return most;
}

// The most the energy step holds: each spin's B in the precision asked for (and the stored one
// when they differ), and the workspace.
std::size_t energy_peak_bytes(const std::vector<SpinBlock>& spins, std::size_t naux, bool stored_fp32,
                              const RunContext& context) {
  const kernels::Precision precision = context.options.precision;
  const std::size_t elem = precision == kernels::Precision::fp32 ? sizeof(float) : sizeof(double);
  const std::size_t stored = stored_fp32 ? sizeof(float) : sizeof(double);
  std::size_t tensors = 0;
  for (const SpinBlock& s : spins) tensors += s.nocc_mine * s.nvir * naux * (stored + (stored == elem ? 0 : elem));
  return tensors + energy_workspace(spins, naux, context.options.backend, precision, 0, context.comm).total();
}

// B in precision Real: the stored tensor, or a converted copy drawn from the budget when it was
// stored in the other precision.
template <typename Real>
const Real* tensor_in(const DFTensor& df, LargeArray<Real>& copy, MemoryBudget& budget) {
  const auto& [same, other] = [&] {
    if constexpr (std::is_same_v<Real, double>)
      return std::tie(df.B64, df.B32);
    else
      return std::tie(df.B32, df.B64);
  }();
  if (!same.empty()) return same.data();
  copy = budget.allocate<Real>(other.size(), "B_ia^P converted to the precision asked for");
  std::copy(other.begin(), other.end(), copy.begin());
  return copy.data();
}

}  // namespace

void check_memory(const Problem& problem, const RunContext& context) {
  const std::size_t nbf = problem.obs.nbf(), naux = problem.aux.nbf(), spins = problem.unrestricted ? 2 : 1;
  const auto block = [&](int nocc) {
    const std::size_t nactive = static_cast<std::size_t>(nocc - problem.nfrozen);
    // nvir at most: linear dependencies only remove virtuals
    return SpinBlock{nactive, share_of(nactive, context.comm.rank(), context.comm.size()).size(), nbf - nocc};
  };
  std::vector<SpinBlock> blocks{block(problem.nocc)};
  if (problem.unrestricted) blocks.push_back(block(problem.nocc_beta));
  const std::size_t scf =
      scf_working_bytes(nbf, context.options.scf, spins) +
      (problem.jk_aux ? DensityFittedFock::peak_bytes(problem.obs, *problem.jk_aux, context.comm, spins)
                      : ExactFock::peak_bytes(nbf, spins));
  // UHF transforms β while it holds α's B.
  std::size_t transform = 0, held = 0;
  for (const SpinBlock& s : blocks) {
    transform = std::max(transform, held + df_transform_peak_bytes(problem.obs, problem.aux, s.nocc, s.nvir, context.comm));
    held += sizeof(double) * s.nocc_mine * s.nvir * naux;
  }
  const std::size_t energy = energy_peak_bytes(blocks, naux, false, context);
  context.budget.require(std::max({scf, transform, energy}),
                         "this run (SCF " + format_bytes(scf) + ", DF transform " + format_bytes(transform) +
                             ", energy " + format_bytes(energy) + " at their peaks)");
}

Integrals compute_integrals(const Problem& problem, const RunContext& context) {
  Integrals ints;
  ints.pairs = significant_shell_pairs(problem.obs);
  ints.pairs_memory = context.budget.reserve(ints.pairs.bytes(), "the shell pairs");
  ints.S = overlap_matrix(problem.obs);
  ints.H = core_hamiltonian(problem.obs, problem.molecule);
  if (problem.jk_aux) {
    auto df = std::make_unique<DensityFittedFock>(problem.obs, *problem.jk_aux, ints.pairs, context.budget,
                                                  context.comm, problem.unrestricted ? 2 : 1);
    ints.work = df->setup_work();
    ints.fock = std::move(df);
  } else {
    ints.exact_fock_memory = context.budget.reserve(ExactFock::peak_bytes(problem.obs.nbf(), problem.unrestricted ? 2 : 1),
                                                    "the exact Fock builds");
    ints.fock = std::make_unique<ExactFock>(problem.obs, ints.pairs, context.comm, context.budget);
  }
  return ints;
}

ScfSolution solve_scf(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                      const RunContext& context) {
  ScfSolution solution;
  const auto matrices = context.budget.reserve(
      scf_working_bytes(problem.obs.nbf(), context.options.scf, problem.unrestricted ? 2 : 1), "the SCF's matrices");
  if (given) {  // one Fock build for E_SCF instead of the SCF (checked by define_problem)
    solution.orbitals = *given;
    solution.e_scf = scf_energy(*given, integrals.H, *integrals.fock) + problem.e_nuc;
  } else {
    ScfOptions options = context.options.scf;
    options.on_iteration = [&context](const ScfIteration& it) { report_iteration(context.progress, it); };
    const Eigen::MatrixXd guess = context.options.guess == ScfGuess::sad
                                      ? atomic_density_guess(problem.orbital_basis, problem.molecule, context.budget)
                                      : Eigen::MatrixXd();
    ScfResult scf = problem.unrestricted ? run_uhf(integrals.S, integrals.H, problem.e_nuc, problem.nocc,
                                                   problem.nocc_beta, *integrals.fock, options, guess)
                                         : run_rhf(integrals.S, integrals.H, problem.e_nuc, problem.nocc,
                                                   *integrals.fock, options, guess);
    solution.e_scf = scf.energy;
    solution.iterations = std::move(scf.iterations);
    solution.orbitals = std::move(scf.orbitals);
  }
  solution.work = integrals.fock->work();
  // Every rank must transform with the very same orbitals (eigenvector signs included).
  for (int s = 0; s < solution.orbitals.spin_count(); ++s) {
    SpinOrbitals& orbitals = solution.orbitals.spin(s);
    context.comm.broadcast(orbitals.C.data(), static_cast<std::size_t>(orbitals.C.size()), 0);
    context.comm.broadcast(orbitals.eps.data(), static_cast<std::size_t>(orbitals.eps.size()), 0);
  }
  solution.s2 = spin_squared(solution.orbitals, integrals.S);
  return solution;
}

Transformed transform_to_mo(const Problem& problem, const Integrals& integrals, const Orbitals& orbitals,
                            const RunContext& context) {
  DFTransformStats stats;
  Transformed t;
  context.progress.begin(orbitals.beta ? "DF transform, α (auxiliary batches)" : "DF transform (auxiliary batches)");
  t.df = transform_set(problem, integrals, orbitals, context, stats);
  t.batches = stats.batches;
  if (orbitals.beta) {
    // The three-index integrals are computed again for β: B_ia^P takes one spin at a time.
    context.progress.begin("DF transform, β (auxiliary batches)");
    t.df_beta = transform_set(problem, integrals, *orbitals.beta, context, stats);
    t.batches = std::max(t.batches, stats.batches);
  }
  t.work = stats.work;
  return t;
}

DFTensor read_given_tensor(const GivenDFTensor& given, const RunContext& context) {
  DFTensor df;
  const Range mine = share_of(given.nocc, context.comm.rank(), context.comm.size());
  df.nocc = mine.size();
  df.occ_begin = mine.begin;
  df.nvir = given.nvir;
  df.naux = given.naux;
  df.eps_occ = given.eps_occ;
  df.eps_vir = given.eps_vir;
  require_energy_gap(as_vector(df.eps_occ), as_vector(df.eps_vir), "the orbital energies of the given DF tensor (/df/eps_occ, /df/eps_vir)");
  const std::size_t count = mine.size() * given.nvir * given.naux;
  if (given.fp32) {
    df.B32 = context.budget.allocate<float>(count, "the given DF tensor /df/B");
    given.read_rows(mine.begin, mine.size(), df.B32.data());
  } else {
    df.B64 = context.budget.allocate<double>(count, "the given DF tensor /df/B");
    given.read_rows(mine.begin, mine.size(), df.B64.data());
  }
  return df;
}

Mp2Energy mp2_energy(const DFTensor& df, const std::optional<DFTensor>& df_beta, kernels::Backend backend,
                     kernels::Precision precision, const RunContext& context) {
  context.progress.begin("MP2 energy (pair blocks)");
  Mp2Energy energy;
  const double flops = (df_beta ? kernels::needed_flops_unrestricted(df.eps_occ.size(), df.nvir,
                                                                     df_beta->eps_occ.size(), df_beta->nvir, df.naux)
                                : kernels::needed_flops(df.eps_occ.size(), df.nvir, df.naux)) /
                       context.comm.size();
  std::vector<SpinBlock> blocks{block_of(df)};
  if (df_beta) blocks.push_back(block_of(*df_beta));
  const auto run = [&](auto real) {
    using Real = decltype(real);
    LargeArray<Real> copy, copy_beta;
    const Real* B = tensor_in(df, copy, context.budget);
    const Real* B_beta = df_beta ? tensor_in(*df_beta, copy_beta, context.budget) : nullptr;
    kernels::EnergyOptions options;
    options.memory_bytes = context.budget.available();  // for the loop backend's T_flat
    options.progress = [&context](double done) { context.progress.fraction(done); };
    if (backend == kernels::Backend::automatic)
      backend = kernels::resolve_automatic(precision, df.eps_occ.size(), df.nvir, options.memory_bytes);
    const EnergyWorkspace needs = energy_workspace(blocks, df.naux, backend, precision, options.memory_bytes, context.comm);
    LargeArray<std::byte> workspace = context.budget.allocate<std::byte>(needs.backend, "the MP2 energy's workspace");
    const auto visiting = context.budget.reserve(needs.visiting, "the MP2 energy's chunk of B from other ranks");
    options.workspace = workspace.data();
    options.workspace_bytes = workspace.size();
    energy.backend = backend;
    energy.distributed = df_beta ? distributed_ump2_energy(backend, B, df, B_beta, *df_beta, options, context.comm)
                                 : distributed_mp2_energy(backend, B, df, options, context.comm);
  };
  if (precision == kernels::Precision::fp32) {
    run(float{});
    energy.work.flops_fp32 = flops;
  } else {
    run(double{});
    energy.work.flops_fp64 = flops;
  }
  return energy;
}

}  // namespace dfmp2
