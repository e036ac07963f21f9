// Nuclear gradients: every contracted derivative integral against central differences of the
// integrals themselves (atoms displaced, integrals recomputed by libint2), the exact- and DF-SCF
// gradients against differences of dfmp2's own SCF energies (along random directions of all
// atoms: an SCF per displacement is the costly part) and against Psi4 1.3.2's analytic gradients
// (tests/reference/psi4_gradients.json, made by psi4_gradient_reference.py).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <optional>

#include <libint2.hpp>
#include <nlohmann/json.hpp>

#include "src/common/errors.hpp"
#include "src/common/matrix_view.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/common/progress.hpp"
#include "src/common/scratch.hpp"
#include "src/gradient/mp2_gradient.hpp"
#include "src/gradient/scf_gradient.hpp"
#include "src/integrals/centre_derivatives.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/four_index.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/one_electron_derivatives.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/two_electron_derivatives.hpp"
#include "src/io/xyz.hpp"
#include "src/molecule/basis.hpp"
#include "src/run/stages.hpp"
#include "tests/kernels/host_jk_device.hpp"
#include "tests/src/psi4_case.hpp"

using namespace dfmp2;

namespace {

Molecule source_molecule(const std::string& path) { return read_xyz(std::string(DFMP2_SOURCE_DIR) + "/" + path); }

// Water with each atom moved off its symmetric place, so that no gradient element is zero by
// symmetry.
Molecule distorted_water() {
  Molecule mol = source_molecule("inputs/water.xyz");
  const double shift[3][3] = {{0.05, -0.03, 0.02}, {-0.04, 0.06, 0.01}, {0.03, 0.02, -0.07}};
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t k = 0; k < 3; ++k) mol.atoms[a].r[k] += shift[a][k];
  return mol;
}

// distorted_water and a ghost hydrogen atom (the fourth) 3.5 bohr from it.
Molecule water_beside_ghost() {
  Molecule mol = distorted_water();
  mol.name = "water beside a ghost hydrogen";
  mol.atoms.push_back({1, {1.5, -2.0, 2.5}, true});
  return mol;
}

// Methyl (UHF) bent out of its plane: no gradient element zero by symmetry.
Molecule pyramidal_methyl() {
  Molecule methyl = source_molecule("inputs/open-shell/methyl.xyz");
  methyl.multiplicity = 2;
  methyl.atoms[1].r[2] += 0.2;
  methyl.atoms[2].r[0] -= 0.05;
  return methyl;
}

// An open shell of inputs/open-shell/ (UHF) with every atom moved by up to 0.05 bohr along each
// axis, so that no gradient element is zero by symmetry.
Molecule distorted_open_shell(const std::string& name, int multiplicity, unsigned seed) {
  Molecule mol = source_molecule("inputs/open-shell/" + name + ".xyz");
  mol.multiplicity = multiplicity;
  std::srand(seed);
  const Eigen::MatrixXd shift = 0.05 * Eigen::MatrixXd::Random(static_cast<Eigen::Index>(mol.atoms.size()), 3);
  for (std::size_t a = 0; a < mol.atoms.size(); ++a)
    for (std::size_t k = 0; k < 3; ++k)
      mol.atoms[a].r[k] += shift(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(k));
  return mol;
}

Eigen::MatrixXd random_symmetric(Eigen::Index n, unsigned seed) {
  std::srand(seed);
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n);
  return 0.5 * (A + A.transpose());
}

// d/dt E(R + t u) at t = 0, u a displacement of every atom (natom × 3), by the five-point stencil
// [E(−2h) − 8E(−h) + 8E(h) − E(2h)]/12h (error O(h⁴)).
double directional_difference(const Molecule& mol, const Eigen::MatrixXd& u, double h,
                              const std::function<double(const Molecule&)>& energy) {
  const auto at = [&](double t) {
    Molecule moved = mol;
    for (std::size_t a = 0; a < mol.atoms.size(); ++a)
      for (std::size_t k = 0; k < 3; ++k)
        moved.atoms[a].r[k] += t * u(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(k));
    return energy(moved);
  };
  return (at(-2 * h) - 8 * at(-h) + 8 * at(h) - at(2 * h)) / (12 * h);
}

// dE/dR_A, every element by directional_difference along its own coordinate: natom × 3.
Eigen::MatrixXd central_differences(const Molecule& mol, double h, const std::function<double(const Molecule&)>& energy) {
  Eigen::MatrixXd g(static_cast<Eigen::Index>(mol.atoms.size()), 3);
  for (Eigen::Index a = 0; a < g.rows(); ++a)
    for (Eigen::Index k = 0; k < 3; ++k) {
      Eigen::MatrixXd u = Eigen::MatrixXd::Zero(g.rows(), 3);
      u(a, k) = 1.0;
      g(a, k) = directional_difference(mol, u, h, energy);
    }
  return g;
}

// A random unit displacement of all atoms at once: the directional difference along it weighs
// every element of a gradient, for four energies instead of 12 per atom.
Eigen::MatrixXd random_direction(std::size_t natom, unsigned seed) {
  std::srand(seed);
  const Eigen::MatrixXd u = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(natom), 3);
  return u / u.norm();
}

// Every element of a within tolerance of b's; the largest difference is reported (-s shows it).
void check_agree(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double tolerance) {
  const double difference = (a - b).cwiseAbs().maxCoeff();
  INFO("max |Δ| = " << std::scientific << std::setprecision(2) << difference);
  CHECK(difference < tolerance);
}

// Gradient g along direction u against the directional difference of the energy.
void check_along(const Eigen::MatrixXd& g, const Eigen::MatrixXd& u, double difference, double tolerance) {
  check_agree(Eigen::MatrixXd::Constant(1, 1, g.cwiseProduct(u).sum()), Eigen::MatrixXd::Constant(1, 1, difference),
              tolerance);
}

// Translational invariance: the forces on all atoms sum to zero.
void check_no_net_force(const Eigen::MatrixXd& g, double tolerance) {
  const double net = g.colwise().sum().cwiseAbs().maxCoeff();
  INFO("max |Σ_A g_A| = " << std::scientific << std::setprecision(2) << net);
  CHECK(net < tolerance);
}

// Σ_Pμν Γ^P_μν (P|μν) from libint2 over every shell triplet, Γ full: [P][μ][ν].
double three_centre_sum(const libint2::BasisSet& aux, const libint2::BasisSet& obs, const std::vector<double>& gamma) {
  libint2::Engine engine = coulomb_engine(std::max(aux.max_nprim(), obs.max_nprim()), std::max(aux.max_l(), obs.max_l()),
                                          libint2::BraKet::xs_xx);
  const std::size_t nbf = obs.nbf();
  double sum = 0.0;
  for (std::size_t p = 0; p < aux.size(); ++p)
    for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
      for (std::size_t s2 = 0; s2 < obs.size(); ++s2) {
        engine.compute2<libint2::Operator::coulomb, libint2::BraKet::xs_xx, 0>(aux[p], libint2::Shell::unit(), obs[s1],
                                                                               obs[s2]);
        const double* v = engine.results()[0];
        if (v == nullptr) continue;
        for (std::size_t fp = 0, f = 0; fp < aux[p].size(); ++fp)
          for (std::size_t f1 = 0; f1 < obs[s1].size(); ++f1)
            for (std::size_t f2 = 0; f2 < obs[s2].size(); ++f2, ++f)
              sum += v[f] * gamma[((aux.shell2bf()[p] + fp) * nbf + obs.shell2bf()[s1] + f1) * nbf + obs.shell2bf()[s2] + f2];
      }
  return sum;
}

