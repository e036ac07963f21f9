// The GPU tests' runner: without a usable GPU they are skipped (exit 77, which CTest reports as
// skipped, with the reason), never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "kernels/gpu/gpu_energy.hpp"

int main(int argc, char* argv[]) {
  if (const std::string reason = dfmp2::kernels::gpu_unavailable_reason(); !reason.empty()) {
    std::printf("SKIPPED: no usable GPU: %s\n", reason.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
