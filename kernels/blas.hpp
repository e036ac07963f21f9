// Column-major BLAS calls for both precisions. Multithreaded when called outside an OpenMP
// parallel region (OpenBLAS's OpenMP build follows omp_get_max_threads()), single-threaded
// inside one.
#pragma once

#include <cblas.h>

#include <cstddef>

namespace dfmp2::kernels {

enum class Transpose { no, yes };

// C (m × n) = alpha op(A) op(B) + beta C, op(A) m × k, op(B) k × n.
inline void gemm(Transpose ta, Transpose tb, std::size_t m, std::size_t n, std::size_t k, double alpha,
                 const double* A, std::size_t lda, const double* B, std::size_t ldb, double beta, double* C,
                 std::size_t ldc) {
  cblas_dgemm(CblasColMajor, ta == Transpose::yes ? CblasTrans : CblasNoTrans,
              tb == Transpose::yes ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha, A, int(lda), B,
              int(ldb), beta, C, int(ldc));
}
inline void gemm(Transpose ta, Transpose tb, std::size_t m, std::size_t n, std::size_t k, float alpha,
                 const float* A, std::size_t lda, const float* B, std::size_t ldb, float beta, float* C,
                 std::size_t ldc) {
  cblas_sgemm(CblasColMajor, ta == Transpose::yes ? CblasTrans : CblasNoTrans,
              tb == Transpose::yes ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha, A, int(lda), B,
              int(ldb), beta, C, int(ldc));
}

// Lower triangle of C (n × n) = alpha X Xᵀ + beta C, X n × k.
inline void syrk_lower(std::size_t n, std::size_t k, double alpha, const double* X, std::size_t ldx, double beta,
                       double* C, std::size_t ldc) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, int(n), int(k), alpha, X, int(ldx), beta, C, int(ldc));
}
inline void syrk_lower(std::size_t n, std::size_t k, float alpha, const float* X, std::size_t ldx, float beta,
                       float* C, std::size_t ldc) {
  cblas_ssyrk(CblasColMajor, CblasLower, CblasNoTrans, int(n), int(k), alpha, X, int(ldx), beta, C, int(ldc));
}

}  // namespace dfmp2::kernels
