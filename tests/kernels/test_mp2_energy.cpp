// Tests for kernels/mp2_energy.hpp: a brute-force check from the formula, cross-backend agreement
// on awkward shapes, thread-count independence, fp32 vs fp64, names.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/energy_reduction.hpp"
#include "kernels/mp2_energy.hpp"

namespace k = dfmp2::kernels;

namespace {

struct System {
  std::size_t nocc, nvir, naux;
  std::vector<double> B, eps_occ, eps_vir;
  k::BiaView<double> view() const { return {B.data(), nocc, nvir, naux}; }
};

System random_system(std::size_t nocc, std::size_t nvir, std::size_t naux, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::uniform_real_distribution<double> occ(-1.5, -0.5), vir(0.1, 1.1);
  System s{nocc, nvir, naux, std::vector<double>(nocc * nvir * naux), {}, {}};
  for (auto& x : s.B) x = normal(rng);
  for (std::size_t i = 0; i < nocc; ++i) s.eps_occ.push_back(occ(rng));
  for (std::size_t a = 0; a < nvir; ++a) s.eps_vir.push_back(vir(rng));
  return s;
}

// Straight from the formula: all i, j (no symmetry), T_ab summed explicitly over P.
void brute_force(const System& s, double& e_os, double& e_ss) {
  const auto B = [&](std::size_t i, std::size_t a, std::size_t P) { return s.B[(i * s.nvir + a) * s.naux + P]; };
  e_os = e_ss = 0.0;
  for (std::size_t i = 0; i < s.nocc; ++i)
    for (std::size_t j = 0; j < s.nocc; ++j)
      for (std::size_t a = 0; a < s.nvir; ++a)
        for (std::size_t b = 0; b < s.nvir; ++b) {
          double t_ab = 0.0, t_ba = 0.0;
          for (std::size_t P = 0; P < s.naux; ++P) {
            t_ab += B(i, a, P) * B(j, b, P);
            t_ba += B(i, b, P) * B(j, a, P);
          }
          const double delta = s.eps_occ[i] + s.eps_occ[j] - s.eps_vir[a] - s.eps_vir[b];
          e_os += t_ab * t_ab / delta;
          e_ss += t_ab * (t_ab - t_ba) / delta;
        }
}

k::EnergyResult run(k::Backend backend, const System& s, k::EnergyOptions options = {}) {
  return k::mp2_energy(backend, s.view(), s.eps_occ, s.eps_vir, options);
}

bool close(double x, double ref, double rel) { return std::abs(x - ref) <= rel * std::abs(ref) + 1e-300; }

const k::Backend kConcrete[] = {k::Backend::reference, k::Backend::loop, k::Backend::fused};

}  // namespace

TEST_CASE("hand-computed single pair: nocc=1, nvir=2, naux=1", "[kernels]") {
  // B_0a = (1, 2), ε_0 = −1, ε_vir = (1, 2): T = [[1, 2], [2, 4]], Δ_ab = −2 − ε_a − ε_b = −4, −5, −6.
  // E_OS = 1/(−4) + 2·4/(−5) + 16/(−6) = −271/60 ≈ −4.516667; E_SS = 0 since T_ii is symmetric.
  const System s{1, 2, 1, {1.0, 2.0}, {-1.0}, {1.0, 2.0}};
  for (auto backend : kConcrete) {
    const auto r = run(backend, s);
    CHECK(r.e_os == Approx(-271.0 / 60.0).epsilon(1e-14));
    CHECK(r.e_ss == Approx(0.0).margin(1e-14));
  }
}

TEST_CASE("tiny case against brute force over all i, j", "[kernels]") {
  // nocc=2, nvir=3, naux=2. E.g. T_01,00 = B_00·B_10 = 0.3·0.2 + (−0.1)·0.4 = 0.02,
  // Δ_01,00 = −1.0 − 0.7 − 0.5 − 0.5 = −2.7, so that term of E_OS is 0.02²/(−2.7) ≈ −1.481e−4.
  const System s{2, 3, 2,
                 {0.3, -0.1, 0.5, 0.2, -0.4, 0.6,    // i = 0: a = 0, 1, 2 (P = 0, 1)
                  0.2, 0.4, -0.3, 0.1, 0.7, -0.2},   // i = 1
                 {-1.0, -0.7},
                 {0.5, 0.8, 1.3}};
  double e_os, e_ss;
  brute_force(s, e_os, e_ss);
  REQUIRE(e_ss != 0.0);
  for (auto backend : kConcrete) {
    INFO(k::to_string(backend));
    const auto r = run(backend, s);
    CHECK(close(r.e_os, e_os, 1e-13));
    CHECK(close(r.e_ss, e_ss, 1e-13));
  }
}

