// Whole DF-MP2 gradient runs with the SCF's J/K builds, the amplitude loop's products and the
// Z-vector's on the GPU (--gradient --device gpu) against the same runs on the CPU and Psi4
// 1.3.2's gradients (tests/reference): RHF water, frozen core, a UHF radical, and uracil with B's
// rows resident and streamed through a small --gpu-memory; each also with its amplitudes made on
// the GPU (DFMP2_GPU_AMPLITUDES=1).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include "src/run/driver.hpp"
#include "tests/gpu/device_runs.hpp"
#include "tests/src/psi4_case.hpp"

using namespace dfmp2;

namespace {

// GPU against CPU, each run its own SCF to d_convergence 1e-10 (allyl 1e-12: its E_corr moves
// 6.9e-10 Eh between the two on the CPU alone, and the GPU's run was 3.7e-10 apart at 1e-10 in
// results/gpu/check_h200_run6.log, as the energy tests found): two CPU runs' gradients differ by
// up to 2.1e-10 Eh/bohr (tests/src/test_gradient.cpp, the engine test), the energies as the energy
// step's tests (1e-10 relative); Psi4 as tests/src/test_gradient.cpp's 8e-9 Eh/bohr and 1e-9 Eh.
constexpr double kDevicesGradient = 1e-9, kDevicesRelative = 1e-10, kPsi4Gradient = 8e-9, kPsi4Total = 1e-9;

// The GPU's run against the CPU's: a GPU run that copied something there, held B's rows resident
// (or streamed them, with a --gpu-memory given), and gave the CPU's gradient and energy.
void check_against_cpu(const RunResult& gpu, const RunResult& cpu, const std::string& name, std::size_t gpu_memory) {
  INFO(name << ", --gpu-memory " << gpu_memory);
  REQUIRE(cpu.gradient.has_value());
  REQUIRE(gpu.gradient.has_value());
  CHECK(gpu.device == kernels::Device::gpu);
  REQUIRE(gpu.gpu.has_value());
  CHECK(gpu.gpu->uploaded_bytes > 0);
  const bool streamed = gpu_memory > 0;
  CHECK((testing::planned_gpu_block(gpu, "gradient", "resident") != nullptr) == !streamed);
  CHECK((testing::planned_gpu_block(gpu, "gradient", "streamed") != nullptr) == streamed);
  // The SCF's J/K builds on the GPU too, and the Z-vector's products where their kept B^Q C_o fit
  // (not in a small --gpu-memory).
  CHECK(testing::planned_gpu_block(gpu, "scf", "DF-SCF tensor") != nullptr);
  for (const StagePlan& stage : gpu.memory_plan)
    if (stage.stage == "gradient" && !streamed) CHECK(stage.note.find("then the Z-vector's") != std::string::npos);
  const double apart = (*gpu.gradient - *cpu.gradient).cwiseAbs().maxCoeff();
  std::printf("%s%s: GPU gradient %.2e Eh/bohr from the CPU's, E_corr %.2e Eh apart, %zu bytes copied\n", name.c_str(),
              streamed ? " (streamed)" : "", apart, std::abs(gpu.e_corr - cpu.e_corr), gpu.gpu->uploaded_bytes);
  CHECK(apart <= kDevicesGradient);
  CHECK(std::abs(gpu.e_corr - cpu.e_corr) <= kDevicesRelative * std::abs(cpu.e_corr));
}

// DFMP2_GPU_AMPLITUDES=1 while it lives: the amplitudes made on the GPU (read when a run plans).
class AmplitudesMadeOnGpu {
 public:
  AmplitudesMadeOnGpu() { setenv("DFMP2_GPU_AMPLITUDES", "1", 1); }
  AmplitudesMadeOnGpu(const AmplitudesMadeOnGpu&) = delete;
  AmplitudesMadeOnGpu& operator=(const AmplitudesMadeOnGpu&) = delete;
  ~AmplitudesMadeOnGpu() { unsetenv("DFMP2_GPU_AMPLITUDES"); }
};

// The case's gradient on the CPU, then on the GPU with each --gpu-memory (0: the default), each
// checked against the CPU's; each also with its amplitudes made on the GPU (where their room
// fits: always at the default --gpu-memory); the GPU's runs.
std::vector<RunResult> check_devices(const std::string& file, const std::string& name,
                                     const std::vector<std::size_t>& gpu_memories = {0}, double d_convergence = 1e-10) {
  const nlohmann::json ref = testing::psi4_case(testing::gpu_tests_source_dir(), file, name);
  RunInput input;
  RunOptions options = testing::psi4_case_options(testing::gpu_tests_source_dir(), ref, input);
  options.gradient = true;
  options.scf.d_convergence = d_convergence;
  Progress quiet(true);
  options.device = kernels::Device::cpu;
  const RunResult cpu = run(input, options, quiet);
  std::vector<RunResult> gpu;
  options.device = kernels::Device::gpu;
  for (const std::size_t gpu_memory : gpu_memories) {
    options.gpu_memory_bytes = gpu_memory;
    gpu.push_back(run(input, options, quiet));
    check_against_cpu(gpu.back(), cpu, name, gpu_memory);
    const AmplitudesMadeOnGpu made;
    gpu.push_back(run(input, options, quiet));
    const bool made_there = testing::planned_gpu_block(gpu.back(), "gradient", "made on the GPU") != nullptr;
    CHECK((made_there || gpu_memory > 0));
    check_against_cpu(gpu.back(), cpu, name + (made_there ? ", amplitudes made on the GPU" : ""), gpu_memory);
  }
  return gpu;
}

void check_psi4(const RunResult& gpu, const std::string& name) {
  const nlohmann::json ref = testing::psi4_case(testing::gpu_tests_source_dir(), "psi4_mp2_gradients.json", name);
  CHECK(std::abs(gpu.e_total - ref["e_total"].get<double>()) <= kPsi4Total);
  CHECK((*gpu.gradient - testing::reference_gradient(ref)).cwiseAbs().maxCoeff() <= kPsi4Gradient);
}

}  // namespace

