// What a stage had to do, for its floor — the least time this machine needs for it: its
// GEMM-like work at the GEMM rate measured at start-up, plus libint2's own time for its
// integrals (measured on a sample of them).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "kernels/gemm_rate.hpp"

namespace dfmp2 {

struct StageWork {
  double flops_fp64 = 0.0, flops_fp32 = 0.0;
  double libint_seconds = 0.0;  // over all threads
  double gpu_seconds = 0.0;     // GEMM work on the GPU at its cuBLAS rate probed at start-up

  // `flops` of GEMM-like work run on a GPU whose cuBLAS rate probed at start-up is `gflops`.
  void add_gpu_flops(double flops, double gflops) { gpu_seconds += flops / (std::max(gflops, 1.0) * 1e9); }
  // fp64 GEMM-like work: on that GPU when `on_gpu`, else on the CPU threads.
  void add_fp64_flops(double flops, bool on_gpu, double gpu_gflops) {
    if (on_gpu)
      add_gpu_flops(flops, gpu_gflops);
    else
      flops_fp64 += flops;
  }

  StageWork& operator+=(const StageWork& other) {
    flops_fp64 += other.flops_fp64;
    flops_fp32 += other.flops_fp32;
    libint_seconds += other.libint_seconds;
    gpu_seconds += other.gpu_seconds;
    return *this;
  }
  // The work done between two readings of a running count (later − earlier).
  StageWork operator-(const StageWork& earlier) const {
    return {flops_fp64 - earlier.flops_fp64, flops_fp32 - earlier.flops_fp32, libint_seconds - earlier.libint_seconds,
            gpu_seconds - earlier.gpu_seconds};
  }
  double floor_seconds(const kernels::GemmRates& rates) const {
    return flops_fp64 / (rates.fp64_gflops * 1e9) + flops_fp32 / (rates.fp32_gflops * 1e9) +
           libint_seconds + gpu_seconds;
  }
};

// A part of a stage's wall time reported on its own row under the stage's (the ECP integrals of
// the integrals stage; the gradient's phases and ECP derivatives): seconds the stage's own include.
struct StagePart {
  std::string name;
  double seconds = 0.0;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `part`, adding its wall time to `parts` as `name`; returns what it returns.
template <typename Part>
auto timed_part(std::vector<StagePart>& parts, const char* name, Part&& part) {
  const auto start = std::chrono::steady_clock::now();
  auto product = part();
  parts.push_back({name, seconds_since(start)});
  return product;
}

}  // namespace dfmp2
