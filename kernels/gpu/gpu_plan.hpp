// The GPU energy step's device memory, planned on the host before any CUDA call (testable on a
// machine without a GPU): slots for blocks of B_ia^P's occupied rows, the backend's workspace and
// small arrays. Resident: each spin's whole B has a slot and is copied once; else blocks of
// block_occ rows stream from host memory through three slots (the rows and the columns of a pair
// space, and the next columns, copied while the current pair computes).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/mp2_energy.hpp"

namespace dfmp2::kernels {

// A GPU that cannot be used, a plan that does not fit it, or a CUDA call that failed: one line
// that names the call or the sizes.
class GpuError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct GpuProperties {
  int index = 0;              // the CUDA device this process uses
  std::string name;           // e.g. "NVIDIA H100 80GB HBM3"
  int multiprocessors = 0;
  int compute_major = 0, compute_minor = 0;
  std::size_t total_bytes = 0, free_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // as CUDA encodes them: 13000 is 13.0
};

struct GpuSpin {
  std::size_t nocc = 0, nvir = 0;  // the occupied rows this process sums (its share), virtuals
};

// The fused backend's fp64 kernel: v1, fused_pairs_dmma (energy_kernels.cuh, m8n8k4 DMMA), or v2,
// fused_tiles_f64 (fused_tiles.cuh, m16n8k8 DMMA, three copy stages; not yet run on a GPU). fp32
// has one fused kernel.
enum class FusedKernel { v1, v2 };

// "v1" or "v2"; another name is std::invalid_argument naming it and `source` (where it was given).
FusedKernel parse_fused_kernel(const std::string& name, const std::string& source);
// DFMP2_FUSED_KERNEL: v1 (also when unset) or v2, read once per process.
FusedKernel fused_kernel_from_environment();

struct GpuEnergyPlan {
  Backend backend = Backend::loop;  // loop or fused
  FusedKernel fused_kernel = FusedKernel::v1;  // plan_gpu_blocks: fused_kernel_from_environment()
  Precision precision = Precision::fp64;
  std::size_t naux = 0, nvir_max = 0, nocc_max = 0;
  bool resident = false;            // each spin's B in a slot of its own, uploaded once
  std::size_t slots = 2;            // 1 for a resident RHF tensor, 3 when streamed
  std::size_t block_occ = 0;        // occupied rows a slot holds
  std::size_t slot_bytes = 0;       // each slot
  std::size_t workspace_bytes = 0;  // loop: T_flat, kTFlatSlots slots of t_flat_slot_bytes()
  std::size_t partial_sums = 0;     // per-pair (loop) or per-tile (fused) energy sums per launch
  std::size_t small_bytes = 0;      // orbital energies, pair and tile lists, the partial sums
  std::size_t device_bytes() const { return slots * slot_bytes + workspace_bytes + small_bytes; }
  std::size_t t_flat_slot_bytes() const;
};

// The loop backend's T_flat slots: chunk k + 1's GEMM writes one while chunk k's reduction reads
// the other on a second stream.
inline constexpr std::size_t kTFlatSlots = 2;

// Most blocks one fused launch or pairs one loop chunk sum (their partial sums' array).
inline constexpr std::size_t kGpuMaxPartialSums = std::size_t(1) << 18;
// The fused kernel's tile edge (virtuals) in each precision.
inline constexpr std::size_t kFusedTileEdge = 64;

// Rows a triangular loop chunk may have on the GPU, for `nvir` virtuals (plan_loop_chunks'
// least_rows): its GEMM at least 1536 rows (m = rows·nvir), so that even a first chunk (n = m)
// has 24 × 12 = 288 of cuBLAS's 64 × 128 tiles, a wave at two per SM on 132 SMs (ncu, H200);
// blocks of 16 rows would otherwise run 1-row chunks of 448 × 448·i GEMMs.
std::size_t gpu_least_chunk_rows(std::size_t nvir);

// Bytes rounded up to a multiple of 256: every device buffer carved from one block stays aligned.
std::size_t gpu_aligned(std::size_t bytes);

// Bytes as GiB with three decimals ("1.500 GiB"), below a GiB as MiB with one ("1.5 MiB"), for
// the GPU's error lines.
std::string format_gib(std::size_t bytes);

// The backend `automatic` runs on the GPU.
Backend gpu_automatic_backend(Precision precision);

// The plan for these spins' shares in `device_bytes` of device memory, over MPI with chunks of
// `visiting_occ` rows arriving from other ranks (0: one rank), which a slot must hold too.
// Resident when it fits, else the largest blocks that do; GpuError naming the sizes when one
// orbital's rows do not.
GpuEnergyPlan plan_gpu_energy(const std::vector<GpuSpin>& spins, std::size_t naux, Backend backend,
                              Precision precision, std::size_t device_bytes, std::size_t visiting_occ = 0);

// The plan with slots of `block_occ` rows (at least visiting_occ).
GpuEnergyPlan plan_gpu_blocks(const std::vector<GpuSpin>& spins, std::size_t naux, Backend backend,
                              Precision precision, std::size_t device_bytes, std::size_t block_occ,
                              std::size_t visiting_occ = 0);

}  // namespace dfmp2::kernels