// A Γ^P_μν for three_centre_gradient, row-major [P][μ][ν] and symmetric in μν: uniform in [−1, 1)
// from std::rand seeded with `seed`, times scale(P).
std::vector<double> random_three_centre_density(std::size_t naux, std::size_t nbf, unsigned seed,
                                                const std::function<double(std::size_t P)>& scale) {
  std::vector<double> gamma(naux * nbf * nbf);
  std::srand(seed);
  for (std::size_t P = 0; P < naux; ++P)
    for (std::size_t m = 0; m < nbf; ++m)
      for (std::size_t n = 0; n <= m; ++n)
        gamma[(P * nbf + m) * nbf + n] = gamma[(P * nbf + n) * nbf + m] =
            scale(P) * (2.0 * std::rand() / RAND_MAX - 1.0);
  return gamma;
}

// Γ held whole, served in two batches of auxiliary shells as three_centre_gradient asks.
ThreeCentreDensity served_whole(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                const std::vector<double>& gamma, std::vector<ShellRange>& loaded) {
  const std::size_t nbf = obs.nbf(), half = aux.size() / 2;
  ThreeCentreDensity d;
  d.batches = {{0, half}, {half, aux.size()}};
  d.load = [&loaded](ShellRange batch) { loaded.push_back(batch); };
  d.block = [&aux, &obs, &gamma, nbf](std::size_t p, std::size_t s1, std::size_t s2, double* out) {
    for (std::size_t fp = 0; fp < aux[p].size(); ++fp)
      for (std::size_t f1 = 0; f1 < obs[s1].size(); ++f1)
        for (std::size_t f2 = 0; f2 < obs[s2].size(); ++f2)
          *out++ = gamma[((aux.shell2bf()[p] + fp) * nbf + obs.shell2bf()[s1] + f1) * nbf + obs.shell2bf()[s2] + f2];
  };
  return d;
}

// The exact two-electron energy of fixed densities, as four_centre_gradient differentiates it:
// ½ Σ_s tr(D_s G_s) (a closed shell's D_0 counts for both spins).
double two_electron_energy(const libint2::BasisSet& obs, const std::vector<Eigen::MatrixXd>& D_spins) {
  const std::vector<Eigen::MatrixXd> G = exact_two_electron_fock(obs, significant_shell_pairs(obs), D_spins);
  double e = 0.0;
  for (std::size_t s = 0; s < G.size(); ++s) e += 0.5 * D_spins[s].cwiseProduct(G[s]).sum();
  return D_spins.size() == 1 ? 2.0 * e : e;
}

struct ScfRun {
  double energy = 0.0;
  Orbitals orbitals;
  Problem problem;             // its basis sets (obs, jk_aux) and shell pairs
  Eigen::MatrixXd df_gradient;  // the DF-SCF's gradient, when asked for
  // The same with the JK set's arrays out of core: two rows in memory, one orbital per sweep block.
  Eigen::MatrixXd df_gradient_on_disk;
};

// dfmp2's stages on `mol` up to its SCF, converged tightly (d_convergence 1e-10), then
// then(problem, plan, integrals, scf, context).
template <typename Then>
auto after_scf(const Molecule& mol, RunOptions options, Then&& then) {
  RunInput input;
  input.path = "test";
  input.molecule = mol;
  options.scf.d_convergence = 1e-10;
  MemoryBudget budget(std::size_t(1) << 30);
  Progress quiet(true);
  const ScratchDirectory scratch(default_scratch_path());
  const RunContext context{options, budget, Communicator::world(), quiet, scratch};
  Problem problem = define_problem(input, context);
  const RunPlan plan = plan_run(problem, context);
  Integrals integrals = compute_integrals(problem, plan, context);
  ScfSolution scf = solve_scf(problem, integrals, std::nullopt, context);
  return then(problem, plan, integrals, scf, context);
}

// dfmp2's SCF (RHF or UHF as the multiplicity says) on `mol`: exact, or density-fitted with the
// JK set `jk_basis`.
// With df_gradient, the DF-SCF gradient too, from the SCF's own tensor while it lives.
ScfRun run_scf(const Molecule& mol, const std::string& basis, ScfType type, const std::string& jk_basis = "",
               bool df_gradient = false) {
  RunOptions options;
  options.basis = basis;
  if (!jk_basis.empty()) options.jk_basis = jk_basis;
  options.scf_type = type;
  return after_scf(mol, options,
                   [&](Problem& problem, const RunPlan&, Integrals& integrals, ScfSolution& scf,
                       const RunContext& context) {
                     Eigen::MatrixXd gradient, on_disk;
                     const auto df_scf_gradient = [&](const SeparableTermLayout& layout) {
                       return density_fitted_scf_gradient(
                           problem.obs, *problem.jk_aux, problem.pairs,
                           *integrals.fock->fitted_factors_for_derivatives(), problem.molecule, scf.orbitals, layout,
                           context.budget, &context.scratch, context.comm, &problem.orbital_basis);
                     };
                     if (df_gradient) {
                       gradient = df_scf_gradient({std::size_t(problem.jk_aux->nbf())});
                       on_disk = df_scf_gradient({2, 0});
                     }
                     return ScfRun{scf.e_scf, std::move(scf.orbitals), std::move(problem), std::move(gradient),
                                   std::move(on_disk)};
                   });
}

ScfRun exact_scf(const Molecule& mol, const std::string& basis) { return run_scf(mol, basis, ScfType::exact); }
ScfRun df_scf(const Molecule& mol, const std::string& basis, const std::string& jk_basis, bool gradient = false) {
  return run_scf(mol, basis, ScfType::df, jk_basis, gradient);
}

// Psi4's records of one scf_type (tests/reference/psi4_gradients.json).
std::vector<nlohmann::json> psi4_gradient_references(const std::string& scf_type) {
  std::ifstream in(std::string(DFMP2_SOURCE_DIR) + "/tests/reference/psi4_gradients.json");
  std::vector<nlohmann::json> chosen;
  for (const nlohmann::json& ref : nlohmann::json::parse(in))
    if (ref["scf_type"] == scf_type) chosen.push_back(ref);
  return chosen;
}

Molecule reference_molecule(const nlohmann::json& ref) {
  Molecule mol = source_molecule(ref["xyz"].get<std::string>());
  mol.charge = ref["charge"].get<int>();
  mol.multiplicity = ref["multiplicity"].get<int>();
  return mol;
}

// dfmp2's DF-SCF energy and gradient against the Psi4 records named: ≤ 1e-9 Eh, every gradient
// element within `tolerance` Eh/bohr.
void check_df_against_psi4(const std::vector<std::string>& names, double tolerance) {
  std::size_t compared = 0;
  for (const nlohmann::json& ref : psi4_gradient_references("df")) {
    const std::string name = ref["name"].get<std::string>();
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    INFO(name);
    const Molecule mol = reference_molecule(ref);
    const ScfRun scf = df_scf(mol, ref["basis"].get<std::string>(), ref["jk_basis"].get<std::string>(), true);
    CHECK(scf.energy == Approx(ref["e_scf"].get<double>()).margin(1e-9));
    const Eigen::MatrixXd& g = scf.df_gradient;
    check_agree(g, testing::reference_gradient(ref), tolerance);
    check_no_net_force(g, 1e-8);
    check_agree(scf.df_gradient_on_disk, g, 1e-12);
    ++compared;
  }
  CHECK(compared == names.size());
}

struct Mp2Run {
  double e_scf = 0.0;
  Mp2Gradient mp2;
  bool fp32_z_vector = false;  // the plan's
};

