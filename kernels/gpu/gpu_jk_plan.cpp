#include "kernels/gpu/gpu_jk_plan.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace dfmp2::kernels {
namespace {

// A batch's squares and products take up to this much: batches of tens of Q for a thousand
// functions (SYRKs with k of thousands, near cuBLAS's peak) without holding more than the products
// need.
constexpr std::size_t kBatchBytes = std::size_t(1) << 30;
// Resident rows need room beside them for batches of at least this many Q (else streaming in
// larger batches computes faster than resident rows in tiny ones).
constexpr std::size_t kLeastResidentBatch = 8;

std::size_t x_bytes(const GpuJKPlan& p, std::size_t batch_q) {
  return gpu_aligned(sizeof(double) * p.nbf * p.factor_columns * std::max<std::size_t>(batch_q, 2));
}

// The plan's buffers for batches of batch_q.
GpuJKPlan with_batch(GpuJKPlan p, std::size_t batch_q) {
  p.batch_q = batch_q;
  p.rows_bytes = gpu_aligned(sizeof(double) * p.stored * (p.resident ? p.rows : batch_q));
  p.squares_bytes = gpu_aligned(sizeof(double) * p.nbf * p.nbf * batch_q);
  p.x_bytes = x_bytes(p, batch_q);
  p.fixed_bytes = gpu_jk_parts(p).total();
  return p;
}

}  // namespace

RowBatches row_batches(std::size_t rows, std::size_t per_q, std::size_t device_bytes,
                       const std::function<std::size_t(bool resident, std::size_t batch_q)>& bytes_at) {
  const std::size_t wanted = std::clamp<std::size_t>(kBatchBytes / std::max<std::size_t>(per_q, 1), 1,
                                                     std::max<std::size_t>(rows, 1));
  for (const bool resident : {true, false}) {
    const std::size_t batch =
        largest_fitting(wanted, [&](std::size_t b) { return bytes_at(resident, b) <= device_bytes; });
    if (!resident || batch >= std::min(wanted, kLeastResidentBatch)) return {resident, batch};
  }
  return {};
}

std::size_t largest_fitting(std::size_t most, const std::function<bool(std::size_t)>& fits) {
  std::size_t lo = 0, hi = most;
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

GpuJKParts gpu_jk_parts(const GpuJKPlan& p) {
  const std::size_t d = std::max<std::size_t>(p.densities, 1), n2 = p.nbf * p.nbf;
  const std::size_t factors = 2 * p.nbf * p.factor_columns;
  return {gpu_aligned(sizeof(double) * d * p.stored),       gpu_aligned(sizeof(double) * d * p.stored),
          gpu_aligned(sizeof(double) * d * n2),             gpu_aligned(sizeof(double) * d * p.batch_q),
          gpu_aligned(sizeof(double) * factors),            gpu_aligned(sizeof(float) * factors),
          gpu_aligned(sizeof(float) * n2),                  gpu_aligned(2 * sizeof(std::uint32_t) * p.stored)};
}

GpuJKPlan plan_gpu_jk(std::size_t nbf, std::size_t stored, std::size_t rows, std::size_t densities,
                      std::size_t device_bytes) {
  GpuJKPlan p;
  p.nbf = nbf;
  p.stored = stored;
  p.rows = rows;
  p.densities = densities;
  p.factor_columns = densities * nbf;
  const std::size_t per_q = sizeof(double) * nbf * (nbf + p.factor_columns);
  return batched_plan(p, per_q, device_bytes, with_batch, [&](std::size_t least) {
    return "GPU: the SCF's J/K builds need at least " + format_gib(least) + " of GPU memory (" + std::to_string(nbf) +
           " functions, " + std::to_string(stored) + " stored pairs), but " + format_gib(device_bytes) +
           " is given: raise --gpu-memory or use --device cpu";
  });
}

std::size_t gpu_jk_batch(const GpuJKPlan& plan, std::size_t columns, Precision precision) {
  const std::size_t element = precision == Precision::fp32 ? sizeof(float) : sizeof(double);
  const std::size_t per_q = element * plan.nbf * std::max<std::size_t>(columns, 1);
  const std::size_t batch = std::min(plan.batch_q, plan.x_bytes / per_q);
  if (batch == 0 || columns > 2 * plan.factor_columns)
    throw GpuError("GPU: a J/K build with " + std::to_string(columns) + " factor columns exceeds the " +
                   std::to_string(plan.factor_columns) + " its device memory was planned for");
  return batch;
}

std::vector<std::uint32_t> packed_coordinates(const BlockPackedLayout& layout) {
  if (layout.n() > std::numeric_limits<std::uint32_t>::max())
    throw GpuError("GPU: more functions than the unpack table's 32-bit indices hold");
  std::vector<std::uint32_t> table(2 * layout.size());
  for (std::size_t m = 0; m < layout.n(); ++m) {
    const std::size_t row = layout.row_offset(m);
    layout.for_each_run(m, [&](const BlockPackedLayout::Run& run) {
      for (std::size_t c = 0; c < run.count; ++c) {
        table[2 * (row + run.position + c)] = static_cast<std::uint32_t>(m);
        table[2 * (row + run.position + c) + 1] = static_cast<std::uint32_t>(run.col + c);
      }
    });
  }
  return table;
}

}  // namespace dfmp2::kernels
