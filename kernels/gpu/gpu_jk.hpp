// The DF-SCF's Coulomb and exchange matrices on an NVIDIA GPU, with PackedJK's contract
// (kernels/packed_jk.hpp: begin, add rows B^Q, finish) and results. Per batch of Q on one stream,
// without host synchronisation: a kernel unpacks the block-packed rows into a stack of full
// squares S (batch·nbf × nbf, B^Q's rows at q·nbf), X_s = S L_s is one GEMM over the stack — read
// as nbf × batch·columns it is [B^Q L_s]_Q side by side — and K_s += X_s X_sᵀ one SYRK (or
// X_L X_Rᵀ one GEMM); γ = Bᵀ D_w and J += B γ are two GEMMs over the packed rows. K's products run
// in the build's precision (fp32: the SCF's early iterations), summed in double as on the CPU; J
// always in double. The rows stay on the GPU between builds when the plan makes them resident.
// J and K come back once per build, in finish().
// Host-only header: it compiles without CUDA; a build without CUDA refuses to make one.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "kernels/gpu/gpu_jk_plan.hpp"
#include "kernels/packed_jk.hpp"

namespace dfmp2::kernels {

class GpuJK {
 public:
  // Takes the plan's device memory at once: GpuError (with the bytes) when it cannot.
  GpuJK(const BlockPackedLayout& layout, const GpuJKPlan& plan);
  ~GpuJK();
  GpuJK(const GpuJK&) = delete;
  GpuJK& operator=(const GpuJK&) = delete;

  // Starts J and K of each density (at most the plan's densities; the factors are copied).
  void begin(std::span<const DensityFactors> densities, Precision precision);
  // Adds rows first … first + count − 1 of this rank's rows (each layout.size() elements, row q at
  // rows + q·layout.size()). Resident rows are copied the first time they are added, and must not
  // change afterwards; the host rows may be reused once add returns.
  void add(std::size_t first, const double* rows, std::size_t count);
  // J_s and K_s (column-major nbf × nbf, overwritten), one pointer per density.
  void finish(std::span<double* const> J, std::span<double* const> K);

  std::size_t uploaded_bytes() const;  // rows B^Q copied to the GPU, over its life

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace dfmp2::kernels