// A DF-MP2 gradient run's options (the energy-only runs take them too): RHF or UHF as the
// multiplicity says, unless `reference` says UHF.
RunOptions df_mp2_options(const std::string& basis, const std::string& df_basis, const std::string& jk_basis,
                          bool frozen_core, Reference reference) {
  RunOptions options;
  options.basis = basis;
  options.df_basis = df_basis;
  options.jk_basis = jk_basis;
  options.frozen_core = frozen_core;
  options.reference = reference;
  options.gradient = true;
  return options;
}

// The DF-MP2 gradient of `mol` (as df_mp2_options's arguments); fp32: the options' default use of
// fp32 (SCF and Z-vector), or none; engine: the gradient's (Mp2GradientInput's).
Mp2Run df_mp2(const Molecule& mol, const std::string& basis, const std::string& df_basis, const std::string& jk_basis,
              bool frozen_core, Reference reference = Reference::automatic, bool fp32 = true,
              kernels::ComputeEngine* engine = &kernels::cpu_engine()) {
  RunOptions options = df_mp2_options(basis, df_basis, jk_basis, frozen_core, reference);
  if (!fp32) options.scf.fp32_until_gradient = 0.0;
  return after_scf(mol, options,
                      [&](const Problem& problem, const RunPlan& plan, Integrals& integrals, const ScfSolution& scf,
                          const RunContext& context) {
                        const double z_convergence = context.options.scf.d_convergence_for(scf.orbitals.spin_count());
                        const Mp2GradientInput in{problem.obs,  problem.aux,        *problem.jk_aux,
                                                  problem.pairs, problem.molecule,  scf.orbitals,
                                                  *plan.mp2_gradient, &context.scratch, z_convergence,
                                                  context.progress, &problem.orbital_basis, engine};
                        return Mp2Run{scf.e_scf,
                                      density_fitted_mp2_gradient(in, *integrals.fock,
                                                                  context.budget, context.comm),
                                      plan.mp2_gradient->fp32_z_vector};
                      });
}

// The DF-MP2 total energy of `mol` as a run computes it (the DF transform and the energy step).
double df_mp2_energy(const Molecule& mol, const std::string& basis, const std::string& df_basis,
                     const std::string& jk_basis, bool frozen_core) {
  RunOptions options = df_mp2_options(basis, df_basis, jk_basis, frozen_core, Reference::automatic);
  options.gradient = false;  // a gradient run plans no DF transform: its energy is the gradient's
  return after_scf(mol, options,
                      [&](const Problem& problem, const RunPlan& plan, Integrals& integrals, const ScfSolution& scf,
                          const RunContext& context) {
                        integrals.fock.reset();
                        const Transformed mo = transform_to_mo(problem, plan, scf.orbitals, context);
                        const kernels::EnergyResult e = mp2_energy(mo.df, mo.df_beta, plan.mp2, context).distributed.energy;
                        return scf.e_scf + e.e_os + e.e_ss;
                      });
}

// dfmp2's DF-MP2 gradient of `mol` (cc-pVDZ / cc-pVDZ-RI / cc-pVDZ-JKFIT unless `basis` names
// another set, with its -ri and -jkfit sets) against central differences of its own DF-MP2
// energies as a run computes them, every element (h = 4e-3 bohr, five points): within
// `tolerance` Eh/bohr, the forces summing to zero within 1e-8.
void check_mp2_against_differences(const Molecule& mol, bool frozen_core, double tolerance,
                                   const std::string& basis = "cc-pvdz") {
  INFO(mol.name << ", frozen core " << frozen_core << ", " << basis);
  const std::string ri = basis + "-ri", jk = basis + "-jkfit";
  const auto energy = [&](const Molecule& m) { return df_mp2_energy(m, basis, ri, jk, frozen_core); };
  const Mp2Run run = df_mp2(mol, basis, ri, jk, frozen_core);
  CHECK(run.e_scf + run.mp2.energy.total() == Approx(energy(mol)).margin(1e-10));
  const Eigen::MatrixXd differences = central_differences(mol, 4e-3, energy);
  std::printf("%s, frozen core %d: max |g − differences| = %.2e Eh/bohr, %d Z-vector iterations\n", mol.name.c_str(),
              int(frozen_core), (run.mp2.gradient - differences).cwiseAbs().maxCoeff(), run.mp2.cphf_iterations);
  check_agree(run.mp2.gradient, differences, tolerance);
  check_no_net_force(run.mp2.gradient, 1e-8);
}

// dfmp2's DF-MP2 energy and gradient against the Psi4 records named: ≤ 1e-9 Eh, every gradient
// element within `tolerance` Eh/bohr and of the relaxed dipole within `dipole_tolerance` e·bohr;
// the forces sum to zero.
void check_mp2_against_psi4(const std::vector<std::string>& names, double tolerance, double dipole_tolerance) {
  std::ifstream in(std::string(DFMP2_SOURCE_DIR) + "/tests/reference/psi4_mp2_gradients.json");
  std::size_t compared = 0;
  for (const nlohmann::json& ref : nlohmann::json::parse(in)) {
    const std::string name = ref["name"].get<std::string>();
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    INFO(name);
    Molecule mol = source_molecule(ref["xyz"].get<std::string>());
    mol.charge = ref["charge"].get<int>();
    const Mp2Run run = df_mp2(mol, ref["basis"].get<std::string>(), ref["df_basis"].get<std::string>(),
                              ref["jk_basis"].get<std::string>(), ref["freeze_core"].get<bool>());
    CHECK(run.e_scf == Approx(ref["e_scf"].get<double>()).margin(1e-9));
    CHECK(run.e_scf + run.mp2.energy.total() == Approx(ref["e_total"].get<double>()).margin(1e-9));
    const Eigen::MatrixXd difference = run.mp2.gradient - testing::reference_gradient(ref);
    std::printf("%s: max |Δg| = %.2e Eh/bohr, max |Σ_A g_A| = %.2e, %d Z-vector iterations\n", name.c_str(),
                difference.cwiseAbs().maxCoeff(), run.mp2.gradient.colwise().sum().cwiseAbs().maxCoeff(),
                run.mp2.cphf_iterations);
    check_agree(run.mp2.gradient, testing::reference_gradient(ref), tolerance);
    check_no_net_force(run.mp2.gradient, 1e-8);
    // The relaxed dipole moment (e·bohr, about the origin), Psi4's OEProp of its relaxed density.
    for (Eigen::Index k = 0; k < 3; ++k)
      CHECK(run.mp2.dipole(k) ==
            Approx(ref["dipole"][static_cast<std::size_t>(k)].get<double>()).margin(dipole_tolerance));
    ++compared;
  }
  CHECK(compared == names.size());
}

}  // namespace

TEST_CASE("one-electron derivatives are the central differences of S, T and V (spherical to f, Cartesian d)") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  for (const char* name : {"cc-pvtz", "6-31g*"}) {
    INFO(name);
    const BasisSetData basis = load_basis(name, BasisRole::orbital);
    const libint2::BasisSet obs = place_on(basis, mol);
    const auto nbf = static_cast<Eigen::Index>(obs.nbf());
    const Eigen::MatrixXd W = random_symmetric(nbf, 1), D = random_symmetric(nbf, 2);
    const auto overlap = [&](const Molecule& m) { return W.cwiseProduct(overlap_matrix(place_on(basis, m))).sum(); };
    const auto core = [&](const Molecule& m) { return D.cwiseProduct(core_hamiltonian(place_on(basis, m), m)).sum(); };
    const Eigen::MatrixXd dS = overlap_gradient(obs, mol, W), dH = core_hamiltonian_gradient(obs, mol, D);
    check_agree(dS, central_differences(mol, 1e-3, overlap), 1e-9);
    check_agree(dH, central_differences(mol, 1e-3, core), 1e-8);
    check_no_net_force(dS, 1e-10);
    check_no_net_force(dH, 1e-10);
    CHECK(dH.cwiseAbs().minCoeff() > 1e-3);  // no element zero by symmetry
  }
}

