// Integrals and fitting: the block-packed three-index tensor against libint2 called directly, and
// the Coulomb fit on both of its routes (Cholesky with its certificate, eigenvalues with dropping).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include <Eigen/LU>
#include <Eigen/QR>
#include <libint2.hpp>

#include "kernels/block_packed.hpp"
#include "kernels/gpu/offload_engine.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/three_index.hpp"
#include "src/io/xyz.hpp"
#include "src/molecule/basis.hpp"
#include "tests/kernels/host_jk_device.hpp"

using namespace dfmp2;

namespace {

Molecule water_from_inputs() { return read_xyz(std::string(DFMP2_SOURCE_DIR) + "/inputs/water.xyz"); }

}  // namespace

TEST_CASE("block-packed (P|μν) equals libint2's own integrals, for all rows and a part, all pairs or some") {
  const Libint2Session session;
  const Molecule mol = water_from_inputs();
  const libint2::BasisSet obs = place_on(load_basis("cc-pvdz", BasisRole::orbital), mol),
                          aux = place_on(load_basis("cc-pvdz-ri", BasisRole::auxiliary), mol);
  // At 1e-12 every pair of water is stored; at 0.1 the pairs of distant, diffuse shells are not.
  const double threshold = GENERATE(1e-12, 0.1);
  const ShellPairs pairs = significant_shell_pairs(obs, threshold);
  INFO("pair threshold " << threshold << ": " << pairs.pairs.size() << " pairs stored");
  const std::size_t nshell = obs.size();
  CHECK((threshold < 1e-6 ? pairs.pairs.size() == nshell * (nshell + 1) / 2 : pairs.pairs.size() < nshell * (nshell + 1) / 2));
  const ThreeIndexIntegrals integrals(aux, obs, pairs, coulomb_metric(aux), 0.0);  // no triplet screened
  const std::size_t nbf = obs.nbf(), naux = aux.nbf();
  libint2::Engine engine(libint2::Operator::coulomb, std::max(obs.max_nprim(), aux.max_nprim()),
                         std::max(obs.max_l(), aux.max_l()));
  engine.set(libint2::BraKet::xs_xx);
  // (P|μν) in full, from libint2 shell by shell.
  std::vector<double> full(naux * nbf * nbf);
  for (std::size_t sP = 0; sP < aux.size(); ++sP)
    for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
      for (std::size_t s2 = 0; s2 < obs.size(); ++s2) {
        engine.compute2<libint2::Operator::coulomb, libint2::BraKet::xs_xx, 0>(aux[sP], libint2::Shell::unit(), obs[s1],
                                                                               obs[s2]);
        const double* v = engine.results()[0];
        for (std::size_t p = 0; p < aux[sP].size(); ++p)
          for (std::size_t a = 0; a < obs[s1].size(); ++a)
            for (std::size_t b = 0; b < obs[s2].size(); ++b)
              full[((first_function(aux, sP) + p) * nbf + first_function(obs, s1) + a) * nbf + first_function(obs, s2) + b] =
                  v ? v[(p * obs[s1].size() + a) * obs[s2].size() + b] : 0.0;
      }
  for (const ShellRange rows : {ShellRange{0, obs.size()}, ShellRange{2, 7}}) {
    const std::size_t cols = integrals.columns(rows), m_first = first_function(obs, rows.first);
    const std::size_t base = pairs.layout.row_offset(m_first);
    std::vector<double> packed(naux * cols, std::nan(""));
    integrals.compute({0, aux.size()}, rows, packed.data());
    double worst = 0.0;
    std::size_t found = 0;
    for (std::size_t m = m_first; m < first_function(obs, rows.last); ++m)
      for (std::size_t n = 0; n <= m; ++n) {
        const std::size_t at = pairs.layout.find(m, n);
        if (at == kernels::BlockPackedLayout::npos) continue;
        ++found;
        for (std::size_t P = 0; P < naux; ++P) {
          const double diff = std::abs(packed[P * cols + at - base] - full[(P * nbf + m) * nbf + n]);
          if (!(diff <= worst)) worst = diff;  // a NaN (an element never written) sticks
        }
      }
    CHECK(found == cols);  // the stored elements are these rows' columns
    CHECK(worst < 1e-14);  // every element written, each the integral
  }
  // Rows of shells written in place into the whole tensor's rows (stride: all stored columns),
  // as the DF-SCF set-up makes it batch by batch: the same as all rows at once.
  const std::size_t stored = integrals.columns({0, nshell});
  std::vector<double> whole(naux * stored), by_batches(naux * stored, std::nan(""));
  integrals.compute({0, aux.size()}, {0, nshell}, whole.data());
  for (const ShellRange rows : {ShellRange{0, 3}, ShellRange{3, 4}, ShellRange{4, nshell}})
    integrals.compute({0, aux.size()}, rows, by_batches.data() + pairs.layout.row_block_offset(rows.first), stored);
  CHECK(by_batches == whole);
}

