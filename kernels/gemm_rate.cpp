#include "kernels/gemm_rate.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "kernels/compute_engine.hpp"

namespace dfmp2::kernels {

template <typename Real>
double gemm_gflops(std::size_t m, std::size_t n, std::size_t k, int tries) {
  std::vector<Real> A(m * k), B(n * k), C(m * n);
  for (std::size_t x = 0; x < A.size(); ++x) A[x] = Real(1e-3) * Real(x % 1013);
  for (std::size_t x = 0; x < B.size(); ++x) B[x] = Real(1e-3) * Real(x % 997);
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < tries; ++t) {
    const auto start = std::chrono::steady_clock::now();
    gemm_abt_row_major<Real>(cpu_engine(), Memory::host, m, n, k, A.data(), k, B.data(), k, C.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return 2.0 * double(m) * double(n) * double(k) / best / 1e9;
}

GemmRates measure_gemm_rates(std::size_t m, std::size_t n, std::size_t k, int tries) {
  return {gemm_gflops<double>(m, n, k, tries), gemm_gflops<float>(m, n, k, tries)};
}

GemmRates measure_gemm_rates() {
  constexpr std::size_t kEdge = 1024;
  return measure_gemm_rates(kEdge, kEdge, kEdge, 3);
}

template double gemm_gflops<double>(std::size_t, std::size_t, std::size_t, int);
template double gemm_gflops<float>(std::size_t, std::size_t, std::size_t, int);

}  // namespace dfmp2::kernels