TEST_CASE("metric and three-centre derivatives are the central differences of Σ M (P|Q) and Σ Γ (P|μν)") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  const BasisSetData orbital = load_basis("cc-pvdz", BasisRole::orbital),
                     fitting = load_basis("cc-pvdz-jkfit", BasisRole::auxiliary);
  const libint2::BasisSet obs = place_on(orbital, mol), aux = place_on(fitting, mol);
  const std::size_t nbf = obs.nbf(), naux = aux.nbf();
  const Eigen::MatrixXd M = random_symmetric(static_cast<Eigen::Index>(naux), 3);
  const auto metric = [&](const Molecule& m) { return M.cwiseProduct(coulomb_metric(place_on(fitting, m))).sum(); };
  const Eigen::MatrixXd dJ = metric_gradient(aux, mol, M);
  check_agree(dJ, central_differences(mol, 1e-3, metric), 1e-8);
  check_no_net_force(dJ, 1e-10);

  const std::vector<double> gamma = random_three_centre_density(naux, nbf, 4, [](std::size_t) { return 1.0; });
  const ShellPairs pairs = significant_shell_pairs(obs);
  std::vector<ShellRange> loaded;
  const Eigen::MatrixXd dB = three_centre_gradient(aux, obs, pairs, ThreeCentreScreening(obs, pairs), mol,
                                                   served_whole(aux, obs, gamma, loaded));
  const auto three_centre = [&](const Molecule& m) {
    return three_centre_sum(place_on(fitting, m), place_on(orbital, m), gamma);
  };
  check_agree(dB, central_differences(mol, 1e-3, three_centre), 1e-8);
  check_no_net_force(dB, 1e-10);
  REQUIRE(loaded.size() == 2);  // each batch loaded once, in order
  CHECK((loaded[0].first == 0 && loaded[0].last == loaded[1].first && loaded[1].last == aux.size()));
}

TEST_CASE("three-centre derivatives: the screening's bound holds, and the triples it skips barely move the gradient") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  const BasisSetData orbital = load_basis("cc-pvdz", BasisRole::orbital),
                     fitting = load_basis("cc-pvdz-jkfit", BasisRole::auxiliary);
  const libint2::BasisSet obs = place_on(orbital, mol), aux = place_on(fitting, mol);
  const std::vector<std::size_t> aux_atoms = shell_atoms(aux, mol), obs_atoms = shell_atoms(obs, mol);
  const libint2::Shell& unit = libint2::Shell::unit();
  libint2::Engine three = coulomb_engine(std::max(aux.max_nprim(), obs.max_nprim()),
                                         std::max(aux.max_l(), obs.max_l()), libint2::BraKet::xs_xx);
  libint2::Engine four(libint2::Operator::coulomb, obs.max_nprim(), obs.max_l() + 1);
  four.set_precision(0.0);
  // |∂(P|μν)/∂A_k| against sqrt((P|P)) derivative_norm_bound for P, μ, ν on three atoms, where
  // moving μ's atom moves μ alone: the derivative is the central difference of the integrals.
  const double h = 1e-4;
  double closest = 0.0;  // the largest derivative over its bound
  for (std::size_t p = 0; p < aux.size(); ++p) {
    const Eigen::MatrixXd PP = coulomb_metric(libint2::BasisSet(std::vector<libint2::Shell>{aux[p]}));
    const double aux_bound = std::sqrt(PP.diagonal().maxCoeff());
    for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
      for (std::size_t s2 = 0; s2 < obs.size(); ++s2) {
        const std::array<std::size_t, 3> atoms{aux_atoms[p], obs_atoms[s1], obs_atoms[s2]};
        if (atoms[0] == atoms[1] || atoms[0] == atoms[2] || atoms[1] == atoms[2]) continue;
        const double bound = aux_bound * derivative_norm_bound(four, obs[s1], CentreDerivative(obs[s1]), obs[s2]);
        const std::size_t n = aux[p].size() * obs[s1].size() * obs[s2].size();
        for (int k = 0; k < 3; ++k) {
          std::vector<double> moved[2];
          for (int side = 0; side < 2; ++side) {
            libint2::Shell shifted = obs[s1];
            std::array<double, 3> centre = shifted.O;
            centre[static_cast<std::size_t>(k)] += side == 0 ? h : -h;
            shifted.move(centre);
            three.compute2<libint2::Operator::coulomb, libint2::BraKet::xs_xx, 0>(aux[p], unit, shifted, obs[s2]);
            const double* v = three.results()[0];
            moved[side].assign(n, 0.0);
            if (v != nullptr) std::copy(v, v + n, moved[side].begin());
          }
          for (std::size_t f = 0; f < n; ++f)
            closest = std::max(closest, std::abs(moved[0][f] - moved[1][f]) / (2.0 * h) / bound);
        }
      }
  }
  std::printf("three-centre derivatives: at most %.3f of their bound\n", closest);
  CHECK(closest > 1e-3);  // the triples were visited
  CHECK(closest <= 1.0 + 1e-6);

  // Γ spread over many decades by auxiliary function, so that the screening skips triples.
  const std::size_t nbf = obs.nbf(), naux = aux.nbf();
  const std::vector<double> gamma = random_three_centre_density(
      naux, nbf, 12, [naux](std::size_t P) { return std::pow(10.0, -16.0 * double(P) / double(naux)); });
  std::vector<ShellRange> loaded;
  const ShellPairs pairs = significant_shell_pairs(obs);
  const Eigen::MatrixXd all = three_centre_gradient(aux, obs, pairs, ThreeCentreScreening(obs, pairs, 0.0), mol,
                                                    served_whole(aux, obs, gamma, loaded));
  const Eigen::MatrixXd screened = three_centre_gradient(aux, obs, pairs, ThreeCentreScreening(obs, pairs), mol,
                                                         served_whole(aux, obs, gamma, loaded));
  const double moved = (screened - all).cwiseAbs().maxCoeff();
  std::printf("three-centre derivatives: the screening moved the gradient by %.2e\n", moved);
  CHECK(moved > 0.0);  // something was skipped
  CHECK(moved < 1e-10);
  check_no_net_force(screened, 1e-10);
}

TEST_CASE("four-centre derivatives are the central differences of the exact two-electron energy (RHF, UHF)") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  const BasisSetData basis = load_basis("6-31g*", BasisRole::orbital);
  const libint2::BasisSet obs = place_on(basis, mol);
  const auto nbf = static_cast<Eigen::Index>(obs.nbf());
  const ShellPairs pairs = significant_shell_pairs(obs);
  for (const std::vector<Eigen::MatrixXd>& D_spins :
       {std::vector<Eigen::MatrixXd>{random_symmetric(nbf, 5)},
        std::vector<Eigen::MatrixXd>{random_symmetric(nbf, 6), random_symmetric(nbf, 7)}}) {
    INFO(D_spins.size() << " spin densities");
    const Eigen::MatrixXd analytic = four_centre_gradient(obs, pairs, mol, D_spins);
    const auto energy = [&](const Molecule& m) { return two_electron_energy(place_on(basis, m), D_spins); };
    check_agree(analytic, central_differences(mol, 1e-3, energy), 1e-8);
    check_no_net_force(analytic, 1e-10);
  }
}

