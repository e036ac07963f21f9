// Whole runs with the energy step on the GPU against the same prepared run's CPU step and Psi4's
// energies (tests/reference): RHF, frozen core, a UHF radical, fp32, and B streamed through a
// small --gpu-memory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "src/run/driver.hpp"
#include "tests/gpu/device_runs.hpp"
#include "tests/src/psi4_case.hpp"

using namespace dfmp2;

namespace {

constexpr double kFp64Relative = 1e-10, kFp32Absolute = 1e-7, kPsi4Tolerance = 1e-7;

// The repository: DFMP2_SOURCE_DIR in the environment (a bundle run elsewhere), else where it was built.
std::string source_dir() {
  const char* env = std::getenv("DFMP2_SOURCE_DIR");
  return env && *env ? env : DFMP2_SOURCE_DIR;
}

void check_parts(const RunResult& gpu, const RunResult& cpu, bool fp32) {
  CHECK(gpu.device == kernels::Device::gpu);
  CHECK(cpu.device == kernels::Device::cpu);
  for (const auto part : {&RunResult::e_corr, &RunResult::e_os, &RunResult::e_ss, &RunResult::e_aa, &RunResult::e_bb})
    CHECK(std::abs(gpu.*part - cpu.*part) <= (fp32 ? kFp32Absolute : kFp64Relative * std::abs(cpu.*part)));
}

// Whether the energy step's plan streamed B to the GPU in blocks (else it was resident).
bool energy_plan_streams(const RunResult& r) {
  return testing::planned_gpu_block(r, "energy", "streamed") != nullptr;
}

// Every GPU backend and precision beside the CPU's, on one prepared run; the fp64 ones against Psi4.
void check_case(const std::string& file, const std::string& name, std::size_t gpu_memory = 0) {
  INFO(name << (gpu_memory ? ", --gpu-memory " + std::to_string(gpu_memory) : std::string()));
  const nlohmann::json ref = testing::psi4_case(source_dir(), file, name);
  RunInput input;
  RunOptions options = testing::psi4_case_options(source_dir(), ref, input);
  options.gpu_memory_bytes = gpu_memory;
  Progress quiet(true);
  PreparedRun prepared(input, options, quiet);
  for (const kernels::Precision precision : {kernels::Precision::fp64, kernels::Precision::fp32}) {
    const RunResult cpu = prepared.energy(kernels::Backend::fused, precision, kernels::Device::cpu);
    for (const kernels::Backend backend : {kernels::Backend::loop, kernels::Backend::fused, kernels::Backend::automatic}) {
      INFO(kernels::to_string(backend) << ", " << kernels::to_string(precision));
      const RunResult gpu = prepared.energy(backend, precision, kernels::Device::gpu);
      check_parts(gpu, cpu, precision == kernels::Precision::fp32);
      if (precision == kernels::Precision::fp64) CHECK(std::abs(gpu.e_corr - ref["e_corr"].get<double>()) < kPsi4Tolerance);
      CHECK(energy_plan_streams(gpu) == (gpu_memory > 0));
    }
  }
}

}  // namespace

TEST_CASE("water, all electrons and frozen core: the GPU's energies are the CPU's and Psi4's", "[gpu]") {
  check_case("psi4_energies.json", "water-cc-pvdz-df-ae");
  check_case("psi4_energies.json", "water-cc-pvdz-df-fc");
}

TEST_CASE("the naphthalene dimer on the GPU, B resident and B streamed in blocks", "[gpu]") {
  check_case("psi4_energies.json", "naphthalene-dimer-cc-pvdz-df-ae");
  check_case("psi4_energies.json", "naphthalene-dimer-cc-pvdz-df-ae", std::size_t(64) << 20);
}

TEST_CASE("UHF radicals on the GPU: allyl resident and streamed, frozen-core dioxygen", "[gpu]") {
  check_case("psi4_uhf_energies.json", "allyl-cc-pvdz-df-ae");
  // Both spins' B take 2.9 MB in fp64, 1.4 MB in fp32; the partial sums alone 4 MiB: 5 MiB streams
  // both precisions (tests/kernels/test_gpu_plan.cpp checks that plan).
  check_case("psi4_uhf_energies.json", "allyl-cc-pvdz-df-ae", std::size_t(5) << 20);
  check_case("psi4_uhf_energies.json", "dioxygen-cc-pvdz-df-fc");
}
