// The GPU energy engine against the CPU's reference backend on random pair spaces: RHF (the
// triangle i ≥ j), cross blocks, UHF's opposite spin with unequal virtual counts, blocks streamed
// through small slots. Sizes that are no multiple of the kernels' tiles (32, 64) or stages (16).
// Fresh random inputs every run (the seed is printed on failure).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/mp2_energy.hpp"

namespace k = dfmp2::kernels;

namespace {

// fp64: the 1e-10 relative. fp32 (both sides fp32 GEMMs in other orders, sums fp64): 1e-7
// relative; these random tensors' energies are 10²–10⁵ Eh (a molecule's are ~1 Eh: 1e-7 Eh there).
constexpr double kFp64Relative = 1e-10, kFp32Relative = 1e-7;

struct Block {
  std::size_t nocc, nvir, naux;
  std::vector<double> B, eps_occ, eps_vir;
};

Block random_block(std::mt19937_64& rng, std::size_t nocc, std::size_t nvir, std::size_t naux) {
  std::normal_distribution<double> normal(0.0, 0.1);
  std::uniform_real_distribution<double> occ(-1.5, -0.5), vir(0.1, 1.1);
  Block b{nocc, nvir, naux, std::vector<double>(nocc * nvir * naux), std::vector<double>(nocc), std::vector<double>(nvir)};
  for (double& x : b.B) x = normal(rng);
  for (double& e : b.eps_occ) e = occ(rng);
  for (double& e : b.eps_vir) e = vir(rng);
  return b;
}

template <typename Real>
std::vector<Real> as(const std::vector<double>& x) {
  return std::vector<Real>(x.begin(), x.end());
}

template <typename Real>
k::BiaView<Real> view(const std::vector<Real>& B, const Block& b, std::size_t first = 0, std::size_t rows = 0,
                           bool stable = true) {
  return {B.data() + first * b.nvir * b.naux, rows ? rows : b.nocc, b.nvir, b.naux, stable};
}

std::uint64_t fresh_seed() { return std::random_device{}(); }

void check_close(const k::EnergyResult& gpu, const k::EnergyResult& cpu, bool fp32) {
  for (const auto part : {&k::EnergyResult::e_os, &k::EnergyResult::e_ss}) {
    const double tolerance = (fp32 ? kFp32Relative : kFp64Relative) * std::abs(cpu.*part);
    CHECK(std::isfinite(gpu.*part));
    CHECK(std::abs(gpu.*part - cpu.*part) <= tolerance);
  }
}

// RHF, cross and opposite-spin pair spaces on the GPU against the CPU reference; fp64's fused
// backend with the plan's `fused` kernel.
template <typename Real>
void check_pair_spaces(k::Backend backend, k::FusedKernel fused = k::FusedKernel::v1) {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed << ", backend " << k::to_string(backend) << ", " << (sizeof(Real) == 4 ? "fp32" : "fp64")
                << ", fused kernel v" << (fused == k::FusedKernel::v2 ? 2 : 1));
  std::mt19937_64 rng(seed);
  const k::Precision precision = sizeof(Real) == 4 ? k::Precision::fp32 : k::Precision::fp64;
  for (const auto [nocc, nvir, naux] : {std::tuple{7, 45, 37}, std::tuple{20, 130, 300}, std::tuple{33, 200, 517}}) {
    INFO("nocc " << nocc << ", nvir " << nvir << ", naux " << naux);
    const Block a = random_block(rng, nocc, nvir, naux), b = random_block(rng, nocc / 2 + 1, nvir + 11, naux);
    const std::vector<Real> Ba = as<Real>(a.B), Bb = as<Real>(b.B);
    k::GpuEnergyPlan plan = k::plan_gpu_energy({{a.nocc, a.nvir}, {b.nocc, b.nvir}}, naux, backend, precision,
                                               std::size_t(2) << 30);
    plan.fused_kernel = fused;
    k::GpuEnergyEngine engine(plan);
    k::EnergyOptions on_gpu, on_cpu;
    on_gpu.gpu = &engine;
    check_close(k::mp2_energy(backend, view(Ba, a), a.eps_occ, a.eps_vir, on_gpu),
                k::mp2_energy(k::Backend::reference, view(Ba, a), a.eps_occ, a.eps_vir, on_cpu), sizeof(Real) == 4);
    // Rows [0, h) against rows [h, nocc) of the same block: a cross pair space.
    const std::size_t h = a.nocc / 3 + 1;
    const std::span<const double> eps(a.eps_occ);
    check_close(k::mp2_energy_cross(backend, view(Ba, a, 0, h), eps.first(h), view(Ba, a, h, a.nocc - h),
                                    eps.subspan(h), a.eps_vir, on_gpu),
                k::mp2_energy_cross(k::Backend::reference, view(Ba, a, 0, h), eps.first(h), view(Ba, a, h, a.nocc - h),
                                    eps.subspan(h), a.eps_vir, on_cpu),
                sizeof(Real) == 4);
    check_close(k::mp2_energy_opposite_spin(backend, view(Ba, a), a.eps_occ, a.eps_vir, view(Bb, b), b.eps_occ,
                                            b.eps_vir, on_gpu),
                k::mp2_energy_opposite_spin(k::Backend::reference, view(Ba, a), a.eps_occ, a.eps_vir, view(Bb, b),
                                            b.eps_occ, b.eps_vir, on_cpu),
                sizeof(Real) == 4);
  }
}

