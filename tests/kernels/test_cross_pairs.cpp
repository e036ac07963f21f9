// mp2_energy_cross: the pairs between two disjoint occupied blocks, so that
// E(I ∪ J) = E(I) + E(J) + cross(I, J) for every backend (how MPI ranks split the pair space).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/mp2_energy.hpp"

using namespace dfmp2::kernels;

TEST_CASE("block energies plus cross pairs give the whole energy, for every backend") {
  const std::size_t nocc = 7, nvir = 5, naux = 9, split = 3;  // odd sizes on purpose
  std::mt19937 rng(11);
  std::normal_distribution<double> normal(0.0, 0.1);
  std::uniform_real_distribution<double> occ(-1.5, -0.5), vir(0.1, 1.1);
  std::vector<double> B(nocc * nvir * naux), eps_occ(nocc), eps_vir(nvir);
  for (double& x : B) x = normal(rng);
  for (double& e : eps_occ) e = occ(rng);
  for (double& e : eps_vir) e = vir(rng);
  const std::span<const double> all_eps(eps_occ);
  const BiaView<double> whole{B.data(), nocc, nvir, naux};
  const BiaView<double> I{B.data(), split, nvir, naux};
  const BiaView<double> J{B.data() + split * nvir * naux, nocc - split, nvir, naux};

  for (Backend backend : {Backend::reference, Backend::loop, Backend::fused, Backend::automatic}) {
    INFO(to_string(backend));
    EnergyOptions options;
    options.memory_bytes = 3 * nvir * nvir * sizeof(double);  // forces several loop chunks
    const EnergyResult full = mp2_energy(Backend::reference, whole, all_eps, eps_vir, options);
    const EnergyResult e_I = mp2_energy(backend, I, all_eps.first(split), eps_vir, options);
    const EnergyResult e_J = mp2_energy(backend, J, all_eps.subspan(split), eps_vir, options);
    const EnergyResult cross = mp2_energy_cross(backend, I, all_eps.first(split), J,
                                                all_eps.subspan(split), eps_vir, options);
    CHECK(e_I.e_os + e_J.e_os + cross.e_os == Approx(full.e_os).epsilon(1e-12));
    CHECK(e_I.e_ss + e_J.e_ss + cross.e_ss == Approx(full.e_ss).epsilon(1e-12));
    // The order of the blocks does not matter.
    const EnergyResult swapped = mp2_energy_cross(backend, J, all_eps.subspan(split), I,
                                                  all_eps.first(split), eps_vir, options);
    CHECK(swapped.e_os == Approx(cross.e_os).epsilon(1e-12));
    CHECK(swapped.e_ss == Approx(cross.e_ss).epsilon(1e-12));
  }
}

TEST_CASE("cross pairs with an empty block are zero, and mismatched blocks are refused") {
  std::vector<double> B(2 * 3 * 4, 0.1), eps_occ{-1.0, -0.8}, eps_vir{0.2, 0.4, 0.6};
  const BiaView<double> I{B.data(), 2, 3, 4}, empty{B.data(), 0, 3, 4};
  const EnergyResult none =
      mp2_energy_cross(Backend::fused, I, eps_occ, empty, {}, eps_vir, EnergyOptions{});
  CHECK(none.e_os == 0.0);
  const BiaView<double> other_naux{B.data(), 1, 3, 5};
  CHECK_THROWS_AS(mp2_energy_cross(Backend::fused, I, eps_occ, other_naux,
                                   std::span<const double>(eps_occ).first(1), eps_vir,
                                   EnergyOptions{}),
                  std::invalid_argument);
}