namespace {

// Every pair's sqrt(max (μν|μν)) (s1 ≥ s2), as the screening computed them before its analytic bound.
Eigen::MatrixXd every_schwarz_bound(const libint2::BasisSet& obs) {
  libint2::Engine engine(libint2::Operator::coulomb, obs.max_nprim(), obs.max_l());
  engine.set_precision(0.0);
  Eigen::MatrixXd bound = Eigen::MatrixXd::Zero(obs.size(), obs.size());
  for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute2<libint2::Operator::coulomb, libint2::BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s1], obs[s2]);
      const double* v = engine.results()[0];
      const std::size_t n12 = obs[s1].size() * obs[s2].size();
      double largest = 0.0;
      for (std::size_t k = 0; v != nullptr && k < n12; ++k) largest = std::max(largest, std::abs(v[k * n12 + k]));
      bound(s1, s2) = std::sqrt(largest);
    }
  return bound;
}

Molecule molecule_from_atoms(std::vector<Atom> atoms) {
  Molecule mol;
  mol.atoms = std::move(atoms);
  return mol;
}

}  // namespace

TEST_CASE("the screened shell pairs are exactly those of every pair's (μν|μν), diffuse, Cartesian and far apart") {
  const Libint2Session session;
  const std::string inputs = std::string(DFMP2_SOURCE_DIR) + "/inputs/";
  // Water with one O–H bond stretched to 4 Å, and two waters 12 Å apart: pairs of every distance.
  const Molecule stretched = molecule_from_atoms({{8, {0.0, 0.0, 0.0}}, {1, {0.0, 1.43, 1.11}}, {1, {0.0, 0.0, 7.56}}});
  Molecule apart = read_xyz(inputs + "water.xyz");
  for (const Atom& atom : read_xyz(inputs + "water.xyz").atoms)
    apart.atoms.push_back({atom.Z, {atom.r[0] + 22.7, atom.r[1], atom.r[2]}});
  struct Case {
    std::string name;
    Molecule mol;
    std::string basis;
  };
  const std::vector<Case> cases = {{"stretched water", stretched, "aug-cc-pvdz"},
                                   {"two waters 12 Å apart", apart, "cc-pvdz"},
                                   {"uracil", read_xyz(inputs + "uracil.xyz"), "aug-cc-pvdz"},
                                   {"benzene", read_xyz(inputs + "benzene.xyz"), "6-31g*"},  // Cartesian d
                                   {"C20H42", read_xyz(inputs + "scale/c20h42.xyz"), "aug-cc-pvdz"},
                                   {"C20H42", read_xyz(inputs + "scale/c20h42.xyz"), "cc-pvdz"}};
  for (const Case& c : cases) {
    const libint2::BasisSet obs = place_on(load_basis(c.basis, BasisRole::orbital), c.mol);
    const Eigen::MatrixXd every = every_schwarz_bound(obs);
    const double largest = every.maxCoeff();
    for (const double threshold : {kSchwarzThreshold, 1e-6}) {
      INFO(c.name << " in " << c.basis << ", threshold " << threshold);
      const ShellPairs pairs = significant_shell_pairs(obs, threshold);
      std::vector<std::pair<std::size_t, std::size_t>> expected;
      std::size_t same = 0, dismissed = 0;
      for (std::size_t s1 = 0; s1 < obs.size(); ++s1)
        for (std::size_t s2 = 0; s2 <= s1; ++s2) {
          dismissed += pairs.schwarz(s1, s2) == 0.0;
          if (every(s1, s2) * largest < threshold) continue;
          expected.emplace_back(s1, s2);
          same += pairs.schwarz(s1, s2) == every(s1, s2);  // the very same (μν|μν), bit for bit
        }
      REQUIRE(pairs.pairs == expected);
      CHECK(same == expected.size());
      const std::size_t all = obs.size() * (obs.size() + 1) / 2;
      INFO(expected.size() << " of " << all << " pairs significant, " << dismissed << " dismissed without integrals");
      // On the 30 Å chain most insignificant pairs never reach libint2.
      if (c.name == "C20H42") CHECK(dismissed > (all - expected.size()) / 2);
    }
  }
}