TEST_CASE("derivatives over orbital shells above max_differentiable_l are refused, not computed wrong") {
  const Libint2Session session;
  Molecule mol;
  mol.atoms = {{1, {0.0, 0.0, 0.0}}, {1, {0.0, 0.0, 1.4}}};
  const auto l = max_differentiable_l() + 1;
  const libint2::BasisSet obs(std::vector<libint2::Shell>{
      libint2::Shell{{1.0}, {{0, false, {1.0}}}, mol.atoms[0].r}, libint2::Shell{{1.0}, {{l, true, {1.0}}}, mol.atoms[1].r}});
  const Eigen::MatrixXd D = random_symmetric(static_cast<Eigen::Index>(obs.nbf()), 11);
  CHECK_THROWS_AS(overlap_gradient(obs, mol, D), InputError);
  CHECK_THROWS_AS(core_hamiltonian_gradient(obs, mol, D), InputError);
  CHECK_THROWS_AS(four_centre_gradient(obs, significant_shell_pairs(obs), mol, {D}), InputError);
}

TEST_CASE("exact-SCF gradients are the differences of dfmp2's exact SCF energies along random directions (RHF, UHF)") {
  const Libint2Session session;
  for (const Molecule& mol : {distorted_water(), pyramidal_methyl()}) {
    INFO(mol.name);
    const ScfRun scf = exact_scf(mol, "6-31g*");
    const Eigen::MatrixXd analytic = exact_scf_gradient(scf.problem.obs, mol, scf.orbitals);
    const auto energy = [](const Molecule& m) { return exact_scf(m, "6-31g*").energy; };
    for (unsigned seed : {8u, 9u}) {
      const Eigen::MatrixXd u = random_direction(mol.atoms.size(), seed);
      check_along(analytic, u, directional_difference(mol, u, 2e-3, energy), 1e-8);
    }
    check_no_net_force(analytic, 1e-8);
  }
}

TEST_CASE("exact-SCF gradients match Psi4 1.3.2's (scf_type pk): RHF, a cation, UHF radicals, Cartesian d") {
  const Libint2Session session;
  const std::vector<nlohmann::json> references = psi4_gradient_references("pk");
  CHECK(references.size() == 5);
  for (const nlohmann::json& ref : references) {
    INFO(ref["name"].get<std::string>());
    const Molecule mol = reference_molecule(ref);
    const ScfRun scf = exact_scf(mol, ref["basis"].get<std::string>());
    CHECK(scf.energy == Approx(ref["e_scf"].get<double>()).margin(1e-9));
    const Eigen::MatrixXd g = exact_scf_gradient(scf.problem.obs, mol, scf.orbitals);
    check_agree(g, testing::reference_gradient(ref), 1e-9);
    check_no_net_force(g, 1e-8);
  }
}

// Two of the references in every run: an SCF costs seconds here, the gradient a fraction of one.
TEST_CASE("DF-SCF gradients match Psi4 1.3.2's (scf_type df): water RHF, methyl UHF, the same with the JK set's "
          "arrays on disk") {
  const Libint2Session session;
  // Measured (docs/gradients.md): max |Δg| 1.2e-10 Eh/bohr; the tolerance is 8× that.
  check_df_against_psi4({"water-cc-pvdz-df-grad", "methyl-cc-pvdz-df-grad"}, 1e-9);
}

// A ghost atom's functions move with it, so it has a gradient of its own; nothing more is
// asked here (the hidden test below compares it with differences of the energy).
TEST_CASE("a DF-SCF gradient with a ghost atom: the ghost's entry is its functions' force, the forces sum to zero") {
  const Libint2Session session;
  const Molecule mol = water_beside_ghost();
  const Eigen::MatrixXd g = df_scf(mol, "6-31g*", "cc-pvdz-jkfit", true).df_gradient;
  CHECK(g.allFinite());
  CHECK(g.row(3).norm() > 1e-6);
  check_no_net_force(g, 1e-8);
}

// The rest, by hand: build/tests/src/test_dfmp2 "[df-scf]"
TEST_CASE("DF-SCF gradients match Psi4 1.3.2's (scf_type df): a cation, diffuse functions", "[.][df-scf]") {
  const Libint2Session session;
  // Measured (docs/gradients.md): max |Δg| 7.0e-10 Eh/bohr (water aug-cc-pVDZ); the tolerance is 10× that.
  check_df_against_psi4({"ammonium-cc-pvdz-df-grad", "water-aug-cc-pvdz-df-grad"}, 7e-9);
}

// Energies of the DF-SCF are noisier than the exact SCF's by about 1e-11 Eh (the difference of
// water's grows from 5e-11 to 1e-8 as h falls from 4e-3 to 1e-3 bohr): hence the longer step.
TEST_CASE("DF-SCF gradients are the differences of dfmp2's DF-SCF energies along a random direction (RHF, UHF, "
          "a ghost atom)",
          "[.][df-scf]") {
  const Libint2Session session;
  for (const Molecule& mol : {distorted_water(), pyramidal_methyl(), water_beside_ghost()}) {
    INFO(mol.name);
    const auto energy = [](const Molecule& m) { return df_scf(m, "6-31g*", "cc-pvdz-jkfit").energy; };
    const Eigen::MatrixXd analytic = df_scf(mol, "6-31g*", "cc-pvdz-jkfit", true).df_gradient;
    const Eigen::MatrixXd u = random_direction(mol.atoms.size(), 10);
    check_along(analytic, u, directional_difference(mol, u, 4e-3, energy), 1e-8);
    check_no_net_force(analytic, 1e-8);
  }
}

// The same, element by element: 12 SCF energies per atom, too many for every run of the suite.
// By hand: build/tests/src/test_dfmp2 "[per-element]"
TEST_CASE("exact-SCF gradients are the central differences of dfmp2's exact SCF energies, element by element",
          "[.][per-element]") {
  const Libint2Session session;
  for (const char* basis : {"6-31g*", "cc-pvdz"})
    for (const Molecule& mol : {distorted_water(), pyramidal_methyl()}) {
      INFO(basis << ", " << mol.name);
      const ScfRun scf = exact_scf(mol, basis);
      const auto energy = [basis](const Molecule& m) { return exact_scf(m, basis).energy; };
      check_agree(exact_scf_gradient(scf.problem.obs, mol, scf.orbitals), central_differences(mol, 2e-3, energy), 1e-8);
    }
}

// The DF-SCF gradient likewise, by hand: build/tests/src/test_dfmp2 "[per-element]"
TEST_CASE("DF-SCF gradients are the central differences of dfmp2's DF-SCF energies, element by element",
          "[.][per-element]") {
  const Libint2Session session;
  for (const Molecule& mol : {distorted_water(), pyramidal_methyl()}) {
    INFO(mol.name);
    const auto energy = [](const Molecule& m) { return df_scf(m, "cc-pvdz", "cc-pvdz-jkfit").energy; };
    const Eigen::MatrixXd analytic = df_scf(mol, "cc-pvdz", "cc-pvdz-jkfit", true).df_gradient;
    check_agree(analytic, central_differences(mol, 2e-3, energy), 1e-8);
  }
}

TEST_CASE("DF-MP2 gradients match Psi4 1.3.2's: water, frozen core, ions, formaldehyde, hydrogen sulfide") {
  const Libint2Session session;
  // Measured (docs/gradients.md): max |Δg| 8.4e-10 Eh/bohr (formaldehyde), the dipole 3.4e-9 e·bohr
  // (aug-cc-pVDZ water); the tolerances are 10× and 9× those.
  check_mp2_against_psi4({"water-cc-pvdz-mp2-grad", "water-aug-cc-pvdz-fc-mp2-grad", "ammonium-cc-pvdz-mp2-grad",
                          "hydroxide-aug-cc-pvdz-mp2-grad", "formaldehyde-def2-svp-mp2-grad",
                          "hydrogen-sulfide-cc-pvdz-fc-mp2-grad"},
                         8e-9, 3e-8);
}

