// The SCF: the SAD guess and the spherically averaged atoms it is made of, and the DF J/K kernel.
#include <catch2/catch.hpp>

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "kernels/packed_jk.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/io/xyz.hpp"
#include "src/molecule/basis.hpp"
#include "src/run/driver.hpp"
#include "src/scf/df_fock.hpp"
#include "src/scf/exact_fock.hpp"
#include "src/scf/sad_guess.hpp"
#include "tests/src/skip.hpp"

using namespace dfmp2;

namespace {

Molecule input_molecule(const std::string& name) {
  return read_xyz(std::string(DFMP2_SOURCE_DIR) + "/inputs/" + name + ".xyz");
}

}  // namespace

TEST_CASE("SAD guess: each atom's block holds that neutral atom's electrons, a ghost atom's none") {
  Molecule mol = input_molecule("formaldehyde");
  mol.atoms.back().ghost = true;
  const BasisSetData basis = load_basis("cc-pvdz", BasisRole::orbital);
  Libint2Session session;
  const libint2::BasisSet obs = place_on(basis, mol);
  MemoryBudget budget(std::size_t(1) << 30);
  const Eigen::MatrixXd F = atomic_density_guess(basis, mol, budget);
  REQUIRE(F.rows() == static_cast<Eigen::Index>(obs.nbf()));
  const Eigen::MatrixXd DS = F * F.transpose() * overlap_matrix(obs);
  // Atoms' functions are contiguous, in atom order; D = F Fᵀ counts electron pairs.
  Eigen::Index first = 0;
  for (const Atom& atom : mol.atoms) {
    Molecule lone;
    lone.atoms = {atom};
    const Eigen::Index n = static_cast<Eigen::Index>(place_on(basis, lone).nbf());
    CHECK(DS.block(first, first, n, n).trace() == Approx(atom.ghost ? 0.0 : 0.5 * atom.Z).epsilon(1e-8).margin(1e-14));
    first += n;
  }
  CHECK(first == DS.rows());
}

TEST_CASE("SAD guess: an open-shell atom is spherical (carbon's 2p pair spread over px, py, pz)") {
  Molecule carbon;
  carbon.atoms = {{6, {0.0, 0.0, 0.0}}};
  const BasisSetData basis = load_basis("cc-pvdz", BasisRole::orbital);
  Libint2Session session;
  const libint2::BasisSet obs = place_on(basis, carbon);
  MemoryBudget budget(std::size_t(1) << 30);
  const Eigen::MatrixXd F = atomic_density_guess(basis, carbon, budget);
  const Eigen::MatrixXd D = F * F.transpose();
  int p_shells = 0;
  for (std::size_t s = 0; s < obs.size(); ++s) {
    if (obs[s].contr[0].l != 1) continue;
    ++p_shells;
    const std::size_t p = first_function(obs, s);
    CHECK(D(p, p) > 0.0);
    CHECK(D(p + 1, p + 1) == Approx(D(p, p)).epsilon(1e-6));
    CHECK(D(p + 2, p + 2) == Approx(D(p, p)).epsilon(1e-6));
    CHECK(std::abs(D(p, p + 1)) < 1e-8);
  }
  CHECK(p_shells == 2);
}

TEST_CASE("SAD and core-Hamiltonian guesses converge to the same RHF energy") {
  RunInput input;
  input.path = std::string(DFMP2_SOURCE_DIR) + "/inputs/water.xyz";
  input.molecule = read_xyz(input.path);
  RunOptions options;
  options.basis = "cc-pvdz";
  Progress quiet(true);
  options.guess = ScfGuess::core;
  const RunResult core = run(input, options, quiet);
  options.guess = ScfGuess::sad;
  const RunResult sad = run(input, options, quiet);
  CHECK(sad.e_scf == Approx(core.e_scf).margin(1e-9));
  CHECK(sad.e_corr == Approx(core.e_corr).margin(1e-9));
  // The guess is the closer start: its first energy is nearer the converged one.
  CHECK(std::abs(sad.scf_iterations.front().energy - sad.e_scf) <
        std::abs(core.scf_iterations.front().energy - core.e_scf));
}

namespace {

// Water in cc-pVDZ: its orbital set and shell pairs.
struct WaterInCcPvdz {
  Libint2Session session;
  Molecule molecule = input_molecule("water");
  libint2::BasisSet obs = place_on(load_basis("cc-pvdz", BasisRole::orbital), molecule);
  ShellPairs pairs = significant_shell_pairs(obs);
  Communicator this_process;
  Eigen::Index nbf() const { return static_cast<Eigen::Index>(obs.nbf()); }
};

}  // namespace

