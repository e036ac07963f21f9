// Column-major BLAS calls for both precisions. Multithreaded when called outside an OpenMP
// parallel region (OpenBLAS's OpenMP build follows omp_get_max_threads()), single-threaded
// inside one.
#pragma once

#include <cblas.h>

#include <cstddef>
#include <type_traits>

namespace dfmp2::kernels {

enum class Transpose { no, yes };

// C (m × n) = alpha op(A) op(B) + beta C, op(A) m × k, op(B) k × n.
template <typename Real>
void gemm(Transpose ta, Transpose tb, std::size_t m, std::size_t n, std::size_t k, Real alpha, const Real* A,
          std::size_t lda, const Real* B, std::size_t ldb, Real beta, Real* C, std::size_t ldc) {
  const auto a = ta == Transpose::yes ? CblasTrans : CblasNoTrans, b = tb == Transpose::yes ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<Real, double>)
    cblas_dgemm(CblasColMajor, a, b, int(m), int(n), int(k), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
  else
    cblas_sgemm(CblasColMajor, a, b, int(m), int(n), int(k), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

// Lower triangle of C (n × n) = alpha op(X) op(X)ᵀ + beta C, op(X) n × k (X n × k, or k × n transposed).
template <typename Real>
void syrk_lower(Transpose tx, std::size_t n, std::size_t k, Real alpha, const Real* X, std::size_t ldx, Real beta,
                Real* C, std::size_t ldc) {
  const auto t = tx == Transpose::yes ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<Real, double>)
    cblas_dsyrk(CblasColMajor, CblasLower, t, int(n), int(k), alpha, X, int(ldx), beta, C, int(ldc));
  else
    cblas_ssyrk(CblasColMajor, CblasLower, t, int(n), int(k), alpha, X, int(ldx), beta, C, int(ldc));
}

// C (m × n) = alpha A B + beta C, A symmetric m × m of which only the upper triangle is read.
template <typename Real>
void symm_upper_left(std::size_t m, std::size_t n, const Real* A, std::size_t lda, const Real* B, std::size_t ldb,
                     Real* C, std::size_t ldc, Real alpha = 1, Real beta = 0) {
  if constexpr (std::is_same_v<Real, double>)
    cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, int(m), int(n), alpha, A, int(lda), B, int(ldb), beta, C,
                int(ldc));
  else
    cblas_ssymm(CblasColMajor, CblasLeft, CblasUpper, int(m), int(n), alpha, A, int(lda), B, int(ldb), beta, C,
                int(ldc));
}

// Σ_i x_i y_i and y += alpha x, n elements each.
inline double dot(std::size_t n, const double* x, const double* y) { return cblas_ddot(int(n), x, 1, y, 1); }
inline float dot(std::size_t n, const float* x, const float* y) { return cblas_sdot(int(n), x, 1, y, 1); }
inline void axpy(std::size_t n, double alpha, const double* x, double* y) { cblas_daxpy(int(n), alpha, x, 1, y, 1); }
inline void axpy(std::size_t n, float alpha, const float* x, float* y) { cblas_saxpy(int(n), alpha, x, 1, y, 1); }

}  // namespace dfmp2::kernels
