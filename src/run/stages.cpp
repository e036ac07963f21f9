#include "src/run/stages.hpp"

#include <algorithm>
#include <cstdio>
#include <tuple>
#include <type_traits>

#include <omp.h>

#include "src/common/errors.hpp"
#include "src/integrals/one_electron.hpp"
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

void check_given_orbitals(const Orbitals& orbitals, std::size_t nbf, int nocc) {
  if (static_cast<std::size_t>(orbitals.C.rows()) != nbf)
    throw InputError("given orbitals have " + std::to_string(orbitals.C.rows()) + " rows but the basis has " +
                     std::to_string(nbf) + " functions");
  if (orbitals.nocc != nocc)
    throw InputError("given orbitals have nocc = " + std::to_string(orbitals.nocc) + " but the molecule has " +
                     std::to_string(nocc) + " doubly occupied orbitals");
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
  validate(p.molecule);
  p.name = p.molecule.name.empty() ? formula(p.molecule) : p.molecule.name;
  p.e_nuc = nuclear_repulsion(p.molecule);
  p.nocc = electron_count(p.molecule) / 2;
  p.nfrozen = options.frozen_core ? frozen_core_orbitals(p.molecule) : 0;
  if (p.nfrozen >= p.nocc) throw InputError("frozen core leaves no active occupied orbital");

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
  context.progress.message("dfmp2: " + p.name + ", nbf " + std::to_string(p.obs.nbf()) + ", naux " +
                           std::to_string(p.aux.nbf()) + ", nocc " + std::to_string(p.nocc));
  return p;
}

namespace {

// The most the energy step holds: B in the precision asked for (and the stored one when they
// differ), the backend's workspace and, over MPI, a visiting chunk of B.
std::size_t energy_peak_bytes(std::size_t nocc, std::size_t nvir, std::size_t naux, bool stored_fp32,
                              const RunContext& context) {
  const kernels::Precision precision = context.options.precision;
  const std::size_t elem = precision == kernels::Precision::fp32 ? sizeof(float) : sizeof(double);
  const std::size_t stored = stored_fp32 ? sizeof(float) : sizeof(double);
  const std::size_t mine = share_of(nocc, context.comm.rank(), context.comm.size()).size() * nvir * naux;
  return mine * (stored + (stored == elem ? 0 : elem)) +
         kernels::energy_workspace_bytes(context.options.backend, precision, mine / (nvir * naux), nvir,
                                         omp_get_max_threads(), 0) +
         visiting_chunk_bytes(nocc, nvir, naux, elem, context.comm);
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
  const std::size_t nbf = problem.obs.nbf(), nactive = problem.nocc - problem.nfrozen;
  const std::size_t nvir = nbf - problem.nocc;  // at most: linear dependencies only remove virtuals
  const std::size_t scf = rhf_working_bytes(nbf, context.options.scf) +
                          (problem.jk_aux ? DensityFittedFock::peak_bytes(problem.obs, *problem.jk_aux, context.comm)
                                          : ExactFock::peak_bytes(nbf));
  const std::size_t transform = df_transform_peak_bytes(problem.obs, problem.aux, nactive, nvir, context.comm);
  const std::size_t energy = energy_peak_bytes(nactive, nvir, problem.aux.nbf(), false, context);
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
                                                  context.comm);
    ints.work = df->setup_work();
    ints.fock = std::move(df);
  } else {
    ints.exact_fock_memory = context.budget.reserve(ExactFock::peak_bytes(problem.obs.nbf()), "the exact Fock builds");
    ints.fock = std::make_unique<ExactFock>(problem.obs, ints.pairs, context.comm);
  }
  return ints;
}