TEST_CASE("all backends agree with reference on awkward shapes, budgets and thread counts", "[kernels]") {
  struct Shape {
    std::size_t nocc, nvir, naux;
  };
  // Odd sizes around the SIMD width (8 doubles) and the reduction tile (64); nocc = 1; nvir = 1.
  const Shape shapes[] = {{1, 1, 1}, {1, 9, 5}, {3, 1, 7}, {5, 13, 11}, {7, 17, 9},
                          {4, 70, 33}, {11, 67, 29}, {2, 130, 3}, {17, 9, 40}};
  unsigned seed = 1;
  for (const auto& sh : shapes) {
    const System s = random_system(sh.nocc, sh.nvir, sh.naux, seed++);
    const auto ref = run(k::Backend::reference, s);
    if (sh.nocc * sh.nvir * sh.naux < 20000) {
      double e_os, e_ss;
      brute_force(s, e_os, e_ss);
      CHECK(close(ref.e_os, e_os, 1e-10));
      CHECK(close(ref.e_ss, e_ss, 1e-10));
    }
    const std::size_t pair_bytes = sh.nvir * sh.nvir * sizeof(double);
    // Budgets: default; 1 pair block (forces one-row chunks split along j); 3 pair blocks.
    for (std::size_t memory : {std::size_t(1) << 30, pair_bytes, 3 * pair_bytes})
      for (int threads : {1, 2})
        for (auto backend : {k::Backend::loop, k::Backend::fused, k::Backend::reference}) {
          INFO(k::to_string(backend) << " nocc=" << sh.nocc << " nvir=" << sh.nvir << " naux=" << sh.naux
                                     << " memory=" << memory << " threads=" << threads);
          k::EnergyOptions opt;
          opt.memory_bytes = memory;
          opt.threads = threads;
          const auto r = run(backend, s, opt);
          CHECK(r.backend == backend);
          CHECK(close(r.e_os, ref.e_os, 1e-10));
          CHECK(close(r.e_ss, ref.e_ss, 1e-10));
          if (backend == k::Backend::loop) CHECK(r.workspace_bytes <= std::max(memory, pair_bytes));
        }
  }
}

TEST_CASE("fp32 agrees with fp64 to 1e-5 relative (fp64 accumulation)", "[kernels]") {
  const System s = random_system(12, 90, 200, 42);
  const std::vector<float> Bf(s.B.begin(), s.B.end());
  const k::BiaView<float> view{Bf.data(), s.nocc, s.nvir, s.naux};
  const auto ref = run(k::Backend::reference, s);
  for (auto backend : kConcrete) {
    INFO(k::to_string(backend));
    const auto r = k::mp2_energy(backend, view, s.eps_occ, s.eps_vir, {});
    // fp32 T has ~1e-7 relative rounding per element; sums are accumulated in fp64, so the
    // energies should agree far better than 1e-5 of E_OS (E_SS is compared on that scale too).
    CHECK(std::abs(r.e_os - ref.e_os) <= 1e-5 * std::abs(ref.e_os));
    CHECK(std::abs(r.e_ss - ref.e_ss) <= 1e-5 * std::abs(ref.e_os));
  }
}

TEST_CASE("automatic resolves to a concrete backend", "[kernels]") {
  const System s = random_system(6, 40, 30, 7);
  const auto r = run(k::Backend::automatic, s);
  CHECK(r.backend != k::Backend::automatic);
  CHECK(close(r.e_os, run(k::Backend::reference, s).e_os, 1e-10));
}