// E over blocks of `rows` orbitals as the distributed step sums them: each block's own pairs and
// its pairs with every earlier block.
template <typename Real>
k::EnergyResult blocked_energy(k::Backend backend, const std::vector<Real>& B, const Block& a, std::size_t rows,
                               bool stable, const k::EnergyOptions& options) {
  const std::span<const double> eps(a.eps_occ);
  // The block the next call needs travels while this one computes (as bench_energy_gpu's blocks).
  const auto with_next = [&](std::size_t first) {
    k::EnergyOptions o = options;
    if (stable && first < a.nocc)
      o.gpu_next = {B.data() + first * a.nvir * a.naux, std::min(rows, a.nocc - first), a.nvir * a.naux * sizeof(Real)};
    return o;
  };
  k::EnergyResult sum;
  for (std::size_t i0 = 0; i0 < a.nocc; i0 += rows) {
    const std::size_t ni = std::min(rows, a.nocc - i0);
    const auto add = [&](const k::EnergyResult& e) {
      sum.e_os += e.e_os;
      sum.e_ss += e.e_ss;
    };
    add(k::mp2_energy(backend, view(B, a, i0, ni, stable), eps.subspan(i0, ni), a.eps_vir,
                      with_next(i0 > 0 ? 0 : i0 + rows)));
    for (std::size_t j0 = 0; j0 < i0; j0 += rows) {
      add(k::mp2_energy_cross(backend, view(B, a, i0, ni, stable), eps.subspan(i0, ni), view(B, a, j0, rows, stable),
                              eps.subspan(j0, rows), a.eps_vir, with_next(j0 + rows < i0 ? j0 + rows : i0 + rows)));
    }
  }
  return sum;
}

}  // namespace

TEST_CASE("the GPU's loop and fused backends equal the CPU reference on RHF, cross and opposite-spin pairs", "[gpu]") {
  for (const k::Backend backend : {k::Backend::loop, k::Backend::fused}) {
    check_pair_spaces<double>(backend);
    check_pair_spaces<float>(backend);
  }
}

