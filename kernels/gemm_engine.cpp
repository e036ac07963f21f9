#include "kernels/gemm_engine.hpp"

#include <cblas.h>

namespace dfmp2::kernels::detail {

namespace {
void gemm_call(int m, int n, int k, const double* A, int lda, const double* B, int ldb, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, A, lda, B, ldb, 0.0, C, ldc);
}
void gemm_call(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
}
}  // namespace

template <typename Real>
void gemm_abt(std::size_t m, std::size_t n, std::size_t k, const Real* A, std::size_t lda, const Real* B,
              std::size_t ldb, Real* C, std::size_t ldc) {
  if (m == 0 || n == 0) return;
  gemm_call(int(m), int(n), int(k), A, int(lda), B, int(ldb), C, int(ldc));
}

template void gemm_abt<double>(std::size_t, std::size_t, std::size_t, const double*, std::size_t,
                               const double*, std::size_t, double*, std::size_t);
template void gemm_abt<float>(std::size_t, std::size_t, std::size_t, const float*, std::size_t, const float*,
                              std::size_t, float*, std::size_t);

}  // namespace dfmp2::kernels::detail