TEST_CASE("parts of a block-packed index's rows hold about equal element counts, parts of functions equal rows") {
  const Libint2Session session;
  const Molecule mol = read_xyz(std::string(DFMP2_SOURCE_DIR) + "/inputs/benzene.xyz");
  const libint2::BasisSet obs = place_on(load_basis("cc-pvdz", BasisRole::orbital), mol);
  const ShellPairs pairs = significant_shell_pairs(obs);
  const kernels::BlockPackedLayout& layout = pairs.layout;
  std::size_t widest_shell = 0;
  for (const auto& shell : obs) widest_shell = std::max(widest_shell, shell.size());
  for (int parts : {1, 2, 3, 4}) {
    const double elements_each = double(layout.size()) / parts;
    const double functions_each = double(obs.nbf()) / parts;
    std::size_t next_triangle = 0, next_functions = 0;
    for (int part = 0; part < parts; ++part) {
      const ShellRange triangle = shell_part_of_rows(obs, layout, part, parts), functions = shell_part(obs, part, parts);
      CHECK(triangle.first == next_triangle);  // contiguous, every shell once
      CHECK(functions.first == next_functions);
      next_triangle = triangle.last;
      next_functions = functions.last;
      const double elements =
          double(layout.row_offset(first_function(obs, triangle.last)) - layout.row_offset(first_function(obs, triangle.first)));
      // Off by at most one shell's rows at each end: widest_shell rows of at most nbf elements.
      CHECK(std::abs(elements - elements_each) <= 2.0 * double(widest_shell * obs.nbf()));
      CHECK(std::abs(double(function_count(obs, functions)) - functions_each) <= 2.0 * double(widest_shell));
    }
    CHECK(next_triangle == obs.size());
    CHECK(next_functions == obs.size());
  }
}

TEST_CASE("the Coulomb fit takes Cholesky when no eigenvalue can be dropped, and drops them otherwise, and so does "
          "its inverse") {
  // A well-conditioned metric: B = A L⁻ᵀ, so B Bᵀ reproduces A J⁻¹ Aᵀ.
  const Eigen::MatrixXd J = Eigen::MatrixXd::Identity(6, 6) + 0.1 * Eigen::MatrixXd::Ones(6, 6);
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(6, 5);  // row-major [P][x]: column-major x × P is Aᵀ
  Eigen::MatrixXd B = A;
  const CoulombFitting fit(J);
  fit.apply(B.data(), 5);  // B's storage is row-major [P][x] of 6 × 5
  const Eigen::Map<const Eigen::MatrixXd> a(A.data(), 5, 6), b(B.data(), 5, 6);
  CHECK((b * b.transpose() - a * J.inverse() * a.transpose()).cwiseAbs().maxCoeff() < 1e-12);
  CHECK(fit.flops(5) == Approx(36.0 * 5.0));  // triangular solve: naux² per column
  // Columns 1 … 3 of the same rows fitted in place (rows 5 apart): those columns of B, the others untouched.
  Eigen::MatrixXd strided = A;
  fit.apply(strided.data() + 1, 3, 5);
  const Eigen::Map<const Eigen::MatrixXd> s(strided.data(), 5, 6);
  CHECK((s.middleRows(1, 3) - b.middleRows(1, 3)).cwiseAbs().maxCoeff() < 1e-14);
  CHECK(s.row(0) == a.row(0));
  CHECK(s.row(4) == a.row(4));
  // apply_inverse: row P becomes (J⁻¹ A)_P.
  Eigen::MatrixXd inverse = A;
  fit.apply_inverse(inverse.data(), 5);
  const Eigen::Map<const Eigen::MatrixXd> c(inverse.data(), 5, 6);
  CHECK((c - a * J.inverse()).cwiseAbs().maxCoeff() < 1e-12);
  // Two identical functions: one eigenvalue is zero and is dropped (J^-1/2 route).
  Eigen::MatrixXd singular = J;
  singular.row(5) = singular.row(4);
  singular.col(5) = singular.col(4);
  const CoulombFitting dropped(singular);
  CHECK(dropped.flops(5) == Approx(2.0 * 36.0 * 5.0));  // a full multiplication by J^-1/2
  Eigen::MatrixXd C = A;
  dropped.apply(C.data(), 5);
  CHECK(C.allFinite());
  // Its apply_inverse is the pseudo-inverse: the dropped direction left out.
  Eigen::MatrixXd pseudo = A;
  dropped.apply_inverse(pseudo.data(), 5);
  const Eigen::Map<const Eigen::MatrixXd> p(pseudo.data(), 5, 6);
  const Eigen::MatrixXd expected = a * singular.completeOrthogonalDecomposition().pseudoInverse();
  CHECK((p - expected).cwiseAbs().maxCoeff() < 1e-10);
}