// fused_tiles_f64 (v2): the shapes above (nvir 45 below its 64-wide tiles, none a multiple of 64 or
// of its 16 auxiliary functions a stage; odd naux 37 and 517 take its 8-byte copies), opposite spin
// with nvir_b = nvir + 11 (56, 141, 211: 1, 3 and 4 tiles; an odd count leaves the last block's
// tile B + 1 past nvir_b, idle); then whole tiles and stages (nvir 128 and 256, naux 96).
TEST_CASE("the GPU's fused kernel v2 equals the CPU reference on RHF, cross and opposite-spin pairs", "[gpu]") {
  check_pair_spaces<double>(k::Backend::fused, k::FusedKernel::v2);
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Block a = random_block(rng, 11, 128, 96), b = random_block(rng, 6, 256, 96);
  k::GpuEnergyPlan plan =
      k::plan_gpu_energy({{a.nocc, a.nvir}, {b.nocc, b.nvir}}, a.naux, k::Backend::fused, k::Precision::fp64,
                         std::size_t(1) << 30);
  plan.fused_kernel = k::FusedKernel::v2;
  k::GpuEnergyEngine engine(plan);
  k::EnergyOptions on_gpu, on_cpu;
  on_gpu.gpu = &engine;
  check_close(k::mp2_energy(k::Backend::fused, view(a.B, a), a.eps_occ, a.eps_vir, on_gpu),
              k::mp2_energy(k::Backend::reference, view(a.B, a), a.eps_occ, a.eps_vir, on_cpu), false);
  check_close(k::mp2_energy_opposite_spin(k::Backend::fused, view(a.B, a), a.eps_occ, a.eps_vir, view(b.B, b),
                                          b.eps_occ, b.eps_vir, on_gpu),
              k::mp2_energy_opposite_spin(k::Backend::reference, view(a.B, a), a.eps_occ, a.eps_vir, view(b.B, b),
                                          b.eps_occ, b.eps_vir, on_cpu),
              false);
}

TEST_CASE("a T_flat of three pairs per slot: many chunks take turns in its two slots, long rows split",
          "[gpu][sanitize][racecheck]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Block a = random_block(rng, 23, 70, 91);
  // Two spins' worth of B slots, so that a cross pair space's rows and columns each have one.
  k::GpuEnergyPlan plan = k::plan_gpu_energy({{a.nocc, a.nvir}, {a.nocc, a.nvir}}, a.naux, k::Backend::loop,
                                             k::Precision::fp64, std::size_t(1) << 30);
  const std::size_t pair_bytes = a.nvir * a.nvir * sizeof(double);
  plan.workspace_bytes = k::kTFlatSlots * ((3 * pair_bytes + 255) / 256 * 256);  // under 4 pairs per slot
  k::GpuEnergyEngine engine(plan);
  k::EnergyOptions on_gpu, on_cpu;
  on_gpu.gpu = &engine;
  check_close(k::mp2_energy(k::Backend::loop, view(a.B, a), a.eps_occ, a.eps_vir, on_gpu),
              k::mp2_energy(k::Backend::reference, view(a.B, a), a.eps_occ, a.eps_vir, on_cpu), false);
  const std::size_t h = 9;
  const std::span<const double> eps(a.eps_occ);
  check_close(k::mp2_energy_cross(k::Backend::loop, view(a.B, a, 0, h), eps.first(h), view(a.B, a, h, a.nocc - h),
                                  eps.subspan(h), a.eps_vir, on_gpu),
              k::mp2_energy_cross(k::Backend::reference, view(a.B, a, 0, h), eps.first(h), view(a.B, a, h, a.nocc - h),
                                  eps.subspan(h), a.eps_vir, on_cpu),
              false);
}

TEST_CASE("B streamed through small GPU slots gives the resident energy, kept copies or not", "[gpu][sanitize][racecheck]") {
  const std::uint64_t seed = fresh_seed();
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const Block a = random_block(rng, 29, 97, 211);
  const k::EnergyOptions on_cpu;
  const k::EnergyResult cpu = k::mp2_energy(k::Backend::reference, view(a.B, a), a.eps_occ, a.eps_vir, on_cpu);
  for (const auto [backend, fused] : {std::pair{k::Backend::loop, k::FusedKernel::v1},
                                      std::pair{k::Backend::fused, k::FusedKernel::v1},
                                      std::pair{k::Backend::fused, k::FusedKernel::v2}}) {
    // Slots of 6 rows: five blocks, the last of 5.
    k::GpuEnergyPlan plan =
        k::plan_gpu_blocks({{a.nocc, a.nvir}}, a.naux, backend, k::Precision::fp64, std::size_t(1) << 30, 6);
    REQUIRE_FALSE(plan.resident);
    plan.fused_kernel = fused;
    k::GpuEnergyEngine engine(plan);
    k::EnergyOptions on_gpu;
    on_gpu.gpu = &engine;
    for (const bool stable : {true, false}) {
      INFO(k::to_string(backend) << (fused == k::FusedKernel::v2 ? " v2" : "")
                                 << (stable ? ", copies kept" : ", every block copied again"));
      check_close(blocked_energy(backend, a.B, a, 6, stable, on_gpu), cpu, false);
    }
  }
}

