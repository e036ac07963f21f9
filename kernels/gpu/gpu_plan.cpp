#include "kernels/gpu/gpu_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels {
namespace {

// A T_flat slot beyond this buys no GEMM speed (m and n are already thousands) and only holds memory.
constexpr std::size_t kMostTFlatBytes = std::size_t(8) << 30;

std::size_t element_bytes(Precision precision) { return precision == Precision::fp32 ? sizeof(float) : sizeof(double); }

// Orbital energies (rows' and columns' occupied and virtual), the fused pair list (every pair of
// two blocks) and tile list, the partial sums and the two totals.
std::size_t small_bytes(std::size_t nocc_max, std::size_t nvir_max, std::size_t block_occ) {
  const std::size_t tiles = nvir_max / kFusedTileEdge + 1;
  return 4 * gpu_aligned(sizeof(double) * std::max({nocc_max, nvir_max, block_occ})) +
         gpu_aligned(8 * block_occ * block_occ) + gpu_aligned(8 * tiles * tiles) +
         gpu_aligned(2 * sizeof(double) * kGpuMaxPartialSums) + gpu_aligned(2 * sizeof(double));
}

// The T_flat the loop backend's largest chunk would take, unconstrained, for blocks of `block` rows.
std::size_t wanted_t_flat(const std::vector<GpuSpin>& spins, std::size_t block, std::size_t elem) {
  std::size_t most = 0;
  const auto consider = [&](detail::PairShape shape, std::size_t nvir_rows, std::size_t nvir_cols) {
    const std::size_t pair = nvir_rows * nvir_cols * elem;
    if (pair == 0) return;
    most = std::max(most, detail::loop_chunk_pairs(shape, pair, kGpuMaxPartialSums * pair,
                                                   gpu_least_chunk_rows(nvir_rows)) * pair);
  };
  for (const GpuSpin& s : spins) {
    const std::size_t rows = std::min(block, s.nocc);
    consider({rows, rows, true}, s.nvir, s.nvir);
    if (block < s.nocc) consider({rows, rows, false}, s.nvir, s.nvir);
  }
  if (spins.size() == 2)
    consider({std::min(block, spins[0].nocc), std::min(block, spins[1].nocc), false}, spins[0].nvir, spins[1].nvir);
  return std::min(most, kMostTFlatBytes);
}

}  // namespace

std::size_t gpu_least_chunk_rows(std::size_t nvir) {
  constexpr std::size_t kLeastGemmRows = 1536;
  return (kLeastGemmRows + nvir - 1) / std::max<std::size_t>(nvir, 1);
}

std::size_t gpu_aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

std::string format_gib(std::size_t bytes) {
  char text[32];
  if (bytes < std::size_t(1) << 30)
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  else
    std::snprintf(text, sizeof text, "%.3f GiB", double(bytes) / double(1 << 30));
  return text;
}

Backend gpu_automatic_backend(Precision) { return Backend::loop; }

FusedKernel parse_fused_kernel(const std::string& name, const std::string& source) {
  if (name == "v1") return FusedKernel::v1;
  if (name == "v2") return FusedKernel::v2;
  throw std::invalid_argument(source + " is '" + name + "': the fused kernels are v1 and v2");
}

FusedKernel fused_kernel_from_environment() {
  static const FusedKernel kernel = [] {
    const char* value = std::getenv("DFMP2_FUSED_KERNEL");
    return value ? parse_fused_kernel(value, "DFMP2_FUSED_KERNEL") : FusedKernel::v1;
  }();
  return kernel;
}

std::size_t GpuEnergyPlan::t_flat_slot_bytes() const { return workspace_bytes / kTFlatSlots; }

GpuEnergyPlan plan_gpu_blocks(const std::vector<GpuSpin>& spins, std::size_t naux, Backend backend,
                              Precision precision, std::size_t device_bytes, std::size_t block_occ,
                              std::size_t visiting_occ) {
  GpuEnergyPlan plan;
  plan.backend = backend;
  plan.fused_kernel = fused_kernel_from_environment();
  plan.precision = precision;
  plan.naux = naux;
  for (const GpuSpin& s : spins) {
    plan.nvir_max = std::max(plan.nvir_max, s.nvir);
    plan.nocc_max = std::max(plan.nocc_max, s.nocc);
  }
  const std::size_t elem = element_bytes(precision);
  plan.resident = block_occ >= plan.nocc_max;
  plan.block_occ = std::max({std::size_t(1), visiting_occ, std::min(block_occ, plan.nocc_max)});
  // Resident: a slot per spin (and one for visiting chunks). Streamed: the rows' block, the
  // columns' block and the next columns' block, copied while the current pair computes.
  plan.slots = !plan.resident ? 3 : spins.size() == 1 && visiting_occ == 0 ? 1 : 2;
  plan.slot_bytes = gpu_aligned(plan.block_occ * plan.nvir_max * naux * elem);
  plan.partial_sums = kGpuMaxPartialSums;
  plan.small_bytes = small_bytes(plan.nocc_max, plan.nvir_max, plan.block_occ);
  if (backend == Backend::loop) {
    const std::size_t beside = plan.slots * plan.slot_bytes + plan.small_bytes;
    const std::size_t rest = device_bytes > beside ? device_bytes - beside : 0;
    // Each slot at least a few pair tiles, so that a chunk's GEMM is not a sliver.
    const std::size_t least = 8 * plan.nvir_max * plan.nvir_max * elem;
    plan.workspace_bytes =
        kTFlatSlots *
        gpu_aligned(std::max(least, std::min(rest / kTFlatSlots, wanted_t_flat(spins, plan.block_occ, elem))));
  }
  return plan;
}

GpuEnergyPlan plan_gpu_energy(const std::vector<GpuSpin>& spins, std::size_t naux, Backend backend,
                              Precision precision, std::size_t device_bytes, std::size_t visiting_occ) {
  if (backend != Backend::loop && backend != Backend::fused)
    throw GpuError("the GPU energy step runs the loop and fused backends, not " + to_string(backend));
  std::size_t nocc_max = 1;
  for (const GpuSpin& s : spins) nocc_max = std::max(nocc_max, s.nocc);
  const auto plan_for = [&](std::size_t block) {
    return plan_gpu_blocks(spins, naux, backend, precision, device_bytes, block, visiting_occ);
  };
  if (GpuEnergyPlan resident = plan_for(nocc_max); resident.device_bytes() <= device_bytes) return resident;
  if (plan_for(1).device_bytes() > device_bytes)
    throw GpuError("the GPU's memory for the energy step (" + format_gib(device_bytes) + ") cannot hold blocks of " +
                   std::to_string(std::max<std::size_t>(1, visiting_occ)) + " occupied orbital(s) of B_ia^P and the " +
                   to_string(backend) + " backend's workspace (" + format_gib(plan_for(1).device_bytes()) +
                   "): give more with --gpu-memory, or use --device cpu");
  std::size_t low = 1, high = nocc_max - 1;
  while (low < high) {
    const std::size_t mid = (low + high + 1) / 2;
    if (plan_for(mid).device_bytes() <= device_bytes) low = mid; else high = mid - 1;
  }
  return plan_for(low);
}

}  // namespace dfmp2::kernels