// 132 functions, frozen core; by hand: build/tests/src/test_dfmp2 "[mp2-uracil]"
TEST_CASE("DF-MP2 gradient matches Psi4 1.3.2's: uracil, frozen core", "[.][mp2-uracil]") {
  const Libint2Session session;
  // Measured: max |Δg| 4.9e-9 to 5.5e-9 Eh/bohr over runs (docs/gradients.md), the dipole 2.2e-8
  // e·bohr; the tolerances are 7× and 5× those.
  check_mp2_against_psi4({"uracil-cc-pvdz-fc-mp2-grad"}, 4e-8, 1e-7);
}

// A debugging aid, by hand: build/tests/src/test_dfmp2 "[mp2-differences]"
TEST_CASE("DF-MP2 gradients are the central differences of dfmp2's DF-MP2 energies (water, frozen core)",
          "[.][mp2-differences]") {
  const Libint2Session session;
  for (bool frozen_core : {false, true}) check_mp2_against_differences(distorted_water(), frozen_core, 1e-7);
}

// Psi4 1.3 has no UHF DF-MP2 gradient: dfmp2's own energies are the reference. Frozen core: its
// terms are the all-electron gradient's and the frozen–active ones (all electrons: the hidden case
// below, and the closed-shell case after it).
TEST_CASE("the UHF DF-MP2 gradient is the central differences of dfmp2's UHF DF-MP2 energies (amino radical, frozen "
          "core)") {
  const Libint2Session session;
  check_mp2_against_differences(distorted_open_shell("amidogen", 2, 12), true, 1e-7);
}

// PySCF computes its ECP integrals and their derivatives itself (tests/reference/
// pyscf_ecp_reference.py, the same basis files): the DF-RHF gradient of HI tilted off the axes.
TEST_CASE("the DF-RHF gradient with ECPs matches PySCF 2.14's (HI off the axes, def2-SVP)") {
  const Libint2Session session;
  std::ifstream in(std::string(DFMP2_SOURCE_DIR) + "/tests/reference/pyscf_ecp_gradients.json");
  const nlohmann::json ref = nlohmann::json::parse(in).at(0);
  Molecule hi;
  for (const auto& atom : ref["atoms"])
    hi.atoms.push_back({atomic_number(atom[0].get<std::string>()), atom[1].get<std::array<double, 3>>()});
  const ScfRun scf = df_scf(hi, ref["basis"].get<std::string>(), ref["jk_basis"].get<std::string>(), true);
  // Measured 1.6e-12 to 2.1e-12 Eh and 1.3e-11 to 2.7e-10 Eh/bohr over 38 runs (2.3e-8 and 2.8e-8
  // with libecpint's inexact unrolled shell pairs, src/integrals/ecp_shell_pair.hpp). Setting the
  // SCF's d_convergence to 1e-12 here did not narrow the gradient's run-to-run spread; its source
  // is not pinned down.
  INFO("E_SCF − PySCF's = " << scf.energy - ref["e_scf"].get<double>());
  CHECK(std::abs(scf.energy - ref["e_scf"].get<double>()) < 1e-11);
  check_agree(scf.df_gradient, testing::reference_gradient(ref), 1e-9);
  check_no_net_force(scf.df_gradient, 1e-8);
}

// Effective core potentials: libecpint's derivative integrals in the one-electron term (HI tilted
// off the axes, so that every component carries them). Measured: 2.5e-10 Eh/bohr (RHF, frozen
// core, every element); HI⁺ (UHF, all electrons) 5.1e-10 along a random direction, and 3.9e-9
// element by element (once, by hand: 2 min).
TEST_CASE("DF-MP2 gradients with ECPs are the central differences of dfmp2's energies (HI frozen core, HI+ UHF, "
          "def2-SVP)") {
  const Libint2Session session;
  Molecule hi;
  hi.name = "tilted HI";
  hi.atoms = {{53, {0.1, -0.2, 0.05}}, {1, {1.3, 1.6, 2.2}}};
  check_mp2_against_differences(hi, true, 2.5e-9, "def2-svp");
  hi.charge = 1;
  hi.multiplicity = 2;
  const auto energy = [](const Molecule& m) { return df_mp2_energy(m, "def2-svp", "def2-svp-ri", "def2-svp-jkfit", false); };
  const Mp2Run run = df_mp2(hi, "def2-svp", "def2-svp-ri", "def2-svp-jkfit", false);
  const Eigen::MatrixXd u = random_direction(hi.atoms.size(), 47);
  check_along(run.mp2.gradient, u, directional_difference(hi, u, 4e-3, energy), 5e-9);
  check_no_net_force(run.mp2.gradient, 1e-8);
}

// By hand: build/tests/src/test_dfmp2 "[ump2-differences]"
TEST_CASE("UHF DF-MP2 gradients are the central differences of dfmp2's UHF DF-MP2 energies (amino radical, triplet "
          "methylene, allyl radical)",
          "[.][ump2-differences]") {
  const Libint2Session session;
  check_mp2_against_differences(distorted_open_shell("amidogen", 2, 12), false, 1e-7);
  for (bool frozen_core : {false, true})
    check_mp2_against_differences(distorted_open_shell("methylene", 3, 13), frozen_core, 1e-7);
  check_mp2_against_differences(distorted_open_shell("allyl", 2, 14), true, 1e-7);
}

// UHF of a closed shell is RHF, spin by spin: every UHF term must reduce to its RHF counterpart.
TEST_CASE("the Z-vector solved with fp32 inner iterations gives the all-fp64 gradient (water, frozen core)") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  const Mp2Run mixed = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", true);
  const Mp2Run fp64 = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", true, Reference::automatic, false);
  REQUIRE(mixed.fp32_z_vector);
  REQUIRE_FALSE(fp64.fp32_z_vector);
  // Both to every residual element below 1e-10 (after_scf's d_convergence): a fifth of that apart.
  const double apart = (mixed.mp2.gradient - fp64.mp2.gradient).cwiseAbs().maxCoeff();
  std::printf("fp32 inner Z-vector iterations: %d iterations, the gradient %.2e from the fp64 one's (%d)\n",
              mixed.mp2.cphf_iterations, apart, fp64.mp2.cphf_iterations);
  CHECK(apart < 1e-10);
  CHECK(mixed.e_scf + mixed.mp2.energy.total() == Approx(fp64.e_scf + fp64.mp2.energy.total()).margin(1e-10));
}

TEST_CASE("the UHF DF-MP2 gradient of a closed shell (--reference uhf) is the RHF one (water, frozen core)") {
  const Libint2Session session;
  const Molecule mol = distorted_water();
  for (bool frozen_core : {false, true}) {
    INFO("frozen core " << frozen_core);
    const Mp2Run rhf = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", frozen_core);
    const Mp2Run uhf = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", frozen_core, Reference::uhf);
    CHECK(uhf.e_scf == Approx(rhf.e_scf).margin(1e-10));
    CHECK(uhf.mp2.energy.os == Approx(rhf.mp2.energy.os).margin(1e-10));
    CHECK(uhf.mp2.energy.ss == Approx(rhf.mp2.energy.ss).margin(1e-10));
    CHECK(uhf.mp2.energy.aa == Approx(0.5 * rhf.mp2.energy.ss).margin(1e-10));
    CHECK(uhf.mp2.energy.bb == Approx(uhf.mp2.energy.aa).margin(1e-10));
    std::printf("water, frozen core %d: UHF − RHF gradient max %.2e Eh/bohr, dipole %.2e e·bohr\n", int(frozen_core),
                (uhf.mp2.gradient - rhf.mp2.gradient).cwiseAbs().maxCoeff(),
                (uhf.mp2.dipole - rhf.mp2.dipole).cwiseAbs().maxCoeff());
    check_agree(uhf.mp2.gradient, rhf.mp2.gradient, 1e-9);
    check_agree(uhf.mp2.dipole, rhf.mp2.dipole, 1e-8);
  }
}

