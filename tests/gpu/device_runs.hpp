// Whole runs of one of tests/reference's Psi4 cases, once with --device cpu and once with --device
// gpu, for the tests that compare the two devices' energies.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "src/run/driver.hpp"
#include "tests/src/psi4_case.hpp"

namespace dfmp2::testing {

// The repository: DFMP2_SOURCE_DIR in the environment (a bundle run elsewhere), else where it was built.
inline std::string gpu_tests_source_dir() {
  const char* env = std::getenv("DFMP2_SOURCE_DIR");
  return env && *env ? env : DFMP2_SOURCE_DIR;
}

struct DeviceRuns {
  nlohmann::json ref;  // the Psi4 case
  RunResult cpu, gpu;
};

// The SCF converged to an orbital gradient of d_convergence on both devices; gpu_memory 0: the default.
inline DeviceRuns run_on_both_devices(const std::string& file, const std::string& name, double d_convergence,
                                      std::size_t gpu_memory = 0) {
  DeviceRuns runs;
  runs.ref = psi4_case(gpu_tests_source_dir(), file, name);
  RunInput input;
  RunOptions options = psi4_case_options(gpu_tests_source_dir(), runs.ref, input);
  options.gpu_memory_bytes = gpu_memory;
  options.scf.d_convergence = d_convergence;
  Progress quiet(true);
  options.device = kernels::Device::cpu;
  runs.cpu = run(input, options, quiet);
  options.device = kernels::Device::gpu;
  runs.gpu = run(input, options, quiet);
  return runs;
}

// The first block of `stage`'s memory plan held on the GPU whose name holds `words` (null: none).
inline const PlannedBlock* planned_gpu_block(const RunResult& r, const std::string& stage, const std::string& words) {
  for (const StagePlan& planned : r.memory_plan)
    if (planned.stage == stage)
      for (const PlannedBlock& block : planned.blocks)
        if (block.on_gpu && block.what.find(words) != std::string::npos) return &block;
  return nullptr;
}

}  // namespace dfmp2::testing