TEST_CASE("DF-MP2 gradients with the amplitude loop on the GPU: water all electrons and frozen core", "[gpu]") {
  for (const std::string name : {"water-cc-pvdz-mp2-grad", "water-aug-cc-pvdz-fc-mp2-grad"})
    check_psi4(check_devices("psi4_mp2_gradients.json", name)[0], name);
}

TEST_CASE("the UHF DF-MP2 gradient with the amplitude loop on the GPU: allyl, dioxygen frozen core", "[gpu]") {
  check_devices("psi4_uhf_energies.json", "allyl-cc-pvdz-df-ae", {0}, 1e-12);
  check_devices("psi4_uhf_energies.json", "dioxygen-cc-pvdz-df-fc");
}

TEST_CASE("the DF-MP2 gradient on the GPU with B's rows resident and streamed: uracil, frozen core", "[gpu]") {
  const std::string name = "uracil-cc-pvdz-fc-mp2-grad";
  // Uracil's B (504 × 21·103 elements, 8.7 MB) does not fit 4 MiB: it streams, its products in tiles.
  for (const RunResult& gpu : check_devices("psi4_mp2_gradients.json", name, {0, std::size_t(4) << 20}))
    check_psi4(gpu, name);
}

TEST_CASE("too little GPU memory for the gradient's products is refused in one error, before the SCF", "[gpu]") {
  const nlohmann::json ref =
      testing::psi4_case(testing::gpu_tests_source_dir(), "psi4_mp2_gradients.json", "water-cc-pvdz-mp2-grad");
  RunInput input;
  RunOptions options = testing::psi4_case_options(testing::gpu_tests_source_dir(), ref, input);
  options.gradient = true;
  options.device = kernels::Device::gpu;
  options.gpu_memory_bytes = std::size_t(1) << 20;  // below the least staging buffer, 1.5 MiB
  Progress quiet(true);
  CHECK_THROWS_WITH(run(input, options, quiet), Catch::Contains("the MP2 gradient's amplitude products need there: raise --gpu-memory"));
}