namespace {

// The CPU engine's products, counted, in the memory it is told: which engine a computation used.
class CountingEngine final : public kernels::ComputeEngine {
 public:
  explicit CountingEngine(kernels::Memory memory) : memory_(memory) {}
  kernels::Memory memory() const override { return memory_; }
  long products() const { return products_; }

 protected:
  using Op = kernels::Op;
  template <typename Real>
  using View = kernels::MatrixView<Real>;
  void run_gemm(Op a, Op b, double alpha, const View<const double>& A, const View<const double>& B, double beta,
                const View<double>& C) override {
    ++products_;
    kernels::cpu_engine().gemm(a, b, alpha, A, B, beta, C);
  }
  void run_gemm(Op a, Op b, float alpha, const View<const float>& A, const View<const float>& B, float beta,
                const View<float>& C) override {
    ++products_;
    kernels::cpu_engine().gemm(a, b, alpha, A, B, beta, C);
  }
  void run_syrk_lower(Op x, double alpha, const View<const double>& X, double beta, const View<double>& C) override {
    ++products_;
    kernels::cpu_engine().syrk_lower(x, alpha, X, beta, C);
  }
  void run_syrk_lower(Op x, float alpha, const View<const float>& X, float beta, const View<float>& C) override {
    ++products_;
    kernels::cpu_engine().syrk_lower(x, alpha, X, beta, C);
  }
  void run_symm_upper_left(double alpha, const View<const double>& A, const View<const double>& B, double beta,
                           const View<double>& C) override {
    ++products_;
    kernels::cpu_engine().symm_upper_left(alpha, A, B, beta, C);
  }
  void run_symm_upper_left(float alpha, const View<const float>& A, const View<const float>& B, float beta,
                           const View<float>& C) override {
    ++products_;
    kernels::cpu_engine().symm_upper_left(alpha, A, B, beta, C);
  }
  void run_solve_lower(kernels::Side side, Op l, double alpha, const View<const double>& L,
                       const View<double>& B) override {
    ++products_;
    kernels::cpu_engine().solve_lower(side, l, alpha, L, B);
  }
  void run_solve_lower(kernels::Side side, Op l, float alpha, const View<const float>& L,
                       const View<float>& B) override {
    ++products_;
    kernels::cpu_engine().solve_lower(side, l, alpha, L, B);
  }

 private:
  kernels::Memory memory_;
  std::atomic<long> products_{0};
};

}  // namespace

TEST_CASE("the engine's gemm on Eigen's row-major and column-major operands is Eigen's product") {
  using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using kernels::Op;
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(7, 5), B = Eigen::MatrixXd::Random(5, 4);
  const RowMajorMatrix A_rows = A, B_rows = B;
  const Eigen::MatrixXd C0 = Eigen::MatrixXd::Random(7, 4);
  const Eigen::MatrixXd expected = 0.5 * A * B - 2.0 * C0;
  Eigen::MatrixXd C = C0;
  RowMajorMatrix C_rows = C0;
  gemm(kernels::cpu_engine(), Op::none, Op::none, 0.5, A, B_rows, -2.0, C);
  gemm(kernels::cpu_engine(), Op::none, Op::none, 0.5, A_rows, B, -2.0, C_rows);
  check_agree(C, expected, 1e-14);
  check_agree(Eigen::MatrixXd(C_rows), expected, 1e-14);
  // Transposed operands, and a block of a row-major matrix as C (its rows a wider array's).
  RowMajorMatrix wide = RowMajorMatrix::Zero(6, 10);
  gemm(kernels::cpu_engine(), Op::transpose, Op::transpose, 1.0, B, A_rows, 0.0, wide.block(1, 2, 4, 7));
  check_agree(Eigen::MatrixXd(wide.block(1, 2, 4, 7)), (A * B).transpose(), 1e-14);
  check_agree(product(kernels::cpu_engine(), Op::transpose, Op::none, 3.0, A_rows, A), 3.0 * A.transpose() * A,
              1e-13);
}

TEST_CASE("the DF-MP2 gradient's products go through the engine it is given, and one not on host memory is refused "
          "(water RHF, amino radical UHF)") {
  const Libint2Session session;
  for (const Molecule& mol : {distorted_water(), distorted_open_shell("amidogen", 2, 12)}) {
    INFO("multiplicity " << mol.multiplicity);
    const Mp2Run cpu = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", true);
    CountingEngine counting(kernels::Memory::host);
    const Mp2Run counted = df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", true, Reference::automatic, true,
                                  &counting);
    std::printf("the gradient's products through the engine it was given: %ld\n", counting.products());
    CHECK(counting.products() > 0);
    // The same products, but two runs are not bitwise the same (threaded sums from the SCF on, which
    // after_scf converges to 1e-10): two runs here differed by 8.8e-12 (RHF) and up to 2.1e-10 (UHF).
    check_agree(counted.mp2.gradient, cpu.mp2.gradient, 1e-9);
    CountingEngine device(kernels::Memory::device);
    CHECK_THROWS_WITH(df_mp2(mol, "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", true, Reference::automatic, true, &device),
                      "the DF-MP2 gradient needs a compute engine on host memory");
    CHECK(device.products() == 0);
  }
}

