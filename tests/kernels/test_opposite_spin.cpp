// mp2_energy_opposite_spin: UHF's αβ pairs, a rectangular pair space whose two sides have their
// own occupied AND virtual orbitals, against the formula summed directly; every backend and both
// precisions; blocks of either spin add up (how MPI ranks split it); and the same-spin half of
// UHF, E_αα = ½ e_ss, against its own definition.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/mp2_energy.hpp"

using namespace dfmp2::kernels;

namespace {

// One spin's B_ia^P with its orbital energies (reproducible random entries).
struct Spin {
  std::size_t nocc, nvir, naux;
  std::vector<double> B, eps_occ, eps_vir;

  Spin(std::size_t nocc_, std::size_t nvir_, std::size_t naux_, unsigned seed)
      : nocc(nocc_), nvir(nvir_), naux(naux_), B(nocc_ * nvir_ * naux_), eps_occ(nocc_), eps_vir(nvir_) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.0, 0.1);
    std::uniform_real_distribution<double> occ(-1.5, -0.5), vir(0.1, 1.1);
    for (double& x : B) x = normal(rng);
    for (double& e : eps_occ) e = occ(rng);
    for (double& e : eps_vir) e = vir(rng);
  }
  BiaView<double> view() const { return {B.data(), nocc, nvir, naux}; }
  // (ia|jb) with j, b from `other`.
  double T(std::size_t i, std::size_t a, const Spin& other, std::size_t j, std::size_t b) const {
    double t = 0.0;
    for (std::size_t P = 0; P < naux; ++P) t += B[(i * nvir + a) * naux + P] * other.B[(j * other.nvir + b) * naux + P];
    return t;
  }
};

// E_αβ = Σ_{i∈α, j∈β} Σ_{a∈α, b∈β} (ia|jb)² / (ε_i + ε_j − ε_a − ε_b).
double opposite_spin_by_definition(const Spin& alpha, const Spin& beta) {
  double e = 0.0;
  for (std::size_t i = 0; i < alpha.nocc; ++i)
    for (std::size_t j = 0; j < beta.nocc; ++j)
      for (std::size_t a = 0; a < alpha.nvir; ++a)
        for (std::size_t b = 0; b < beta.nvir; ++b) {
          const double t = alpha.T(i, a, beta, j, b);
          e += t * t / (alpha.eps_occ[i] + beta.eps_occ[j] - alpha.eps_vir[a] - beta.eps_vir[b]);
        }
  return e;
}

EnergyResult opposite_spin(Backend backend, const Spin& alpha, const Spin& beta, const EnergyOptions& options) {
  return mp2_energy_opposite_spin(backend, alpha.view(), alpha.eps_occ, alpha.eps_vir, beta.view(), beta.eps_occ,
                                  beta.eps_vir, options);
}

const Backend kBackends[] = {Backend::reference, Backend::loop, Backend::fused, Backend::automatic};

}  // namespace

TEST_CASE("opposite-spin pairs equal their definition on every backend, fp64 and fp32") {
  // nocc and nvir differ between the spins (a doublet: one more α electron), all sizes odd.
  const Spin alpha(5, 7, 11, 3), beta(4, 8, 11, 5);
  const double expected = opposite_spin_by_definition(alpha, beta);
  std::vector<float> B_alpha32(alpha.B.begin(), alpha.B.end()), B_beta32(beta.B.begin(), beta.B.end());
  for (Backend backend : kBackends) {
    for (std::size_t memory : {std::size_t(1) << 30, 3 * alpha.nvir * beta.nvir * sizeof(double)}) {
      INFO(to_string(backend) << ", T_flat budget " << memory << " bytes");  // the small one: several loop chunks
      EnergyOptions options;
      options.memory_bytes = memory;
      const EnergyResult r = opposite_spin(backend, alpha, beta, options);
      CHECK(r.e_os == Approx(expected).epsilon(1e-12));
      CHECK(r.e_ss == 0.0);
      const EnergyResult r32 = mp2_energy_opposite_spin<float>(
          backend, {B_alpha32.data(), alpha.nocc, alpha.nvir, alpha.naux}, alpha.eps_occ, alpha.eps_vir,
          {B_beta32.data(), beta.nocc, beta.nvir, beta.naux}, beta.eps_occ, beta.eps_vir, options);
      CHECK(std::abs(r32.e_os - expected) < 1e-6 * std::abs(expected));
    }
  }
}