TEST_CASE("a rerun on the GPU gives the same bits, loop and both fused kernels, both spins'", "[gpu]") {
  std::mt19937_64 rng(fresh_seed());
  const Block a = random_block(rng, 17, 150, 260), b = random_block(rng, 9, 133, 260);
  for (const auto [backend, fused] : {std::pair{k::Backend::loop, k::FusedKernel::v1},
                                      std::pair{k::Backend::fused, k::FusedKernel::v1},
                                      std::pair{k::Backend::fused, k::FusedKernel::v2}}) {
    INFO(k::to_string(backend) << (fused == k::FusedKernel::v2 ? " v2" : ""));
    k::GpuEnergyPlan plan = k::plan_gpu_energy({{a.nocc, a.nvir}, {b.nocc, b.nvir}}, a.naux, backend,
                                               k::Precision::fp64, std::size_t(1) << 30);
    plan.fused_kernel = fused;
    k::GpuEnergyEngine engine(plan);
    k::EnergyOptions on_gpu;
    on_gpu.gpu = &engine;
    const auto same = [&](const auto& run) {
      const k::EnergyResult first = run(), second = run();
      CHECK(first.e_os == second.e_os);
      CHECK(first.e_ss == second.e_ss);
    };
    same([&] { return k::mp2_energy(backend, view(a.B, a), a.eps_occ, a.eps_vir, on_gpu); });
    same([&] {
      return k::mp2_energy_opposite_spin(backend, view(a.B, a), a.eps_occ, a.eps_vir, view(b.B, b), b.eps_occ, b.eps_vir,
                                         on_gpu);
    });
  }
}

TEST_CASE("a stable B stays on the GPU between calls, a refilled one is copied again", "[gpu][sanitize][racecheck]") {
  std::mt19937_64 rng(fresh_seed());
  const Block a = random_block(rng, 10, 50, 64);
  k::GpuEnergyEngine engine(k::plan_gpu_energy({{a.nocc, a.nvir}}, a.naux, k::Backend::loop, k::Precision::fp64,
                                               std::size_t(1) << 30));
  k::EnergyOptions on_gpu;
  on_gpu.gpu = &engine;
  const std::size_t bytes = a.B.size() * sizeof(double);
  k::mp2_energy(k::Backend::loop, view(a.B, a), a.eps_occ, a.eps_vir, on_gpu);
  CHECK(engine.uploaded_bytes() == bytes);
  k::mp2_energy(k::Backend::fused, view(a.B, a), a.eps_occ, a.eps_vir, on_gpu);
  CHECK(engine.uploaded_bytes() == bytes);
  k::mp2_energy(k::Backend::loop, view(a.B, a, 0, 0, false), a.eps_occ, a.eps_vir, on_gpu);
  CHECK(engine.uploaded_bytes() == 2 * bytes);
}

TEST_CASE("a plan larger than the GPU's memory is one error naming the bytes, and nothing is left", "[gpu]") {
  k::GpuEnergyPlan plan = k::plan_gpu_blocks({{10, 50}}, 64, k::Backend::loop, k::Precision::fp64, 1 << 30, 10);
  { const k::GpuEnergyEngine loaded(plan); }  // cuBLAS's code, loaded once per process, is not a leak
  const k::GpuProperties gpu = k::gpu_properties();
  plan.workspace_bytes = gpu.total_bytes * 2;  // cannot be had
  try {
    k::GpuEnergyEngine engine(plan);
    FAIL("allocated more than the GPU has");
  } catch (const k::GpuError& e) {
    CHECK(std::string(e.what()).find("cannot allocate") != std::string::npos);
  }
  // The failed allocation left the GPU usable and took nothing (free memory moves by a few MiB).
  CHECK(k::gpu_properties().free_bytes + (std::size_t(8) << 20) >= gpu.free_bytes);
}