TEST_CASE("progress reaches 1 and stays in [0, 1]", "[kernels]") {
  const System s = random_system(9, 20, 10, 3);
  for (auto backend : kConcrete) {
    std::vector<double> seen;
    k::EnergyOptions opt;
    opt.memory_bytes = 2 * 20 * 20 * sizeof(double);
    opt.progress = [&](double f) { seen.push_back(f); };
    run(backend, s, opt);
    REQUIRE(!seen.empty());
    CHECK(seen.back() == 1.0);
    for (double f : seen) CHECK((f >= 0.0 && f <= 1.0));
  }
}

TEST_CASE("names round-trip and bad names or arguments throw", "[kernels]") {
  for (auto b : {k::Backend::reference, k::Backend::loop, k::Backend::fused, k::Backend::automatic})
    CHECK(k::parse_backend(k::to_string(b)) == b);
  CHECK(k::to_string(k::Backend::automatic) == "auto");
  for (auto p : {k::Precision::fp64, k::Precision::fp32}) CHECK(k::parse_precision(k::to_string(p)) == p);
  CHECK_THROWS_AS(k::parse_backend("gpu"), std::invalid_argument);
  CHECK_THROWS_AS(k::parse_backend("automatic"), std::invalid_argument);
  CHECK_THROWS_AS(k::parse_backend(""), std::invalid_argument);
  CHECK_THROWS_AS(k::parse_precision("fp16"), std::invalid_argument);
  CHECK_THROWS_WITH(k::parse_backend("Fused"), Catch::Contains("fused"));

  const System s = random_system(3, 4, 5, 9);
  const std::vector<double> short_eps(2, -1.0);
  CHECK_THROWS_AS(k::mp2_energy(k::Backend::fused, s.view(), short_eps, s.eps_vir, {}), std::invalid_argument);
  CHECK(k::needed_flops(2, 3, 4) == 2.0 * 3 * 9 * 4);
}

TEST_CASE("the reductions that keep their quotients keep T_ab / Δ_ab and sum what the others sum", "[kernels]") {
  namespace d = k::detail;
  // 70 virtuals: a partial 64-wide tile and a partial SIMD vector; rows padded (ldt, ld_kept > nvir).
  const std::size_t nvir = 70, other = 67, ldt = 73, ld_kept = 75;
  const System s = random_system(1, nvir, 1, 11);
  std::mt19937_64 rng(12);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::vector<double> T(nvir * ldt), kept(nvir * ld_kept, -1.0), eps_other(other);
  for (double& x : T) x = normal(rng);
  for (std::size_t b = 0; b < other; ++b) eps_other[b] = 0.2 + 0.01 * double(b);
  const double eps_ij = -2.1;
  const d::PairEnergy same = d::reduce_pair(T.data(), ldt, nvir, eps_ij, s.eps_vir.data());
  const d::PairEnergy same_kept = d::reduce_pair_keeping(T.data(), ldt, nvir, eps_ij, s.eps_vir.data(), kept.data(),
                                                         ld_kept);
  CHECK(same_kept.os == same.os);  // the same operations in the same order
  CHECK(same_kept.ss == same.ss);
  for (std::size_t a = 0; a < nvir; ++a)
    for (std::size_t b = 0; b < nvir; ++b)
      CHECK(kept[a * ld_kept + b] == T[a * ldt + b] / (eps_ij - s.eps_vir[a] - s.eps_vir[b]));
  const d::PairEnergy opposite = d::reduce_pair_opposite_spin(T.data(), ldt, nvir, other, eps_ij, s.eps_vir.data(),
                                                              eps_other.data());
  const d::PairEnergy opposite_kept = d::reduce_pair_opposite_spin_keeping(
      T.data(), ldt, nvir, other, eps_ij, s.eps_vir.data(), eps_other.data(), kept.data(), ld_kept);
  CHECK(opposite_kept.os == opposite.os);
  for (std::size_t a = 0; a < nvir; ++a)
    for (std::size_t b = 0; b < other; ++b)
      CHECK(kept[a * ld_kept + b] == T[a * ldt + b] / (eps_ij - s.eps_vir[a] - eps_other[b]));
  CHECK(kept[ld_kept - 1] == -1.0);  // the padding is not written
}