TEST_CASE("opposite-spin blocks of either spin add up to the whole") {
  const Spin alpha(6, 5, 9, 7), beta(5, 6, 9, 8);
  const EnergyResult whole = opposite_spin(Backend::reference, alpha, beta, {});
  const std::size_t split_a = 2, split_b = 3, row_a = alpha.nvir * alpha.naux, row_b = beta.nvir * beta.naux;
  const std::span<const double> eps_a(alpha.eps_occ), eps_b(beta.eps_occ);
  for (Backend backend : kBackends) {
    INFO(to_string(backend));
    double sum = 0.0;
    for (const auto& [a0, a1] : {std::pair<std::size_t, std::size_t>{0, split_a}, {split_a, alpha.nocc}})
      for (const auto& [b0, b1] : {std::pair<std::size_t, std::size_t>{0, split_b}, {split_b, beta.nocc}})
        sum += mp2_energy_opposite_spin<double>(backend, {alpha.B.data() + a0 * row_a, a1 - a0, alpha.nvir, alpha.naux},
                                                eps_a.subspan(a0, a1 - a0), alpha.eps_vir,
                                                {beta.B.data() + b0 * row_b, b1 - b0, beta.nvir, beta.naux},
                                                eps_b.subspan(b0, b1 - b0), beta.eps_vir, {})
                   .e_os;
    CHECK(sum == Approx(whole.e_os).epsilon(1e-12));
  }
}

TEST_CASE("one spin's same-spin energy is half of e_ss") {
  // E_αα = ½ Σ_ij Σ_ab (ia|jb)[(ia|jb) − (ib|ja)] / Δ over all i, j of one spin.
  const Spin alpha(5, 6, 7, 13);
  double expected = 0.0;
  for (std::size_t i = 0; i < alpha.nocc; ++i)
    for (std::size_t j = 0; j < alpha.nocc; ++j)
      for (std::size_t a = 0; a < alpha.nvir; ++a)
        for (std::size_t b = 0; b < alpha.nvir; ++b) {
          const double t = alpha.T(i, a, alpha, j, b), exchange = alpha.T(i, b, alpha, j, a);
          expected += 0.5 * t * (t - exchange) /
                      (alpha.eps_occ[i] + alpha.eps_occ[j] - alpha.eps_vir[a] - alpha.eps_vir[b]);
        }
  for (Backend backend : kBackends) {
    INFO(to_string(backend));
    const EnergyResult r = mp2_energy(backend, alpha.view(), alpha.eps_occ, alpha.eps_vir, {});
    CHECK(0.5 * r.e_ss == Approx(expected).epsilon(1e-12));
  }
}

TEST_CASE("opposite-spin blocks that do not fit together are refused, and an empty one gives zero") {
  const Spin alpha(2, 3, 4, 1), beta(2, 2, 5, 2), empty(0, 2, 4, 3);
  CHECK_THROWS_AS(opposite_spin(Backend::fused, alpha, beta, {}), std::invalid_argument);  // naux 4 vs 5
  CHECK_THROWS_AS(mp2_energy_opposite_spin(Backend::fused, alpha.view(), alpha.eps_occ, beta.eps_vir, empty.view(),
                                           empty.eps_occ, empty.eps_vir, {}),
                  std::invalid_argument);  // α's virtual energies do not match its B
  CHECK(opposite_spin(Backend::fused, alpha, empty, {}).e_os == 0.0);
}

TEST_CASE("the needed work of UHF counts αα and ββ triangles and the whole αβ rectangle") {
  CHECK(needed_flops_unrestricted(3, 4, 2, 5, 6) ==
        needed_flops(3, 4, 6) + needed_flops(2, 5, 6) + 2.0 * 3 * 2 * 4 * 5 * 6);
}
