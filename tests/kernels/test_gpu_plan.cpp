// The GPU energy step's device-memory plan (kernels/gpu/gpu_plan), which is made on the host
// before any CUDA call: testable without a GPU.
#include <catch2/catch.hpp>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/pair_schedule.hpp"

namespace k = dfmp2::kernels;

namespace {

constexpr std::size_t GiB = std::size_t(1) << 30;

// The medium synthetic shape's B: 64 × 448 × 1536 fp64 = 336 MiB.
const std::vector<k::GpuSpin> kMedium{{64, 448}};
constexpr std::size_t kMediumAux = 1536, kMediumBytes = std::size_t(64) * 448 * 1536 * 8;

}  // namespace

TEST_CASE("B fits the GPU: one slot holds it whole and each of T_flat's two slots takes the rows the loop backend wants") {
  const k::GpuEnergyPlan plan = k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::loop, k::Precision::fp64, 40 * GiB);
  CHECK(plan.resident);
  CHECK(plan.slots == 1);
  CHECK(plan.block_occ == 64);
  CHECK(plan.slot_bytes >= kMediumBytes);
  CHECK(plan.slot_bytes < kMediumBytes + 256);
  // The loop backend's chunks: 64/16 = 4 rows against their trapezoid, 4 × 64 pair tiles of 448²,
  // in each of the two slots (one GEMM writes while the other chunk is reduced).
  CHECK(plan.t_flat_slot_bytes() == std::size_t(4) * 64 * 448 * 448 * 8);
  CHECK(plan.workspace_bytes == 2 * plan.t_flat_slot_bytes());
  CHECK(plan.device_bytes() <= 40 * GiB);
}

TEST_CASE("B larger than the GPU's memory: the largest blocks whose three slots and workspace fit") {
  for (const k::Backend backend : {k::Backend::loop, k::Backend::fused}) {
    INFO(k::to_string(backend));
    const std::size_t budget = kMediumBytes / 2;  // half of B
    const k::GpuEnergyPlan plan = k::plan_gpu_energy(kMedium, kMediumAux, backend, k::Precision::fp64, budget);
    CHECK_FALSE(plan.resident);
    CHECK(plan.slots == 3);
    CHECK(plan.block_occ >= 1);
    CHECK(plan.block_occ < 11);  // three slots of a sixth of B would not leave room for the rest
    CHECK(plan.device_bytes() <= budget);
    if (backend == k::Backend::loop) {  // two T_flat slots of at least 8 pair tiles each
      CHECK(plan.workspace_bytes == 2 * plan.t_flat_slot_bytes());
      CHECK(plan.t_flat_slot_bytes() >= std::size_t(8) * 448 * 448 * 8);
    }
    const k::GpuEnergyPlan larger =
        k::plan_gpu_blocks(kMedium, kMediumAux, backend, k::Precision::fp64, budget, plan.block_occ + 1);
    CHECK(larger.device_bytes() > budget);
  }
}

TEST_CASE("fp32 halves the slots, UHF keeps each spin's B in its own slot, MPI's visiting chunks fit a slot") {
  const k::GpuEnergyPlan fp64 = k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::fused, k::Precision::fp64, 40 * GiB);
  const k::GpuEnergyPlan fp32 = k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::fused, k::Precision::fp32, 40 * GiB);
  CHECK(fp32.slot_bytes * 2 <= fp64.slot_bytes + 256);
  CHECK(fp64.workspace_bytes == 0);  // fused writes no T
  const k::GpuEnergyPlan uhf =
      k::plan_gpu_energy({{40, 300}, {38, 302}}, 900, k::Backend::loop, k::Precision::fp64, 40 * GiB);
  CHECK(uhf.resident);
  CHECK(uhf.slots == 2);
  CHECK(uhf.slot_bytes >= std::size_t(40) * 302 * 900 * 8);
  const k::GpuEnergyPlan mpi =
      k::plan_gpu_energy({{10, 300}}, 900, k::Backend::loop, k::Precision::fp64, 40 * GiB, 12);
  CHECK(mpi.slots == 2);
  CHECK(mpi.block_occ >= 12);
}

TEST_CASE("a GPU too small for one orbital's rows is refused with the sizes, and so is the reference backend") {
  CHECK_THROWS_WITH(k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::loop, k::Precision::fp64, 8 << 20),
                    Catch::Contains("cannot hold blocks of 1 occupied orbital") && Catch::Contains("--gpu-memory"));
  CHECK_THROWS_AS(k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::reference, k::Precision::fp64, 40 * GiB),
                  k::GpuError);
}

TEST_CASE("allyl's UHF tensors (12 × 55 and 11 × 56, naux 238) stream through 5 MiB in both precisions") {
  // The GPU test (tests/gpu/test_gpu_runs.cpp) streams them with --gpu-memory 5MiB.
  for (const k::Precision precision : {k::Precision::fp64, k::Precision::fp32})
    for (const k::Backend backend : {k::Backend::loop, k::Backend::fused}) {
      INFO(k::to_string(backend) << ", " << k::to_string(precision));
      const k::GpuEnergyPlan plan =
          k::plan_gpu_energy({{12, 55}, {11, 56}}, 238, backend, precision, std::size_t(5) << 20);
      CHECK_FALSE(plan.resident);
      CHECK(plan.device_bytes() <= std::size_t(5) << 20);
    }
}

TEST_CASE("the GPU's loop chunks of a streamed 16-row block have 4 rows (GEMMs of 1792 rows), the CPU's 1") {
  constexpr std::size_t pair = std::size_t(448) * 448 * 8, lots = std::size_t(1) << 40;
  CHECK(k::gpu_least_chunk_rows(448) == 4);  // the resident medium shape's 64/16 rows: unchanged
  CHECK(k::gpu_least_chunk_rows(672) == 3);  // the large shape's 96/16 = 6 rows stay
  const auto gpu = k::detail::plan_loop_chunks({16, 16, true}, pair, lots, k::gpu_least_chunk_rows(448));
  REQUIRE(gpu.size() == 4);
  for (const auto& c : gpu) {
    CHECK(c.i1 - c.i0 == 4);
    CHECK(c.j0 == 0);
    CHECK(c.j1 == c.i1);  // the trapezoid j < i1
  }
  CHECK(k::detail::plan_loop_chunks({16, 16, true}, pair, lots).size() == 16);
}

TEST_CASE("the fused kernel is named v1 or v2, another name is refused naming where it came from") {
  CHECK(k::parse_fused_kernel("v1", "DFMP2_FUSED_KERNEL") == k::FusedKernel::v1);
  CHECK(k::parse_fused_kernel("v2", "DFMP2_FUSED_KERNEL") == k::FusedKernel::v2);
  CHECK_THROWS_WITH(k::parse_fused_kernel("v3", "DFMP2_FUSED_KERNEL"),
                    "DFMP2_FUSED_KERNEL is 'v3': the fused kernels are v1 and v2");
  CHECK_THROWS_AS(k::parse_fused_kernel("", "--fused-kernels"), std::invalid_argument);
  // A plan takes the process's choice (v1 where DFMP2_FUSED_KERNEL is unset, as under ctest).
  const k::GpuEnergyPlan plan = k::plan_gpu_energy(kMedium, kMediumAux, k::Backend::fused, k::Precision::fp64, 40 * GiB);
  CHECK(plan.fused_kernel == k::fused_kernel_from_environment());
}
