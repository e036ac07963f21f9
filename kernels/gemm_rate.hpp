// The GEMM rate this machine reaches now (all threads, the OpenBLAS kernels in use): the
// yardstick for every stage's floor, measured at start-up under the same load as the run.
#pragma once

#include <cstddef>

namespace dfmp2::kernels {

// GFLOP/s of C = A·Bᵀ (m × n, inner dimension k), best of `tries`.
template <typename Real>
double gemm_gflops(std::size_t m, std::size_t n, std::size_t k, int tries);

struct GemmRates {
  double fp64_gflops = 0.0, fp32_gflops = 0.0;
};
// Both precisions' GEMM rate at one shape (m × n, inner dimension k), best of `tries` each.
GemmRates measure_gemm_rates(std::size_t m, std::size_t n, std::size_t k, int tries);
// A short probe (~0.1 s): square GEMMs of edge 1024, best of three each.
GemmRates measure_gemm_rates();

}  // namespace dfmp2::kernels
