// The device memory of the DF-SCF's J/K builds on a GPU (kernels/gpu/gpu_jk.hpp), planned on the
// host before any CUDA call (testable on a machine without a GPU). Resident: this rank's rows B^Q
// of the block-packed tensor are copied to the GPU on the first build and stay there; streamed:
// each build copies them again, a batch at a time, into a staging buffer. Either way a batch of Q
// is unpacked into a stack of full squares, X = B^Q L is one GEMM over the stack, and K gets one
// SYRK (or GEMM) over the batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/precision.hpp"

namespace dfmp2::kernels {

struct GpuJKPlan {
  std::size_t nbf = 0, stored = 0;  // the layout's n and stored elements
  std::size_t rows = 0;             // this rank's rows B^Q
  std::size_t densities = 0;        // of one build (RHF 1, UHF 2)
  std::size_t factor_columns = 0;   // most columns of a build's symmetric factors (a guess's: nbf each)
  bool resident = false;            // every row on the GPU, copied by the first build
  std::size_t batch_q = 0;          // rows B^Q per batch: the squares' stack
  std::size_t rows_bytes = 0;       // resident: all rows; streamed: one batch's staging
  std::size_t squares_bytes = 0;    // batch_q full squares (fp64)
  std::size_t x_bytes = 0;          // X = B^Q L of a batch at factor_columns (fp64), and at least 2
                                    // such Q: a non-symmetric build's L and R of as many columns
  std::size_t fixed_bytes = 0;      // J, K, densities, factors, γ, the unpack table
  std::size_t device_bytes() const { return rows_bytes + squares_bytes + x_bytes + fixed_bytes; }
};

// The fixed buffers' bytes (each a multiple of 256): J and the packed weighted densities (stored ×
// densities), K (nbf² per density), γ of a batch, the factors in fp64 and in fp32 (room for twice
// the symmetric columns: L and R of non-symmetric densities), K's fp32 batch, the unpack table.
struct GpuJKParts {
  std::size_t J = 0, D_weighted = 0, K = 0, gamma = 0, factors64 = 0, factors32 = 0, K32 = 0, table = 0;
  std::size_t total() const { return J + D_weighted + K + gamma + factors64 + factors32 + K32 + table; }
};
GpuJKParts gpu_jk_parts(const GpuJKPlan& plan);

// The largest n ≤ most with fits(n), fits true up to some n and false beyond (0: fits(1) is false).
std::size_t largest_fitting(std::size_t most, const std::function<bool(std::size_t)>& fits);

// How a plan over `rows` rows B^Q takes them: resident on the GPU or streamed, in batches of batch_q.
struct RowBatches {
  bool resident = false;
  std::size_t batch_q = 0;  // 0: not one Q streamed fits
};
// For a plan whose batch takes `per_q` bytes a Q and whose device memory is bytes_at(resident,
// batch_q): batches of up to 1 GiB (tens of Q for a thousand functions: products near cuBLAS's
// peak), resident when every row fits beside batches of 8 Q at least (else streaming in larger
// batches computes faster), else streamed in the largest batches that fit `device_bytes`.
RowBatches row_batches(std::size_t rows, std::size_t per_q, std::size_t device_bytes,
                       const std::function<std::size_t(bool resident, std::size_t batch_q)>& bytes_at);
// A plan with `rows` and `resident` whose buffers for batches of batch_q are with_batch(plan,
// batch_q) (the J/K builds' and the Z-vector responses' plans), taking its rows as row_batches
// says; GpuError(refusal(least)) when not even one Q streamed fits, least what that would need.
template <typename Plan, typename Refusal>
Plan batched_plan(Plan plan, std::size_t per_q, std::size_t device_bytes, Plan (*with_batch)(Plan, std::size_t),
                  const Refusal& refusal) {
  const RowBatches batches = row_batches(plan.rows, per_q, device_bytes, [&](bool resident, std::size_t batch_q) {
    Plan trial = plan;
    trial.resident = resident;
    return with_batch(trial, batch_q).device_bytes();
  });
  plan.resident = batches.resident;
  if (batches.batch_q == 0) throw GpuError(refusal(with_batch(plan, 1).device_bytes()));
  return with_batch(plan, batches.batch_q);
}

// The plan for these sizes in `device_bytes` of GPU memory: resident when the rows fit beside a
// batch of a few Q, else streamed in the largest batches that fit; GpuError naming the sizes when
// not even one Q streamed fits.
GpuJKPlan plan_gpu_jk(std::size_t nbf, std::size_t stored, std::size_t rows, std::size_t densities,
                      std::size_t device_bytes);

// Rows B^Q per batch of a build whose factors (L_s, and R_s of the non-symmetric ones) have
// `columns` columns in all, in `precision`: the plan's batch, or fewer when X would outgrow its
// buffer; GpuError when not one Q fits (more columns than the plan was made for).
std::size_t gpu_jk_batch(const GpuJKPlan& plan, std::size_t columns, Precision precision);

// The unpack table: for stored element p of the layout, its row m at [2p] and column k ≤ m at
// [2p + 1] (the element is B^Q_mk = B^Q_km).
std::vector<std::uint32_t> packed_coordinates(const BlockPackedLayout& layout);

}  // namespace dfmp2::kernels
