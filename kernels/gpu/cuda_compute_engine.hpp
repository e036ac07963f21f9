// The compute seam's engine on an NVIDIA GPU: cuBLAS on device views (kernels/compute_engine.hpp),
// queued on one stream. CUDA-only header: included by the .cu files of a build with CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/compute_engine.hpp"

namespace dfmp2::kernels {

// Its own cuBLAS handle, every call queued asynchronously on `stream` (the legacy default stream
// when null) of the device current at construction: the caller orders and synchronises the
// stream. Failures throw GpuError naming the call. One engine serves one host thread at a time.
class CudaComputeEngine final : public ComputeEngine {
 public:
  explicit CudaComputeEngine(cudaStream_t stream = nullptr);
  ~CudaComputeEngine() override;
  CudaComputeEngine(const CudaComputeEngine&) = delete;
  CudaComputeEngine& operator=(const CudaComputeEngine&) = delete;

  Memory memory() const override { return Memory::device; }

 protected:
  void run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                double beta, const MatrixView<double>& C) override;
  void run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B,
                float beta, const MatrixView<float>& C) override;
  void run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                      const MatrixView<double>& C) override;
  void run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                      const MatrixView<float>& C) override;
  void run_symm_upper_left(double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                           double beta, const MatrixView<double>& C) override;
  void run_symm_upper_left(float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B, float beta,
                           const MatrixView<float>& C) override;
  void run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                       const MatrixView<double>& B) override;
  void run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                       const MatrixView<float>& B) override;

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace dfmp2::kernels
