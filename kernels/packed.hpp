// Symmetric matrices stored packed: the lower triangle by rows, element (m, n) with m ≥ n at
// m(m+1)/2 + n. Three-index factors B^Q_μν are kept this way (as Psi4's MemDF and PySCF's
// cderi do): half the memory, half the integral writes and half the fitting work.
#pragma once

#include <algorithm>
#include <cstddef>

namespace dfmp2::kernels {

constexpr std::size_t packed_size(std::size_t n) { return n * (n + 1) / 2; }
constexpr std::size_t packed_index(std::size_t m, std::size_t n) { return m * (m + 1) / 2 + n; }

// square[m * n_rows + k] = packed (m, k), both triangles, converted to Real.
template <typename Real>
void unpack_symmetric(const double* packed, std::size_t n, Real* square) {
  for (std::size_t m = 0; m < n; ++m) {
    const double* row = packed + packed_index(m, 0);
    for (std::size_t k = 0; k <= m; ++k) {
      square[m * n + k] = static_cast<Real>(row[k]);
      square[k * n + m] = static_cast<Real>(row[k]);
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