// The DF transform's fit on a GPU is CoulombFitting on an OffloadEngine (one call at a time, the
// factor held there, B's columns in tiles of the staging buffer): on the host stand-in it equals
// the CPU engine's fit, for the Cholesky factor (TRSM on the device) and J^-1/2 (GEMM), with
// more rows than one call takes (CoulombFitting::kOneCallRows).
TEST_CASE("the fit on an engine threads may not share (the GPU's offload engine on the host stand-in) equals the "
          "CPU's: apply, apply_transpose and apply_to_rows, Cholesky and J^-1/2") {
  const Eigen::Index naux = 24, ncols = 2 * static_cast<Eigen::Index>(CoulombFitting::kOneCallRows) + 100;
  Eigen::MatrixXd J = Eigen::MatrixXd::Identity(naux, naux) + 0.05 * Eigen::MatrixXd::Ones(naux, naux);
  Eigen::MatrixXd singular = J;  // two identical functions: the J^-1/2 route
  singular.row(naux - 1) = singular.row(naux - 2);
  singular.col(naux - 1) = singular.col(naux - 2);
  std::srand(17);
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(naux * ncols, 1);
  // Tiles of 700 columns or rows of B beside the held factor.
  const kernels::GpuOffloadPlan plan{false, 0, std::size_t(naux) * 700, std::size_t(naux * naux)};
  for (const Eigen::MatrixXd* metric : {&J, &singular}) {
    test::HostJKDevice device(plan.device_bytes());
    kernels::OffloadEngine engine(plan, device, kernels::cpu_engine(), {});
    CoulombFitting on_device(*metric);
    const CoulombFitting on_cpu(*metric);
    on_device.use_engine(engine);
    const auto apart = [&](const auto& fit_cpu, const auto& fit_device) {
      Eigen::MatrixXd expected = A, got = A;
      fit_cpu(expected.data());
      fit_device(got.data());
      return (got - expected).cwiseAbs().maxCoeff() / expected.cwiseAbs().maxCoeff();
    };
    const auto n = static_cast<std::size_t>(ncols);
    CHECK(apart([&](double* x) { on_cpu.apply(x, n); }, [&](double* x) { on_device.apply(x, n); }) < 1e-14);
    CHECK(apart([&](double* x) { on_cpu.apply_transpose(x, n); }, [&](double* x) { on_device.apply_transpose(x, n); }) <
          1e-14);
    CHECK(apart([&](double* x) { on_cpu.apply_to_rows(x, n); }, [&](double* x) { on_device.apply_to_rows(x, n); }) <
          1e-14);
    CHECK(engine.products() >= 3 * 2);  // every call's block on the device, none on the host engine
    CHECK(engine.uploaded_bytes() >= 3 * sizeof(double) * std::size_t(naux * ncols));
  }
}

TEST_CASE("the fit's GPU plan: the factor held beside a call's columns, or fewer columns in short memory, else none") {
  const std::size_t naux = 2000, factor = naux * naux;
  const auto roomy = plan_fit_on_gpu(naux, std::size_t(1) << 30);
  REQUIRE(roomy.has_value());
  CHECK(roomy->held_elements == factor);
  CHECK(roomy->staging_elements >= naux * CoulombFitting::kOneCallRows);
  // 40 MB: the 32 MB factor beside tiles of fewer columns (the solves then go in tiles).
  const auto short_memory = plan_fit_on_gpu(naux, 40'000'000);
  REQUIRE(short_memory.has_value());
  CHECK(short_memory->held_elements == factor);
  CHECK(short_memory->staging_elements >= naux * 64);
  CHECK(short_memory->device_bytes() <= 40'000'000);
  CHECK_FALSE(plan_fit_on_gpu(naux, 30'000'000).has_value());  // the factor alone does not fit
}