ScfSolution solve_scf(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                      const RunContext& context) {
  ScfSolution solution;
  const auto matrices = context.budget.reserve(rhf_working_bytes(problem.obs.nbf(), context.options.scf), "the SCF's matrices");
  if (given) {  // one Fock build for E_SCF instead of the SCF
    check_given_orbitals(*given, problem.obs.nbf(), problem.nocc);
    solution.orbitals = *given;
    const Eigen::MatrixXd C_occ = given->C.leftCols(problem.nocc);
    const Eigen::MatrixXd D = C_occ * C_occ.transpose();
    const Eigen::MatrixXd G = integrals.fock->build(C_occ, kernels::Precision::fp64);
    solution.e_scf = D.cwiseProduct(2.0 * integrals.H + G).sum() + problem.e_nuc;
  } else {
    ScfOptions options = context.options.scf;
    options.on_iteration = [&context](const ScfIteration& it) { report_iteration(context.progress, it); };
    const Eigen::MatrixXd guess = context.options.guess == ScfGuess::sad
                                      ? atomic_density_guess(problem.orbital_basis, problem.molecule)
                                      : Eigen::MatrixXd();
    ScfResult scf = run_rhf(integrals.S, integrals.H, problem.e_nuc, problem.nocc, *integrals.fock, options, guess);
    solution.e_scf = scf.energy;
    solution.iterations = std::move(scf.iterations);
    solution.orbitals = std::move(scf.orbitals);
  }
  solution.work = integrals.fock->work();
  // Every rank must transform with the very same orbitals (eigenvector signs included).
  Orbitals& orbitals = solution.orbitals;
  context.comm.broadcast(orbitals.C.data(), static_cast<std::size_t>(orbitals.C.size()), 0);
  context.comm.broadcast(orbitals.eps.data(), static_cast<std::size_t>(orbitals.eps.size()), 0);
  return solution;
}

Transformed transform_to_mo(const Problem& problem, const Integrals& integrals, const Orbitals& orbitals,
                            const RunContext& context) {
  const int nactive = problem.nocc - problem.nfrozen;
  const int nvir = static_cast<int>(orbitals.C.cols()) - problem.nocc;
  const Eigen::MatrixXd C_occ = orbitals.C.middleCols(problem.nfrozen, nactive);
  const Eigen::MatrixXd C_vir = orbitals.C.rightCols(nvir);
  const Eigen::VectorXd eps_occ = orbitals.eps.segment(problem.nfrozen, nactive);
  const Eigen::VectorXd eps_vir = orbitals.eps.tail(nvir);
  context.progress.begin("DF transform (auxiliary batches)");
  DFTransformStats stats;
  Transformed t;
  t.df = build_df_tensor({problem.obs, problem.aux, integrals.pairs, C_occ, C_vir, eps_occ, eps_vir}, context.budget,
                         [&context](double done) { context.progress.fraction(done); }, context.comm, stats);
  t.work = stats.work;
  t.batches = stats.batches;
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

Mp2Energy mp2_energy(const DFTensor& df, kernels::Backend backend, kernels::Precision precision,
                     const RunContext& context) {
  context.progress.begin("MP2 energy (pair blocks)");
  Mp2Energy energy;
  const double flops = kernels::needed_flops(df.eps_occ.size(), df.nvir, df.naux) / context.comm.size();
  const auto run = [&](const auto* B) {
    using Real = std::remove_cv_t<std::remove_pointer_t<decltype(B)>>;
    kernels::EnergyOptions options;
    options.memory_bytes = context.budget.available();  // for the loop backend's T_flat
    options.progress = [&context](double done) { context.progress.fraction(done); };
    if (backend == kernels::Backend::automatic)
      backend = kernels::resolve_automatic(precision, df.eps_occ.size(), df.nvir, options.memory_bytes);
    const auto workspace = context.budget.reserve(
        kernels::energy_workspace_bytes(backend, precision, df.nocc, df.nvir, omp_get_max_threads(), options.memory_bytes) +
            visiting_chunk_bytes(df.eps_occ.size(), df.nvir, df.naux, sizeof(Real), context.comm),
        "the MP2 energy's workspace");
    energy.backend = backend;
    energy.distributed = distributed_mp2_energy(backend, B, df, options, context.comm);
  };
  if (precision == kernels::Precision::fp32) {
    LargeArray<float> copy;
    run(tensor_in(df, copy, context.budget));
    energy.work.flops_fp32 = flops;
  } else {
    LargeArray<double> copy;
    run(tensor_in(df, copy, context.budget));
    energy.work.flops_fp64 = flops;
  }
  return energy;
}

}  // namespace dfmp2
