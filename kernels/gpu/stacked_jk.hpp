// The GPU J/K build's logic on the host (kernels/gpu/gpu_jk.hpp), apart from CUDA: what lives in
// the device memory, what is copied when, the batches and the products, run through a JKDevice —
// the CUDA one in gpu_jk.cu, or a host stand-in that the CPU tests use to check it all against
// PackedJK on machines without a GPU.
//
// Per batch of nq rows B^Q (in device memory): the device unpacks them into a stack S of full
// squares, an (ld = batch_q·nbf) × nbf column-major matrix whose rows q·nbf … q·nbf + nbf − 1 are
// B^Q's; X_f = S_{nq·nbf rows} F (F: a factor L_s or R_s, nbf × c) is one GEMM, and X_f, read as
// an nbf × nq·c matrix (ld nbf), holds B^Q F side by side for the batch's Q, so that
// K_s += X_L X_Rᵀ = Σ_Q (B^Q L_s)(B^Q R_s)ᵀ is one SYRK (R = L) or GEMM over the batch.
// γ (nq × densities) = Bᵀ D_w and J (stored × densities) += B γ are two GEMMs over the packed rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/amplitude_block.hpp"
#include "kernels/gpu/gpu_jk_plan.hpp"
#include "kernels/packed_jk.hpp"

namespace dfmp2::kernels {

// Where a StackedJK's (and the DF transform's StackedTransform's, and OffloadEngine's and the
// gradient's closed-shell amplitudes') buffers live and its work runs:
// one block of memory, copies and kernels queued in order (one stream), and an engine on that
// memory and queue.
class JKDevice {
 public:
  virtual ~JKDevice() = default;
  virtual ComputeEngine& engine() = 0;
  // The plan's device_bytes(), 256-byte aligned.
  virtual char* memory() = 0;
  // Queued copies: the host side of copy_to may be reused once it returns (pinned host memory:
  // once synchronise() has returned); copy_from's is written by synchronise().
  virtual void copy_to(void* device, const void* host, std::size_t bytes) = 0;
  virtual void copy_from(void* host, const void* device, std::size_t bytes) = 0;
  // The same for a column-major matrix: host's elements to or from `device`, packed there with
  // leading dimension host.rows.
  virtual void copy_matrix_to(double* device, MatrixView<const double> host) = 0;
  virtual void copy_matrix_from(MatrixView<double> host, const double* device) = 0;
  virtual void zero(void* device, std::size_t bytes) = 0;
  // Waits for everything queued.
  virtual void synchronise() = 0;
  // Page-locks host memory copied again and again, so that its copies run at the link's full rate,
  // until unpin (after the copies queued from or to it) or until the device goes; where it cannot,
  // its copies stay pageable. The memory must outlive its pin. unpin does not throw.
  virtual void pin(const void* host, std::size_t bytes) = 0;
  virtual void unpin(const void* host) = 0;
  // stack[m + nbf·q + ld·k] = stack[k + nbf·q + ld·m] = rows[q·stored + p], (m, k) = table[2p],
  // table[2p + 1], for q < nq and p < stored, converted to the stack's precision.
  virtual void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                      std::size_t nbf, std::size_t ld, double* stack) = 0;
  virtual void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                      std::size_t nbf, std::size_t ld, float* stack) = 0;
  // to += from (nbf × nbf, column-major), only where row ≥ column when lower_only.
  virtual void add_fp32(const float* from, double* to, std::size_t nbf, bool lower_only) = 0;
  // A block of the gradient's closed-shell amplitudes and their pair energies (ClosedShellBlock).
  virtual void closed_shell_amplitudes(const ClosedShellBlock& block) = 0;
  // One occupied orbital's open-shell amplitudes with every i of a spin, and their pair energies
  // (OpenShellBlock).
  virtual void open_shell_amplitudes(const OpenShellBlock& block) = 0;
};

// Hands out consecutive pieces of one block of device memory.
class DeviceCarver {
 public:
  explicit DeviceCarver(char* base) : next_(base) {}
  template <typename T>
  T* take(std::size_t bytes) {
    T* piece = reinterpret_cast<T*>(next_);
    next_ += bytes;
    return piece;
  }

 private:
  char* next_;
};

// The CUDA device (kernels/gpu/gpu_jk.cu): `bytes` of GPU memory taken at once, one stream, a
// cuBLAS engine. GpuError naming `purpose` ("the SCF's J/K builds") when the memory cannot be
// had; a build without CUDA refuses.
std::unique_ptr<JKDevice> make_cuda_device(std::size_t bytes, const std::string& purpose);

class StackedJK {
 public:
  // Carves the plan's buffers out of device.memory(), copies the unpack table, zeroes the stack.
  StackedJK(const BlockPackedLayout& layout, const GpuJKPlan& plan, JKDevice& device);
  StackedJK(const StackedJK&) = delete;
  StackedJK& operator=(const StackedJK&) = delete;

  // As GpuJK's (kernels/gpu/gpu_jk.hpp).
  void begin(std::span<const DensityFactors> densities, Precision precision);
  void add(std::size_t first, const double* rows, std::size_t count);
  void finish(std::span<double* const> J, std::span<double* const> K);
  std::size_t uploaded_bytes() const { return uploaded_; }

 private:
  // A density's factors: offsets (elements) of L and R in the factor buffer, their columns.
  struct Factor {
    std::size_t left = 0, right = 0, columns = 0;
    bool symmetric = true;
  };
  template <typename Real>
  MatrixView<Real> view(Real* data, std::size_t rows, std::size_t cols, std::size_t ld) const {
    return {data, rows, cols, ld, engine_.memory()};
  }
  void copy_factors(std::span<const DensityFactors> densities);
  void copy_densities(std::span<const DensityFactors> densities);
  void prepare_stack();
  // Rows first … first + count − 1 in device memory: resident (copied the first time), or copied
  // into the staging buffer batch by batch; each batch added.
  void add_resident(std::size_t first, const double* rows, std::size_t count);
  void add_streamed(const double* rows, std::size_t count);
  void add_batch(const double* B, std::size_t nq);
  void add_coulomb(const double* B, std::size_t nq);
  template <typename Real>
  void add_exchange(const double* B, std::size_t nq);
  template <typename Real>
  void add_product(std::size_t s, const Real* X_left, const Real* X_right, std::size_t k);

  const BlockPackedLayout& layout_;
  GpuJKPlan plan_;
  JKDevice& device_;
  ComputeEngine& engine_;
  // Device buffers.
  double *rows_ = nullptr, *J_ = nullptr, *D_weighted_ = nullptr, *K_ = nullptr, *gamma_ = nullptr;
  double* factors64_ = nullptr;
  float *factors32_ = nullptr, *K32_ = nullptr;
  void *stack_ = nullptr, *X_ = nullptr;
  std::uint32_t* table_ = nullptr;
  std::vector<char> loaded_;  // resident: rows already on the device
  std::size_t uploaded_ = 0;
  bool stack_zero_ = true;  // the stack holds only zeros (else stored elements as stack_precision_)
  Precision stack_precision_ = Precision::fp64;
  // The build.
  Precision precision_ = Precision::fp64;
  std::vector<Factor> factors_;
  std::size_t batch_ = 0;
  // Host copies the queued copies read or write (kept until the next synchronisation at least).
  std::vector<std::uint32_t> table_host_;
  std::vector<double> D_host_, factors64_host_, J_host_, K_host_;
  std::vector<float> factors32_host_;
};

}  // namespace dfmp2::kernels