namespace {

// Measured over 7 runs: gradients up to 1.35e-13 Eh/bohr apart (water) and 1.01e-11 (amino radical),
// as far as two CPU gradients from one SCF (up to 9.9e-12: the Z-vector's threaded sums); E_MP2
// within 5.6e-17 Eh (the loop sums its energies on the host). About 5× and 9× the largest.
constexpr double kStandInGradient = 5e-11, kStandInEnergy = 5e-16;

// The DF-MP2 gradient of `mol` (cc-pVDZ, -RI, -JKFIT) twice from one SCF: on the CPU, then with
// the amplitude loop's products and the Z-vector's on the host stand-in for the GPU
// (tests/kernels/host_jk_device.hpp) as plans for `gpu_memory` bytes of GPU memory lay them out
// (stream_z_vector: the Z-vector's in less, its rows streamed); once more on the stand-in with
// no room for held operands, every product copying its t and T; and with the amplitudes made on
// the stand-in (amplitudes_on_gpu) where their room fits.
struct StandInGradients {
  Mp2Gradient cpu, gpu, unheld;
  std::size_t most_pinned = 0, left_pinned = 0, unknown_unpins = 0;  // the stand-in's pins in `gpu`'s run
  kernels::GpuOffloadPlan plan;
  kernels::GpuResponsePlan z_vector;
  std::optional<Mp2Gradient> made_on_gpu;
};
StandInGradients gradients_with_stand_in(const Molecule& mol, bool frozen_core, std::size_t gpu_memory,
                                         bool stream_z_vector) {
  const RunOptions options =
      df_mp2_options("cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", frozen_core, Reference::automatic);
  return after_scf(mol, options, [&](const Problem& problem, const RunPlan& plan, Integrals& integrals,
                                     const ScfSolution& scf, const RunContext& context) {
    const double z_convergence = context.options.scf.d_convergence_for(scf.orbitals.spin_count());
    Mp2GradientPlan on_gpu = *plan.mp2_gradient;
    on_gpu.gpu = plan_amplitudes_on_gpu(on_gpu, gpu_memory);
    // Streamed: room for the Z-vector's kept products, but not for all its rows beside them and a batch.
    const kernels::GpuResponsePlan all_z = plan_z_vector_on_gpu(on_gpu.sets, gpu_memory);
    on_gpu.z_vector_gpu =
        stream_z_vector ? plan_z_vector_on_gpu(on_gpu.sets, all_z.caches_bytes + all_z.fixed_bytes + all_z.rows_bytes - 1)
                        : all_z;
    const auto gradient = [&](const Mp2GradientPlan& p, kernels::JKDevice* device) {
      Mp2GradientInput in{problem.obs,  problem.aux,       *problem.jk_aux, problem.pairs, problem.molecule,
                          scf.orbitals, p,                 &context.scratch, z_convergence, context.progress,
                          &problem.orbital_basis};
      in.gpu = device;
      return density_fitted_mp2_gradient(in, *integrals.fock, context.budget, context.comm);
    };
    test::HostJKDevice device(on_gpu.gpu_device_bytes());
    Mp2GradientPlan unheld = on_gpu;
    unheld.gpu->held_elements = 0;
    test::HostJKDevice unheld_device(unheld.gpu_device_bytes());
    StandInGradients out{gradient(*plan.mp2_gradient, nullptr), gradient(on_gpu, &device),
                         gradient(unheld, &unheld_device),
                         device.most_pinned_bytes(), device.pinned_bytes(), device.unknown_unpins(),
                         *on_gpu.gpu, *on_gpu.z_vector_gpu, std::nullopt};
    Mp2GradientPlan made = on_gpu;
    plan_amplitude_loop_on_gpu(made, gpu_memory, true);
    if (made.amplitudes_on_gpu) {
      test::HostJKDevice made_device(made.gpu_device_bytes());
      out.made_on_gpu = gradient(made, &made_device);
    }
    return out;
  });
}

}  // namespace

// The GPU's part through the host stand-in (its memory NaNs until written), so that the offload's
// logic — B's rows resident or streamed through the staging buffer, the plan, the loop's engine —
// and the Z-vector's responses' (the DF-SCF tensor's rows resident or streamed, the kept products
// copied back for the JK set's term) are checked here; tests/gpu/test_gpu_gradient.cpp runs the
// same on a GPU.
TEST_CASE("the DF-MP2 gradient with its amplitude loop's and Z-vector's products on the GPU's host stand-in is the "
          "CPU's (water RHF all electrons and frozen core, amino radical UHF, B resident and streamed)") {
  const Libint2Session session;
  // 1 GiB holds B beside the staging buffer; 1.6 MB does not beside its least (1.5 MiB).
  const std::size_t resident = std::size_t(1) << 30, streamed = 1'600'000;
  for (const auto& [mol, frozen_core] : {std::pair{distorted_water(), false}, std::pair{distorted_water(), true},
                                         std::pair{distorted_open_shell("amidogen", 2, 12), true}})
    for (const std::size_t gpu_memory : {resident, streamed}) {
      INFO(mol.name << ", frozen core " << frozen_core << ", GPU memory " << gpu_memory);
      const StandInGradients g = gradients_with_stand_in(mol, frozen_core, gpu_memory, gpu_memory == streamed);
      CHECK(g.plan.resident == (gpu_memory == resident));
      CHECK(g.z_vector.resident == (gpu_memory == resident));
      const double apart = (g.gpu.gradient - g.cpu.gradient).cwiseAbs().maxCoeff();
      std::printf("%s, frozen core %d, B and the Z-vector's rows %s: the stand-in's gradient %.2e Eh/bohr and E_MP2 "
                  "%.2e Eh from the CPU's, %zu bytes copied (%zu with nothing held)\n",
                  mol.name.c_str(), int(frozen_core), g.plan.resident ? "resident" : "streamed", apart,
                  std::abs(g.gpu.energy.total() - g.cpu.energy.total()), g.gpu.gpu_uploaded_bytes,
                  g.unheld.gpu_uploaded_bytes);
      CHECK(apart <= kStandInGradient);
      CHECK(std::abs(g.gpu.energy.total() - g.cpu.energy.total()) <= kStandInEnergy);
      CHECK(g.gpu.gpu_uploaded_bytes > 0);
      CHECK(g.cpu.gpu_uploaded_bytes == 0);
      // The loop's arrays copied at every block were pinned while it ran, and nothing is left pinned.
      CHECK(g.most_pinned > 0);
      CHECK(g.left_pinned == 0);
      CHECK(g.unknown_unpins == 0);
      // t and T held where there is room (always in 1 GiB; in 1.6 MB only the amino radical's, one
      // k's), copied once per block instead of by each product.
      if (gpu_memory == resident) CHECK(g.plan.held_elements > 0);
      if (g.plan.held_elements > 0) CHECK(g.gpu.gpu_uploaded_bytes < g.unheld.gpu_uploaded_bytes);
      else CHECK(g.gpu.gpu_uploaded_bytes == g.unheld.gpu_uploaded_bytes);
      CHECK((g.unheld.gradient - g.cpu.gradient).cwiseAbs().maxCoeff() <= kStandInGradient);
      // The amplitudes made on the stand-in (1 GiB holds their room; 1.6 MB does not): only B_k
      // and the orbital energies go out per block (UHF: per k), far less than t and T.
      CHECK(g.made_on_gpu.has_value() == (gpu_memory == resident));
      if (g.made_on_gpu) {
        std::printf("  amplitudes made on the stand-in: gradient %.2e Eh/bohr and E_MP2 %.2e Eh from the CPU's, %zu bytes "
                    "copied\n",
                    (g.made_on_gpu->gradient - g.cpu.gradient).cwiseAbs().maxCoeff(),
                    std::abs(g.made_on_gpu->energy.total() - g.cpu.energy.total()), g.made_on_gpu->gpu_uploaded_bytes);
        CHECK((g.made_on_gpu->gradient - g.cpu.gradient).cwiseAbs().maxCoeff() <= kStandInGradient);
        CHECK(std::abs(g.made_on_gpu->energy.total() - g.cpu.energy.total()) <= kStandInEnergy);
        CHECK(g.made_on_gpu->gpu_uploaded_bytes < g.gpu.gpu_uploaded_bytes);
      }
    }
}

// A spin without electrons (triplet H2: two α, no β): the open-shell loop's opposite-spin pairs
// and β's orbitals k are empty, on the stand-in too, with t held and with the amplitudes made there.
TEST_CASE("the UHF DF-MP2 gradient on the GPU's host stand-in where one spin has no electrons (triplet H2)") {
  const Libint2Session session;
  Molecule mol;
  mol.name = "H2 triplet";
  mol.atoms.push_back({1, {0.0, 0.0, 0.0}, false});
  mol.atoms.push_back({1, {0.1, 0.2, 1.6}, false});
  mol.multiplicity = 3;
  const StandInGradients g = gradients_with_stand_in(mol, false, std::size_t(1) << 30, false);
  REQUIRE(g.made_on_gpu.has_value());
  CHECK(g.cpu.energy.total() < 0.0);  // E_SS of the two α electrons
  for (const Mp2Gradient* on_gpu : {&g.gpu, &*g.made_on_gpu}) {
    CHECK((on_gpu->gradient - g.cpu.gradient).cwiseAbs().maxCoeff() <= kStandInGradient);
    CHECK(std::abs(on_gpu->energy.total() - g.cpu.energy.total()) <= kStandInEnergy);
  }
}