TEST_CASE("exact Fock builds from stored quartets equal the direct, incremental ones") {
  WaterInCcPvdz water;
  MemoryBudget roomy(std::size_t(1) << 30);
  MemoryBudget builds(std::size_t(1) << 30);
  ExactFock stored(water.obs, water.pairs, water.this_process, roomy, 1, true),
      direct(water.obs, water.pairs, water.this_process, builds, 1, false);
  const Eigen::Index nbf = water.nbf();
  Eigen::MatrixXd factor = Eigen::MatrixXd::Random(nbf, 5);
  for (int build = 0; build < 4; ++build) {  // a density that changes a little each time, as an SCF's
    INFO("build " << build);
    factor += 1e-3 * Eigen::MatrixXd::Random(nbf, 5);
    const FactorPair density[1] = {FactorPair::symmetric(factor)};
    const Eigen::MatrixXd G_stored = stored.fock(density, kernels::Precision::fp64)[0];
    const Eigen::MatrixXd G_direct = direct.fock(density, kernels::Precision::fp64)[0];
    CHECK((G_stored - G_direct).norm() <= 1e-10 * G_stored.norm());
  }
  CHECK(roomy.peak_drawn() > builds.peak_drawn());  // the quartets were stored there
}

namespace {

// J and K of a symmetric and a non-symmetric density from nq random rows in `layout`, fp64 and
// fp32, against the dense products of the unpacked squares.
void check_jk_equals_dense_products(const kernels::BlockPackedLayout& layout, std::size_t nq) {
  const auto n = static_cast<Eigen::Index>(layout.n());
  const Eigen::MatrixXd rows = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(layout.size()), Eigen::Index(nq));
  const Eigen::MatrixXd L_sym = Eigen::MatrixXd::Random(n, 7), L = Eigen::MatrixXd::Random(n, 5),
                        R = Eigen::MatrixXd::Random(n, 5);
  const kernels::DensityFactors densities[2] = {{L_sym.data(), nullptr, 7}, {L.data(), R.data(), 5}};
  const Eigen::MatrixXd D[2] = {L_sym * L_sym.transpose(), L * R.transpose()};
  Eigen::MatrixXd J_expected[2], K_expected[2];
  for (int s = 0; s < 2; ++s) J_expected[s] = K_expected[s] = Eigen::MatrixXd::Zero(n, n);
  Eigen::MatrixXd B(n, n);
  for (Eigen::Index q = 0; q < Eigen::Index(nq); ++q) {
    kernels::unpack_symmetric(layout, rows.col(q).data(), B.data());
    for (int s = 0; s < 2; ++s) {
      J_expected[s] += B.cwiseProduct(D[s]).sum() * B;
      K_expected[s] += B * D[s] * B;
    }
  }
  for (const kernels::Precision precision : {kernels::Precision::fp64, kernels::Precision::fp32}) {
    INFO((precision == kernels::Precision::fp64 ? "fp64" : "fp32"));
    const double tolerance = precision == kernels::Precision::fp64 ? 1e-12 : 1e-5;
    kernels::PackedJK jk(layout, 2);
    Eigen::MatrixXd J[2] = {Eigen::MatrixXd(n, n), Eigen::MatrixXd(n, n)}, K[2] = {J[0], J[1]};
    double* J_data[2] = {J[0].data(), J[1].data()};
    double* K_data[2] = {K[0].data(), K[1].data()};
    jk.begin(densities, precision);
    jk.add(rows.data(), nq);
    jk.finish(J_data, K_data);
    for (int s = 0; s < 2; ++s) {
      CHECK((J[s] - J_expected[s]).cwiseAbs().maxCoeff() <= 1e-12 * J_expected[s].cwiseAbs().maxCoeff());
      CHECK((K[s] - K_expected[s]).cwiseAbs().maxCoeff() <= tolerance * K_expected[s].cwiseAbs().maxCoeff());
    }
  }
}

