#include "src/run/stages.hpp"

#include <algorithm>
#include <cstdio>
#include <type_traits>

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
}

// UHF when asked for or when the molecule has unpaired electrons.
bool unrestricted(Reference reference, int multiplicity) {
  if (reference == Reference::rhf && multiplicity != 1)
    throw InputError("--reference rhf needs a closed shell (multiplicity 1), not multiplicity " +
                     std::to_string(multiplicity) + ": use --reference uhf");
  return reference == Reference::uhf || multiplicity != 1;
}

// The active orbitals' B_ia^P of one set of orbitals (RHF's, or one spin's), adding to `work`.
DFTensor transform_set(const Problem& problem, const Integrals& integrals, const SpinOrbitals& orbitals,
                       const RunContext& context, StageWork& work) {
  const int nactive = orbitals.nocc - problem.nfrozen;
  const int nvir = static_cast<int>(orbitals.C.cols()) - orbitals.nocc;
  const Eigen::MatrixXd C_occ = orbitals.C.middleCols(problem.nfrozen, nactive);
  const Eigen::MatrixXd C_vir = orbitals.C.rightCols(nvir);
  const Eigen::VectorXd eps_occ = orbitals.eps.segment(problem.nfrozen, nactive);
  const Eigen::VectorXd eps_vir = orbitals.eps.tail(nvir);
  return build_df_tensor({problem.obs, problem.aux, integrals.pairs, C_occ, C_vir, eps_occ, eps_vir}, context.budget,
                         [&context](double done) { context.progress.fraction(done); }, context.comm, work);
}

// B in precision Real: the stored array, or a converted copy drawn from the budget when the
// stored one differs.
template <typename Real>
struct TensorInPrecision {
  LargeArray<Real> converted;
  const Real* data = nullptr;
};

template <typename Real>
TensorInPrecision<Real> in_precision(const DFTensor& df, MemoryBudget& budget) {
  constexpr bool fp32 = std::is_same_v<Real, float>;
  TensorInPrecision<Real> B;
  if constexpr (fp32) B.data = df.B32.data(); else B.data = df.B64.data();
  if (!(fp32 ? df.B32.empty() : df.B64.empty())) return B;
  const auto convert = [&](const auto& stored) {
    B.converted = budget.allocate<Real>(stored.size(), fp32 ? "B_ia^P in fp32" : "B_ia^P in fp64");
    std::copy(stored.begin(), stored.end(), B.converted.begin());
  };
  if constexpr (fp32) convert(df.B64); else convert(df.B32);
  B.data = B.converted.data();
  return B;
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

  p.basis = choose(options.basis, input.basis, "");
  if (p.basis.empty()) throw InputError("no basis set given: use --basis NAME or the 'basis' attribute");
  p.df_basis = choose(options.df_basis, input.df_basis, default_df_basis(p.basis));
  if (options.scf_type == ScfType::df) p.jk_basis = choose(options.jk_basis, input.jk_basis, default_jk_basis(p.basis));
  // Every basis set is loaded and placed before any integral, so a bad one fails at once.
  p.orbital_basis = load_basis(p.basis);
  p.obs = place_on(p.orbital_basis, p.molecule);
  p.aux = place_on(load_basis(p.df_basis), p.molecule);
  // As Psi4 1.3 does, the SCF fitting set takes the orbital set's spherical/Cartesian choice.
  if (!p.jk_basis.empty()) p.jk_aux = place_on(load_basis(p.jk_basis), p.molecule, p.orbital_basis.pure);
  context.progress.message("dfmp2: " + p.name + ", nbf " + std::to_string(p.obs.nbf()) + ", naux " +
                           std::to_string(p.aux.nbf()) + ", nocc " + std::to_string(p.nocc) +
                           (p.unrestricted ? " α, " + std::to_string(p.nocc_beta) + " β (UHF)" : ""));
  return p;
}

Integrals compute_integrals(const Problem& problem, const RunContext& context) {
  Integrals ints;
  ints.pairs = significant_shell_pairs(problem.obs);
  ints.S = overlap_matrix(problem.obs);
  ints.H = core_hamiltonian(problem.obs, problem.molecule);
  if (problem.jk_aux) {
    auto df = std::make_unique<DensityFittedFock>(problem.obs, *problem.jk_aux, ints.pairs, context.budget,
                                                  context.comm, problem.unrestricted ? 2 : 1);
    ints.work = df->setup_work();
    ints.fock = std::move(df);
  } else {
    ints.fock = std::make_unique<ExactFock>(problem.obs, ints.pairs, context.comm);
  }
  return ints;
}

ScfSolution solve_scf(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                      const RunContext& context) {
  ScfSolution solution;
  if (given) {  // one Fock build for E_SCF instead of the SCF
    check_given_orbitals(*given, problem);
    solution.orbitals = *given;
    solution.e_scf = scf_energy(*given, integrals.H, *integrals.fock) + problem.e_nuc;
  } else {
    ScfOptions options = context.options.scf;
    options.on_iteration = [&context](const ScfIteration& it) { report_iteration(context.progress, it); };
    const Eigen::MatrixXd guess = context.options.guess == ScfGuess::sad
                                      ? atomic_density_guess(problem.orbital_basis, problem.molecule)
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
  Transformed t;
  context.progress.begin(orbitals.beta ? "DF transform, α (auxiliary batches)" : "DF transform (auxiliary batches)");
  t.df = transform_set(problem, integrals, orbitals, context, t.work);
  if (orbitals.beta) {
    // The three-index integrals are computed again for β: B_ia^P takes one spin at a time.
    context.progress.begin("DF transform, β (auxiliary batches)");
    t.df_beta = transform_set(problem, integrals, *orbitals.beta, context, t.work);
  }
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

Mp2Energy mp2_energy(const DFTensor& df, const std::optional<DFTensor>& df_beta, kernels::Backend backend,
                     kernels::Precision precision, const RunContext& context) {
  context.progress.begin("MP2 energy (pair blocks)");
  Mp2Energy energy;
  const double flops = (df_beta ? kernels::needed_flops_unrestricted(df.eps_occ.size(), df.nvir,
                                                                     df_beta->eps_occ.size(), df_beta->nvir, df.naux)
                                : kernels::needed_flops(df.eps_occ.size(), df.nvir, df.naux)) /
                       context.comm.size();
  const auto run = [&](auto real) {
    using Real = decltype(real);
    const TensorInPrecision<Real> B = in_precision<Real>(df, context.budget);
    std::optional<TensorInPrecision<Real>> B_beta;
    if (df_beta) B_beta = in_precision<Real>(*df_beta, context.budget);
    kernels::EnergyOptions options;
    options.memory_bytes = context.budget.available();  // for the loop backend's T_flat
    options.progress = [&context](double done) { context.progress.fraction(done); };
    if (backend == kernels::Backend::automatic)
      backend = kernels::resolve_automatic(precision, df.eps_occ.size(), df.nvir, options.memory_bytes);
    energy.backend = backend;
    energy.distributed =
        B_beta ? distributed_ump2_energy(backend, B.data, df, B_beta->data, *df_beta, options, context.comm)
               : distributed_mp2_energy(backend, B.data, df, options, context.comm);
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
