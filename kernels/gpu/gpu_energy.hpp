// The MP2 energy step on an NVIDIA GPU: the same pair spaces and backends as the CPU (loop: cuBLAS
// GEMMs of many pairs into T_flat blocks, then a strip-tiled reduction kernel; fused: one kernel
// that forms each (A,B)/(B,A) tile pair of T_ij on chip and reduces it, never writing T).
// A GpuEnergyEngine lives for the energy step: its cuBLAS handle, streams and device buffers are
// made once, sized by its GpuEnergyPlan, and every pair-space call reuses them. B comes from host
// memory in pieces of occupied rows, copied while earlier work computes; blocks stay on the device
// between calls when the caller says its host rows do not change (B resident).
// Host-only header: it compiles without CUDA, and a build without CUDA reports why no GPU runs.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/mp2_energy.hpp"

namespace dfmp2::kernels {

namespace detail {
template <typename Real>
struct PairSpace;
}


// Why this process cannot use a GPU ("" when it can): built without CUDA, no NVIDIA driver, no
// device. Cheap where there is no driver: CUDA is not initialised then.
std::string gpu_unavailable_reason();
// The device this process uses (under MPI, local rank modulo the devices). Throws GpuError.
GpuProperties gpu_properties();

// cuBLAS's rate (GFLOP/s) on this process's GPU for row-major C (m × n) = A Bᵀ, k columns, in
// `precision`: the best of `repeats` after a warm-up, on random data in device memory it frees
// again. The GPU energy step's floor is its needed flops at this rate.
double gpu_gemm_gflops(Precision precision, std::size_t m, std::size_t n, std::size_t k, int repeats = 3);

class GpuEnergyEngine {
 public:
  // Takes the plan's device memory at once: GpuError (with the bytes) when it is not free.
  explicit GpuEnergyEngine(const GpuEnergyPlan& plan);
  ~GpuEnergyEngine();
  GpuEnergyEngine(const GpuEnergyEngine&) = delete;
  GpuEnergyEngine& operator=(const GpuEnergyEngine&) = delete;

  // One pair space with backend loop or fused (the dispatcher resolves automatic): e_os, e_ss,
  // and for loop the GEMM and reduction times (device events; each chunk's reduction runs beside
  // the next chunk's GEMM, so the two may add up to more than the call). Blocks larger than the
  // plan's are refused (std::invalid_argument).
  template <typename Real>
  EnergyResult energy(Backend backend, const detail::PairSpace<Real>& pairs, const EnergyOptions& options);

  std::size_t uploaded_bytes() const;  // host → device, over the engine's life

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dfmp2::kernels
