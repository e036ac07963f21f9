// The DF transform's (Q|ia) = Σ_μν C_μi (Q|μν) C_νa on a GPU, its logic on the host apart from CUDA
// (as StackedJK's, kernels/gpu/stacked_jk.hpp), run through a JKDevice: the CUDA one, or the CPU
// tests' host stand-in that checks it against the CPU transform on machines without a GPU.
//
// Per batch of nq rows (Q|μν), block-packed as the J/K's: the rows are copied to the device and
// unpacked (the J/K's unpack kernel) into a stack S of full squares, (batch_q·nbf) × nbf with
// (Q|μν)'s rows at q·nbf; X = S C_occ (every spin's occupied orbitals side by side) is one GEMM
// over the stack, and per Q and spin (Q|ia) = C_virᵀ X_Q, one GEMM each into a device buffer of
// the batch's rows, copied back once per batch. The host waits once per call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/gpu/stacked_jk.hpp"

namespace dfmp2::kernels {

// The transform's device memory, planned on the host before any CUDA call.
struct GpuTransformPlan {
  std::size_t nbf = 0, stored = 0;
  std::size_t nocc_all = 0;      // every spin's occupied orbitals
  std::size_t nvir_all = 0;      // every spin's virtual orbitals (at most: the SCF may remove some)
  std::size_t nov_all = 0;       // every spin's occupied × virtual (at most)
  std::size_t batch_q = 0;       // rows (Q|μν) per batch
  std::size_t rows_bytes = 0;    // a batch's packed rows
  std::size_t squares_bytes = 0; // a batch's full squares
  std::size_t x_bytes = 0;       // a batch's X = (Q|μν) C_occ
  std::size_t out_bytes = 0;     // a batch's (Q|ia)
  std::size_t fixed_bytes = 0;   // the orbitals and the unpack table
  std::size_t device_bytes() const { return rows_bytes + squares_bytes + x_bytes + out_bytes + fixed_bytes; }
};

// Batches of at most `most_q` rows (the transform's calls take no more), the largest that fit
// `device_bytes` up to about 1 GiB of squares and products; GpuError naming the sizes when not
// one row fits.
GpuTransformPlan plan_gpu_transform(std::size_t nbf, std::size_t stored, std::size_t nocc_all, std::size_t nvir_all,
                                    std::size_t nov_all, std::size_t most_q, std::size_t device_bytes);

// One spin's orbitals: column-major nbf × nocc and nbf × nvir.
struct TransformOrbitals {
  const double* C_occ = nullptr;
  std::size_t nocc = 0;
  const double* C_vir = nullptr;
  std::size_t nvir = 0;
};

class StackedTransform {
 public:
  // Carves the plan's buffers out of device.memory(), copies the orbitals and the unpack table,
  // zeroes the stack; std::invalid_argument when the plan is for another layout or fewer orbitals.
  StackedTransform(const BlockPackedLayout& layout, const GpuTransformPlan& plan, std::span<const TransformOrbitals> spins,
                   JKDevice& device);
  StackedTransform(const StackedTransform&) = delete;
  StackedTransform& operator=(const StackedTransform&) = delete;

  // As OccupiedVirtualTransform's (src/mp2/df_transform.hpp): rows [nq][row_elements()] of `out`,
  // spin s's row-major [i][a] from offset(s), from nq rows of (Q|μν) at `ao`.
  void operator()(const double* ao, std::size_t nq, double* out);
  std::size_t row_elements() const { return nov_all_; }
  std::size_t offset(std::size_t spin) const { return spins_[spin].ov_offset; }

 private:
  struct Spin {
    std::size_t nocc = 0, nvir = 0, occ_offset = 0, vir_offset = 0, ov_offset = 0;
  };
  void run_batch(const double* ao, std::size_t nq, double* out);

  GpuTransformPlan plan_;
  JKDevice& device_;
  ComputeEngine& engine_;
  std::vector<Spin> spins_;
  std::size_t nov_all_ = 0;
  // Device buffers.
  double *rows_ = nullptr, *stack_ = nullptr, *X_ = nullptr, *out_ = nullptr, *C_occ_ = nullptr, *C_vir_ = nullptr;
  std::uint32_t* table_ = nullptr;
  // Host copies the constructor's queued copies read.
  std::vector<std::uint32_t> table_host_;
  std::vector<double> C_occ_host_, C_vir_host_;
};

}  // namespace dfmp2::kernels