// 40 row blocks of 13 functions, blocks stored within 6 of the diagonal: a row group's
// significant columns are the 13 or 14 blocks around it (some zero in some of its rows), under
// 40 % of the square, so X^Q = B^Q L gathers those and skips the rest.
kernels::BlockPackedLayout banded_layout() {
  constexpr std::size_t kBlock = 13, kBlocks = 40;
  std::vector<std::size_t> starts;
  std::vector<std::pair<std::size_t, std::size_t>> stored;
  for (std::size_t r = 0; r < kBlocks; ++r) {
    starts.push_back(r * kBlock);
    for (std::size_t c = r > 6 ? r - 6 : 0; c <= r; ++c) stored.emplace_back(r, c);
  }
  return kernels::BlockPackedLayout(starts, kBlock * kBlocks, stored);
}

}  // namespace

TEST_CASE("DF J/K from block-packed factors of a banded screening, gathered by row group, equal the dense products") {
  const kernels::BlockPackedLayout layout = banded_layout();
  const std::size_t n = layout.n();
  const kernels::ProductExtent extent = kernels::PackedJK::product_extent(layout);
  REQUIRE(extent.most_columns > 0);  // the groups, not one SYMM
  CHECK(extent.multiplied < n * n * 2 / 5);
  check_jk_equals_dense_products(layout, 12);
}

TEST_CASE("DF J/K from the Schwarz-screened layout of an alkane (C20H42, cc-pVDZ) equal the dense products") {
  // Shells of 1, 3 and 5 functions, stored pairs of a real screening: the row groups cover under
  // half of the square.
  Libint2Session session;
  const libint2::BasisSet obs = place_on(load_basis("cc-pvdz", BasisRole::orbital), input_molecule("scale/c20h42"));
  const ShellPairs pairs = significant_shell_pairs(obs);
  const kernels::ProductExtent extent = kernels::PackedJK::product_extent(pairs.layout);
  REQUIRE(extent.most_columns > 0);
  CHECK(extent.multiplied < std::size_t(obs.nbf() * obs.nbf()) / 2);
  check_jk_equals_dense_products(pairs.layout, 6);
}

TEST_CASE("DF J/K: the heap its builds draw, one column up to the most, stays within the workspace budgeted") {
#if defined(__SANITIZE_ADDRESS__)
  report_skipped("AddressSanitizer's allocator keeps no glibc heap statistics: the heap is not measured");
#else
  // The budget is set before the factors are known; few columns mean more rows of B^Q per
  // batch, and the threads keep their buffers between builds: a build of one column, then one of
  // two densities with 17 columns in all (7, and 5 left and 5 right), budgeted for the latter.
  const kernels::BlockPackedLayout layout = banded_layout();
  const auto n = static_cast<Eigen::Index>(layout.n());
  const Eigen::MatrixXd rows = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(layout.size()), 300);
  const Eigen::MatrixXd one = Eigen::MatrixXd::Random(n, 1), L_sym = Eigen::MatrixXd::Random(n, 7),
                        L = Eigen::MatrixXd::Random(n, 5), R = Eigen::MatrixXd::Random(n, 5);
  const kernels::DensityFactors guess[1] = {{one.data(), nullptr, 1}};
  const kernels::DensityFactors iteration[2] = {{L_sym.data(), nullptr, 7}, {L.data(), R.data(), 5}};
  Eigen::MatrixXd J[2] = {Eigen::MatrixXd(n, n), Eigen::MatrixXd(n, n)}, K[2] = {J[0], J[1]};
  double* J_data[2] = {J[0].data(), J[1].data()};
  double* K_data[2] = {K[0].data(), K[1].data()};
  const auto heap = [] { return mallinfo2().uordblks + mallinfo2().hblkhd; };
  for (const kernels::Precision precision : {kernels::Precision::fp64, kernels::Precision::fp32}) {
    INFO((precision == kernels::Precision::fp64 ? "fp64" : "fp32"));
#pragma omp parallel num_threads(2)
    {}  // the OpenMP runtime's own allocations before the heap is measured
    const std::size_t before = heap();
    std::size_t most = 0;
    kernels::PackedJK jk(layout, 2);
    const std::size_t budgeted = kernels::PackedJK::workspace_bytes(jk.shape(iteration), 2);
    for (const std::span<const kernels::DensityFactors> densities :
         {std::span<const kernels::DensityFactors>(guess), std::span<const kernels::DensityFactors>(iteration)}) {
      jk.begin(densities, precision);
      jk.add(rows.data(), std::size_t(rows.cols()));
      most = std::max(most, heap() - before);
      jk.finish(J_data, K_data);
    }
    CHECK(most <= budgeted);
  }
