// The GPU tests' check that a refused allocation leaves the GPU's memory as it was.
#pragma once

#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/gpu/gpu_plan.hpp"

namespace dfmp2::testing {

inline std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  return free;
}

// `attempt` (a construction that must throw GpuError) twice. The first failed allocation moved the
// driver's free count by 2 MiB on the H200, down in one run and up in the next (results/gpu/
// check_h200_run4.log, check_h200_run5.log), with nothing of ours held (the builders' one
// cudaMalloc comes first); a second failure must move nothing, so a leak of ours would show.
template <typename Attempt>
void check_refusal_leaves_memory(Attempt&& attempt) {
  const std::size_t before = free_device_bytes();
  CHECK_THROWS_AS(attempt(), kernels::GpuError);
  const std::size_t after_first = free_device_bytes();
  CHECK((before > after_first ? before - after_first : after_first - before) <= (std::size_t(4) << 20));
  CHECK_THROWS_AS(attempt(), kernels::GpuError);
  CHECK(free_device_bytes() == after_first);
}

}  // namespace dfmp2::testing
