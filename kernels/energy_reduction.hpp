// Tile reduction layer: the SIMD energy kernel shared by the loop and fused backends.
#pragma once

#include <cstddef>

namespace dfmp2::kernels::detail {

struct PairEnergy {
  double os = 0.0, ss = 0.0;
};

// For one pair (i, j), with T_ab = T[a * ldt + b] (a, b < nvir) and eps_ij = ε_i + ε_j:
//   os = Σ_ab T_ab² / Δ_ab,  ss = Σ_ab T_ab (T_ab − T_ba) / Δ_ab,  Δ_ab = eps_ij − ε_a − ε_b.
// Walks T in cache-sized square tiles, pairing each T_ab tile with its T_ba counterpart;
// accumulates in fp64 for float T too. Highway runtime dispatch picks AVX-512/AVX2/SSE4/scalar.
template <typename Real>
PairEnergy reduce_pair(const Real* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir);

// An opposite-spin pair (UHF's i α, j β): T_ab = T[a * ldt + b] with a over the nvir_a virtuals
// of one spin (energies eps_a) and b over the nvir_b of the other (eps_b). T has no T_ba
// counterpart and there is no exchange term: os as above, ss = 0. Same tiles and SIMD kernel.
template <typename Real>
PairEnergy reduce_pair_opposite_spin(const Real* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                                     double eps_ij, const double* eps_a, const double* eps_b);

// reduce_pair's and reduce_pair_opposite_spin's sums of an fp64 T, which also keep each T_ab / Δ_ab
// they divide, at kept[a * ld_kept + b]: the DF-MP2 gradient's amplitudes, each divided once.
PairEnergy reduce_pair_keeping(const double* T, std::size_t ldt, std::size_t nvir, double eps_ij, const double* eps_vir,
                               double* kept, std::size_t ld_kept);
PairEnergy reduce_pair_opposite_spin_keeping(const double* T, std::size_t ldt, std::size_t nvir_a, std::size_t nvir_b,
                                             double eps_ij, const double* eps_a, const double* eps_b, double* kept,
                                             std::size_t ld_kept);

// Name of the SIMD target the dispatcher chose on this machine (e.g. "AVX3_ZEN4"), for reports.
const char* reduction_simd_target();

}  // namespace dfmp2::kernels::detail