#endif
}

namespace {

// With a density-fitted Fock builder over cc-pVDZ-JKFIT, its factors in memory.
struct DensityFittedWater : WaterInCcPvdz {
  libint2::BasisSet aux = place_on(load_basis("cc-pvdz-jkfit", BasisRole::auxiliary), molecule);
  MemoryBudget budget{std::size_t(1) << 30};
  DensityFittedScfPlan plan = plan_density_fitted_scf(obs, aux, pairs, 2, {}, std::size_t(1) << 30, this_process);
  DensityFittedFock fock{obs, aux, pairs, plan, budget, nullptr, this_process, {}};
};

// G_s = w Σ_t J(D_t) − K(D_s), w = 2 / sets, from the definitions over the builder's own factors
// B^Q (unpacked): J(D) = Σ_Q tr(B^Q D) B^Q, K(D) = Σ_Q B^Q D B^Q.
std::vector<Eigen::MatrixXd> fock_from_fitted_factors(DensityFittedWater& water, const std::vector<Eigen::MatrixXd>& D) {
  const Eigen::Index n = water.nbf();
  const kernels::BlockPackedLayout& layout = water.pairs.layout;
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(n, n), B(n, n);
  std::vector<Eigen::MatrixXd> G(D.size(), Eigen::MatrixXd::Zero(n, n));  // −K_s first
  water.fock.fitted_factors_for_derivatives()->for_each_block([&](std::size_t, std::size_t count, const double* rows) {
    for (std::size_t q = 0; q < count; ++q) {
      kernels::unpack_symmetric(layout, rows + q * layout.size(), B.data());
      for (std::size_t s = 0; s < D.size(); ++s) {
        J += B.cwiseProduct(D[s]).sum() * B;
        G[s] -= B * D[s] * B;
      }
    }
  });
  for (Eigen::MatrixXd& G_s : G) G_s += (2.0 / double(D.size())) * J;
  return G;
}

double largest_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) { return (a - b).cwiseAbs().maxCoeff(); }

// Tolerances relative to the largest element, about 10× the differences measured (random factors,
// over several runs): fp64 builds against each other or the definitions up to 3.1e-15; fp32 (K's
// products, or the whole response, in single precision) up to 6.7e-7.
constexpr double kFp64Agreement = 3e-14, kFp32Agreement = 5e-6;

}  // namespace

TEST_CASE("the DF Fock builder's G of factor pairs, symmetric or not, is w Σ_t J(D_t) − K(D_s) of D = L Rᵀ") {
  DensityFittedWater water;
  const Eigen::Index n = water.nbf();
  const Eigen::MatrixXd F = Eigen::MatrixXd::Random(n, 5), L = Eigen::MatrixXd::Random(n, 4),
                        R = Eigen::MatrixXd::Random(n, 4);
  const FactorPair general{L, R};
  // A closed shell's one set (G = 2J − K), and UHF's two sets (G_s = J(D_α + D_β) − K(D_s)).
  for (const std::vector<FactorPair>& densities :
       {std::vector<FactorPair>{general}, std::vector<FactorPair>{FactorPair::symmetric(F), general}}) {
    INFO(densities.size() << " set(s)");
    std::vector<Eigen::MatrixXd> D;
    for (const FactorPair& d : densities) D.push_back(d.left * d.right.transpose());
    const std::vector<Eigen::MatrixXd> expected = fock_from_fitted_factors(water, D);
    const std::vector<Eigen::MatrixXd> G = water.fock.fock(densities, kernels::Precision::fp64);
    const std::vector<Eigen::MatrixXd> G_fp32 = water.fock.fock(densities, kernels::Precision::fp32);
    REQUIRE(G.size() == D.size());
    for (std::size_t s = 0; s < D.size(); ++s) {
      const double size = expected[s].cwiseAbs().maxCoeff();
      CHECK(largest_difference(G[s], expected[s]) <= kFp64Agreement * size);
      CHECK(largest_difference(G_fp32[s], expected[s]) <= kFp32Agreement * size);
    }
    // L Rᵀ's K is not symmetric: left and right taken the other way round would give its transpose,
    // far outside the tolerance.
    CHECK(largest_difference(G.back(), G.back().transpose()) > 0.01 * expected.back().cwiseAbs().maxCoeff());
  }
  const FactorPair mismatched[1] = {{F, L}};
  CHECK_THROWS_WITH(water.fock.fock(mismatched, kernels::Precision::fp64), Catch::Contains("factors 24×5 and 24×4"));
}

