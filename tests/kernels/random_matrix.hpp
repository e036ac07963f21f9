// Random column-major matrices for the compute-engine tests (tests/kernels, tests/gpu).
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "kernels/compute_engine.hpp"

namespace dfmp2::test {

// fp64: sums of ≤ 9 products of O(1) numbers round at ~1e-15; fp32 at ~1e-6.
template <typename Real>
constexpr double kEngineTolerance = sizeof(Real) == sizeof(double) ? 1e-12 : 1e-5;

// rows × cols, entries uniform in [-1, 1), leading dimension rows + pad: the pad rows hold values
// that a product must neither read into its result nor overwrite.
template <typename Real>
struct RandomMatrix {
  std::size_t rows, cols, ld;
  std::vector<Real> data;
  RandomMatrix(std::size_t r, std::size_t c, std::mt19937& rng, std::size_t pad = 2)
      : rows(r), cols(c), ld(r + pad), data(ld * c) {
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (Real& x : data) x = Real(u(rng));
  }
  Real& operator()(std::size_t r, std::size_t c) { return data[r + c * ld]; }
  Real operator()(std::size_t r, std::size_t c) const { return data[r + c * ld]; }
  kernels::MatrixView<Real> view() { return kernels::host_matrix(data.data(), rows, cols, ld); }
  kernels::MatrixView<const Real> view() const { return kernels::host_matrix(data.data(), rows, cols, ld); }
};

}  // namespace dfmp2::test
