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

// `attempt` (a construction that must throw GpuError) twice. The first failed allocation left 2 MiB
// less free on the H200 (results/gpu/check_h200_run4.log), held by nothing of ours (the builders'
// one cudaMalloc comes first); a second failure must cost nothing, so a leak of ours would show.
template <typename Attempt>
void check_refusal_leaves_memory(Attempt&& attempt) {
  const std::size_t before = free_device_bytes();
  CHECK_THROWS_AS(attempt(), kernels::GpuError);
  const std::size_t after_first = free_device_bytes();
  CHECK(before - after_first <= (std::size_t(4) << 20));
  CHECK_THROWS_AS(attempt(), kernels::GpuError);
  CHECK(free_device_bytes() == after_first);
}

}  // namespace dfmp2::testing