TEST_CASE("the DF Fock builder's occupied response, from its kept B^Q C_o, equals its builds of the pairs [L C][C L]ᵀ") {
  DensityFittedWater water;
  const Eigen::Index n = water.nbf();
  const std::vector<Eigen::MatrixXd> C_both = {Eigen::MatrixXd::Random(n, 5), Eigen::MatrixXd::Random(n, 3)},
                                     L_both = {Eigen::MatrixXd::Random(n, 5), Eigen::MatrixXd::Random(n, 3)};
  std::vector<Eigen::MatrixXd> D_both;
  for (int s = 0; s < 2; ++s) {
    const Eigen::MatrixXd A = Eigen::MatrixXd::Random(n, n);
    D_both.push_back(A + A.transpose());
  }
  for (const std::size_t sets : {1, 2}) {  // RHF's one set, UHF's α and β
    INFO(sets << " set(s)");
    const std::vector<Eigen::MatrixXd> C(C_both.begin(), C_both.begin() + sets), L(L_both.begin(), L_both.begin() + sets),
        D(D_both.begin(), D_both.begin() + sets);
    const std::unique_ptr<FockResponse> fitted = water.fock.occupied_response(C, water.budget, true, nullptr);
    const std::unique_ptr<FockResponse> from_builds = water.fock.FockBuilder::occupied_response(C, water.budget, true, nullptr);
    const std::vector<Eigen::MatrixXd> expected = from_builds->of_changes(L, kernels::Precision::fp64),
                                       expected_symmetric = from_builds->of_symmetric(D),
                                       changes = fitted->of_changes(L, kernels::Precision::fp64),
                                       changes_fp32 = fitted->of_changes(L, kernels::Precision::fp32),
                                       symmetric = fitted->of_symmetric(D);
    for (std::size_t s = 0; s < sets; ++s) {
      const double size = expected[s].cwiseAbs().maxCoeff();
      CHECK(largest_difference(changes[s], expected[s]) <= kFp64Agreement * size);
      CHECK(largest_difference(changes_fp32[s], expected[s]) <= kFp32Agreement * size);
      CHECK(largest_difference(symmetric[s], expected_symmetric[s]) <=
            kFp64Agreement * expected_symmetric[s].cwiseAbs().maxCoeff());
    }
    CHECK(fitted->work().flops_fp32 > 0.0);
    CHECK(from_builds->work().flops_fp64 > 0.0);
    CHECK(fitted->release_fitted_occupied_products().size() ==
          water.plan.tensor.q.size() * std::size_t(n * 5 + 25));  // per row Q: B^Q C_o, C_oᵀ B^Q C_o
    CHECK(from_builds->release_fitted_occupied_products().empty());
  }
}

TEST_CASE("exact Fock builds take a symmetric product of two factors (the Z-vector's) and refuse a non-symmetric one") {
  WaterInCcPvdz water;
  MemoryBudget budget(std::size_t(1) << 30);
  ExactFock fock(water.obs, water.pairs, water.this_process, budget, 1, false);
  const Eigen::Index n = water.nbf();
  const Eigen::MatrixXd C = Eigen::MatrixXd::Random(n, 5), L = Eigen::MatrixXd::Random(n, 5);
  const std::unique_ptr<FockResponse> response = fock.occupied_response({C}, budget, false, nullptr);
  const Eigen::MatrixXd GC = response->of_changes({L}, kernels::Precision::fp64)[0];
  // G is linear in D: G(L Cᵀ + C Lᵀ) = G((L + C)(L + C)ᵀ) − G(L Lᵀ) − G(C Cᵀ).
  const auto G = [&](const Eigen::MatrixXd& factor) {
    const FactorPair density[1] = {FactorPair::symmetric(factor)};
    return fock.fock(density, kernels::Precision::fp64)[0];
  };
  const Eigen::MatrixXd expected = (G(L + C) - G(L) - G(C)) * C;
  // The differences cancel: up to 1.1e-14 of the largest element measured.
  CHECK(largest_difference(GC, expected) <= 1e-13 * expected.cwiseAbs().maxCoeff());
  const FactorPair general[1] = {{L, C}};
  CHECK_THROWS_WITH(fock.fock(general, kernels::Precision::fp64), Catch::Contains("symmetric densities only"));
}
