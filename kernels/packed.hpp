// Symmetric matrices stored packed: the lower triangle by rows, element (m, n) with m ≥ n at
// m(m+1)/2 + n. Three-index factors B^Q_μν are kept this way (as Psi4's MemDF and PySCF's
// cderi do): half the memory, half the integral writes and half the fitting work.
#pragma once

#include <algorithm>
#include <cstddef>

namespace dfmp2::kernels {

constexpr std::size_t packed_size(std::size_t n) { return n * (n + 1) / 2; }
constexpr std::size_t packed_index(std::size_t m, std::size_t n) { return m * (m + 1) / 2 + n; }

// square[m * n + k] = packed (m, k), both triangles, converted to Real. By tiles, so that the
// mirrored (strided) writes of a tile stay within a few cache lines and pages.
template <typename Real>
void unpack_symmetric(const double* packed, std::size_t n, Real* square) {
  constexpr std::size_t kTile = 32;
  for (std::size_t m0 = 0; m0 < n; m0 += kTile) {
    const std::size_t m1 = std::min(n, m0 + kTile);
    for (std::size_t k0 = 0; k0 <= m0; k0 += kTile) {
      for (std::size_t m = m0; m < m1; ++m) {
        const double* row = packed + packed_index(m, 0);
        for (std::size_t k = k0, k1 = std::min(m + 1, k0 + kTile); k < k1; ++k) square[m * n + k] = static_cast<Real>(row[k]);
      }
      for (std::size_t k = k0, k1 = std::min(m1, k0 + kTile); k < k1; ++k)
        for (std::size_t m = std::max(m0, k); m < m1; ++m) square[k * n + m] = static_cast<Real>(packed[packed_index(m, k)]);
    }
  }
}

// square[m * n + k] = packed (m, k) for k ≤ m only, converted to Real: read column-major, the
// upper triangle, all that SYMM reads of a symmetric matrix.
template <typename Real>
void unpack_upper(const double* packed, std::size_t n, Real* square) {
  for (std::size_t m = 0; m < n; ++m)
    std::transform(packed + packed_index(m, 0), packed + packed_index(m + 1, 0), square + m * n,
                   [](double x) { return static_cast<Real>(x); });
}

}  // namespace dfmp2::kernels
