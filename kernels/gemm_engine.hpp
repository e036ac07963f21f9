// Tile computation layer: the GEMM engine that forms T = B_I B_Jᵀ.
// One wrapper for both precisions; swapping the engine (another BLAS, a hand-written
// micro-kernel, an accelerator) means changing gemm_engine.cpp only.
#pragma once

#include <cstddef>

namespace dfmp2::kernels::detail {

// Row-major C (m × n, leading dim ldc) = A (m × k, lda) · Bᵀ, where B is n × k (ldb).
// Multithreaded when called outside an OpenMP parallel region (OpenBLAS OpenMP build follows
// omp_get_max_threads()); single-threaded inside one (OpenBLAS checks omp_in_parallel()).
template <typename Real>
void gemm_abt(std::size_t m, std::size_t n, std::size_t k, const Real* A, std::size_t lda, const Real* B,
              std::size_t ldb, Real* C, std::size_t ldc);

}  // namespace dfmp2::kernels::detail
