// The DF-SCF's J/K builds on the GPU (kernels/gpu/gpu_jk) against PackedJK on the CPU threads:
// random screened layouts, symmetric, empty and non-symmetric densities, fp64 and fp32, the rows
// resident (copied by the first build only) and streamed through a small device budget; a failed
// allocation leaves the GPU as it was; and whole runs with --device gpu (the SCF's J/K and the
// energy step on the GPU) against --device cpu and Psi4: water, the naphthalene dimer resident
// and streamed, allyl (UHF).
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/gpu/gpu_jk.hpp"
#include "kernels/packed_jk.hpp"
#include "src/run/driver.hpp"
#include "tests/kernels/jk_cases.hpp"
#include "tests/gpu/device_memory.hpp"
#include "tests/gpu/device_runs.hpp"

namespace k = dfmp2::kernels;
using namespace dfmp2;
using namespace dfmp2::test;

namespace {

// Relative to the largest element. The host stand-in of the same logic (tests/kernels/
// test_stacked_jk.cpp) at these sizes differs from PackedJK by up to 1.9e-15 (fp64) and 2.1e-7 (K
// in fp32, products in fp32 summed in double). On the H200 (results/gpu/check_h200_run4.log) fp32
// K differed by 3.0e-6 (n 383, a batch's SYRK over 228 · 37 columns) and 1.4e-6 (n 71): cuBLAS sums
// a batch's columns in fp32 in another order than OpenBLAS — fp32's 6e-8 grown over thousands of
// terms, far below the 1e-4 orbital gradient at which the SCF leaves fp32 (--fp32-until).
constexpr double kFp64Relative = 1e-12, kFp32Relative = 1e-5;

}  // namespace

namespace {

// GpuJK against PackedJK on `naux` random rows of a random layout of `nblocks` shells (as
// check_like_packed), its rows resident, then streamed.
void check_against_packed(std::size_t nblocks, std::size_t naux, std::size_t block, unsigned seed) {
  const k::BlockPackedLayout layout = random_layout(nblocks, 0.45, seed);
  const std::size_t n = layout.n(), stored = layout.size();
  std::mt19937 rng(seed + 2);
  const std::vector<double> rows = random_packed_rows(layout, naux, rng);
  const std::vector<Factors> densities{random_factors(n, 37, true, rng), random_factors(n, 0, true, rng),
                                       random_factors(n, 11, false, rng)};
  for (const bool resident : {true, false}) {
    const k::GpuJKPlan plan = resident ? k::plan_gpu_jk(n, stored, naux, 3, k::gpu_properties().free_bytes / 2)
                                       : streamed_plan(n, stored, naux, 3);
    REQUIRE(plan.resident == resident);
    INFO((resident ? "resident" : "streamed") << ", batches of " << plan.batch_q << ", n " << n);
    k::GpuJK gpu(layout, plan);
    check_like_packed(gpu, resident, layout, densities, rows, block, kFp64Relative, kFp32Relative);
  }
}

}  // namespace

TEST_CASE("the GPU's J/K equal PackedJK's: resident and streamed rows, fp64 and fp32, three kinds of density",
          "[gpu]") {
  check_against_packed(160, 301, 64, 51);
}

// Small enough for compute-sanitizer (scripts/gpu-check/run.sh runs the [sanitize] cases).
TEST_CASE("the GPU's J/K on a small layout, for the sanitizers", "[gpu][sanitize]") { check_against_packed(25, 41, 8, 61); }

TEST_CASE("a J/K builder the GPU cannot hold is one GpuError and leaves the GPU's memory as it was", "[gpu]") {
  const k::BlockPackedLayout layout = random_layout(20, 0.5, 57);
  // Resident rows of more bytes than the GPU has free.
  const std::size_t rows = testing::free_device_bytes() / (sizeof(double) * layout.size()) + 1000;
  const k::GpuJKPlan plan = k::plan_gpu_jk(layout.n(), layout.size(), rows, 1, std::size_t(1) << 50);
  REQUIRE(plan.resident);
  testing::check_refusal_leaves_memory([&] { k::GpuJK refused(layout, plan); });
}

namespace {

// The 1e-10 relative, with both SCFs converged tighter than their defaults: their paths
// differ (fp32 iterations rounded by cuBLAS and by OpenBLAS). RHF at 1e-10: fp32 iterations on vs
// off moved water's E_corr by 2.6e-11 relative on the CPU (9.6e-11 at RHF's default 1e-8). UHF at
// 1e-12: at its default 1e-10 allyl's E_corr is still 6.9e-10 Eh from its 1e-12 value (CPU), and
// the H200's first run differed by 4e-10 there (results/gpu/check_h200_run4.log); at 1e-12 the
// CPU's runs with and without fp32 iterations agree to 1.8e-13 Eh.
constexpr double kRunRelative = 1e-10, kPsi4Tolerance = 1e-7, kRhfConvergence = 1e-10, kUhfConvergence = 1e-12;

// Whether the SCF stage's plan holds the DF-SCF tensor on the GPU, and whether streamed.
std::pair<bool, bool> scf_on_gpu(const RunResult& r) {
  const PlannedBlock* tensor = testing::planned_gpu_block(r, "scf", "DF-SCF tensor");
  return {tensor != nullptr, tensor != nullptr && tensor->what.find("streamed") != std::string::npos};
}

// A whole run on each device: the GPU's SCF and MP2 energies are the CPU's, and Psi4's.
void check_run(const std::string& file, const std::string& name, double d_convergence, std::size_t gpu_memory = 0) {
  INFO(name << (gpu_memory ? ", --gpu-memory " + std::to_string(gpu_memory) : std::string()));
  const testing::DeviceRuns runs = testing::run_on_both_devices(file, name, d_convergence, gpu_memory);
  const RunResult &cpu = runs.cpu, &gpu = runs.gpu;
  CHECK(scf_on_gpu(gpu) == std::pair<bool, bool>{true, gpu_memory > 0});
  CHECK_FALSE(scf_on_gpu(cpu).first);
  // The tensor's fit on the GPU too (at --gpu-memory 64 MiB in tiles beside the naphthalene dimer's factor).
  CHECK(testing::planned_gpu_block(gpu, "integrals", "the fit's metric factor") != nullptr);
  CHECK(testing::planned_gpu_block(cpu, "integrals", "the fit's metric factor") == nullptr);
  CHECK(std::abs(gpu.e_scf - cpu.e_scf) <= kRunRelative * std::abs(cpu.e_scf));
  CHECK(std::abs(gpu.e_corr - cpu.e_corr) <= kRunRelative * std::abs(cpu.e_corr));
  CHECK(std::abs(gpu.e_corr - runs.ref["e_corr"].get<double>()) < kPsi4Tolerance);
  CHECK(std::abs(gpu.e_scf - runs.ref["e_scf"].get<double>()) < kPsi4Tolerance);
}

}  // namespace

TEST_CASE("whole runs with the SCF's J/K and its tensor's fit on the GPU give the CPU's and Psi4's energies: water, "
          "the naphthalene dimer resident and streamed, allyl", "[gpu]") {
  check_run("psi4_energies.json", "water-cc-pvdz-df-ae", kRhfConvergence);
  check_run("psi4_energies.json", "naphthalene-dimer-cc-pvdz-df-ae", kRhfConvergence);
  check_run("psi4_energies.json", "naphthalene-dimer-cc-pvdz-df-ae", kRhfConvergence, std::size_t(64) << 20);
  check_run("psi4_uhf_energies.json", "allyl-cc-pvdz-df-ae", kUhfConvergence);
}
