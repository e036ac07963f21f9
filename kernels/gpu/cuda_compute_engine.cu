#include "kernels/gpu/cuda_compute_engine.hpp"

#include <string>

#include "kernels/gpu/gpu_plan.hpp"

namespace dfmp2::kernels {
namespace {

const char* cublas_message(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS not initialised";
    case CUBLAS_STATUS_ALLOC_FAILED: return "cuBLAS could not allocate device memory";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported on this GPU";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU failed to execute it";
    default: return "cuBLAS error";
  }
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw GpuError(std::string("GPU: ") + what + ": " + cublas_message(status) + " (status " +
                   std::to_string(int(status)) + ")");
}

cublasOperation_t cublas_op(Op op) { return op == Op::transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }
cublasSideMode_t cublas_side(Side side) { return side == Side::left ? CUBLAS_SIDE_LEFT : CUBLAS_SIDE_RIGHT; }

}  // namespace

CudaComputeEngine::CudaComputeEngine(cudaStream_t stream) {
  check(cublasCreate(&handle_), "creating the cuBLAS handle");
  if (const cublasStatus_t status = cublasSetStream(handle_, stream); status != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(handle_);
    check(status, "setting cuBLAS's stream");
  }
}

CudaComputeEngine::~CudaComputeEngine() { cublasDestroy(handle_); }

void CudaComputeEngine::run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A,
                                 const MatrixView<const double>& B, double beta, const MatrixView<double>& C) {
  check(cublasDgemm(handle_, cublas_op(op_a), cublas_op(op_b), int(C.rows), int(C.cols), int(op_cols(op_a, A)), &alpha,
                    A.data, int(A.ld), B.data, int(B.ld), &beta, C.data, int(C.ld)),
        "DGEMM");
}

void CudaComputeEngine::run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A,
                                 const MatrixView<const float>& B, float beta, const MatrixView<float>& C) {
  check(cublasSgemm(handle_, cublas_op(op_a), cublas_op(op_b), int(C.rows), int(C.cols), int(op_cols(op_a, A)), &alpha,
                    A.data, int(A.ld), B.data, int(B.ld), &beta, C.data, int(C.ld)),
        "SGEMM");
}

void CudaComputeEngine::run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                                       const MatrixView<double>& C) {
  check(cublasDsyrk(handle_, CUBLAS_FILL_MODE_LOWER, cublas_op(op_x), int(C.rows), int(op_cols(op_x, X)), &alpha,
                    X.data, int(X.ld), &beta, C.data, int(C.ld)),
        "DSYRK");
}

void CudaComputeEngine::run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                                       const MatrixView<float>& C) {
  check(cublasSsyrk(handle_, CUBLAS_FILL_MODE_LOWER, cublas_op(op_x), int(C.rows), int(op_cols(op_x, X)), &alpha,
                    X.data, int(X.ld), &beta, C.data, int(C.ld)),
        "SSYRK");
}

void CudaComputeEngine::run_symm_upper_left(double alpha, const MatrixView<const double>& A,
                                            const MatrixView<const double>& B, double beta,
                                            const MatrixView<double>& C) {
  check(cublasDsymm(handle_, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, int(C.rows), int(C.cols), &alpha, A.data,
                    int(A.ld), B.data, int(B.ld), &beta, C.data, int(C.ld)),
        "DSYMM");
}

void CudaComputeEngine::run_symm_upper_left(float alpha, const MatrixView<const float>& A,
                                            const MatrixView<const float>& B, float beta, const MatrixView<float>& C) {
  check(cublasSsymm(handle_, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, int(C.rows), int(C.cols), &alpha, A.data,
                    int(A.ld), B.data, int(B.ld), &beta, C.data, int(C.ld)),
        "SSYMM");
}

// cuBLAS's TRSM writes its solution over B, as BLAS's does.
void CudaComputeEngine::run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                                        const MatrixView<double>& B) {
  check(cublasDtrsm(handle_, cublas_side(side), CUBLAS_FILL_MODE_LOWER, cublas_op(op_l), CUBLAS_DIAG_NON_UNIT,
                    int(B.rows), int(B.cols), &alpha, L.data, int(L.ld), B.data, int(B.ld)),
        "DTRSM");
}

void CudaComputeEngine::run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                                        const MatrixView<float>& B) {
  check(cublasStrsm(handle_, cublas_side(side), CUBLAS_FILL_MODE_LOWER, cublas_op(op_l), CUBLAS_DIAG_NON_UNIT,
                    int(B.rows), int(B.cols), &alpha, L.data, int(L.ld), B.data, int(B.ld)),
        "STRSM");
}

}  // namespace dfmp2::kernels
