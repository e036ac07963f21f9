// The GPU J/K build's host logic (kernels/gpu/stacked_jk: buffers, resident and streamed rows,
// batches, the stacked products) run on a host stand-in for the GPU against PackedJK, and its
// device memory plan (kernels/gpu/gpu_jk_plan). The CUDA kernels and cuBLAS calls themselves are
// checked by tests/gpu/test_gpu_jk.cpp where a GPU is at hand.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/gpu/gpu_jk_plan.hpp"
#include "kernels/gpu/stacked_jk.hpp"
#include "kernels/packed_jk.hpp"
#include "tests/kernels/jk_cases.hpp"

namespace k = dfmp2::kernels;
using namespace dfmp2::test;

namespace {

// The GPU's part on the host: memory starts as NaNs (cudaMalloc's is not zeroed), copies are
// immediate, the kernels loops.
class HostJKDevice final : public k::JKDevice {
 public:
  explicit HostJKDevice(std::size_t bytes) : memory_(bytes / sizeof(double) + 1) {
    std::memset(memory_.data(), 0xff, sizeof(double) * memory_.size());
  }
  k::ComputeEngine& engine() override { return k::cpu_engine(); }
  char* memory() override { return reinterpret_cast<char*>(memory_.data()); }
  void copy_to(void* device, const void* host, std::size_t bytes) override { std::memcpy(device, host, bytes); }
  void copy_from(void* host, const void* device, std::size_t bytes) override { std::memcpy(host, device, bytes); }
  void zero(void* device, std::size_t bytes) override { std::memset(device, 0, bytes); }
  void synchronise() override {}
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, double* stack) override {
    unpack_stack(rows, nq, stored, table, nbf, ld, stack);
  }
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, float* stack) override {
    unpack_stack(rows, nq, stored, table, nbf, ld, stack);
  }
  void add_fp32(const float* from, double* to, std::size_t nbf, bool lower_only) override {
    for (std::size_t col = 0; col < nbf; ++col)
      for (std::size_t row = lower_only ? col : 0; row < nbf; ++row) to[row + nbf * col] += from[row + nbf * col];
  }

 private:
  template <typename Real>
  static void unpack_stack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                           std::size_t nbf, std::size_t ld, Real* stack) {
    for (std::size_t q = 0; q < nq; ++q)
      for (std::size_t p = 0; p < stored; ++p) {
        const std::size_t m = table[2 * p], c = table[2 * p + 1];
        stack[m + nbf * q + ld * c] = stack[c + nbf * q + ld * m] = static_cast<Real>(rows[q * stored + p]);
      }
  }
  std::vector<double> memory_;
};

constexpr std::size_t kHuge = std::size_t(1) << 40;

// Against PackedJK (the same products in other orders and batches), relative to the largest
// element: measured up to 8.3e-16 (J and K in fp64) and 3.2e-7 (K in fp32).
constexpr double kFp64Relative = 5e-15, kFp32Relative = 1e-6;

}  // namespace

TEST_CASE("the GPU's unpack table gives each stored element's row and column") {
  const k::BlockPackedLayout layout = random_layout(15, 0.5, 41);
  const std::vector<std::uint32_t> table = k::packed_coordinates(layout);
  REQUIRE(table.size() == 2 * layout.size());
  for (std::size_t p = 0; p < layout.size(); ++p) {
    CHECK(table[2 * p + 1] <= table[2 * p]);
    CHECK(layout.find(table[2 * p], table[2 * p + 1]) == p);
  }
}

TEST_CASE("the GPU J/K plan: resident when the rows fit, else streamed in batches, refused when one Q does not fit") {
  const std::size_t nbf = 960, stored = 300000, rows = 4600;
  const k::GpuJKPlan resident = k::plan_gpu_jk(nbf, stored, rows, 1, std::size_t(130) << 30);
  CHECK(resident.resident);
  CHECK(resident.rows_bytes >= sizeof(double) * stored * rows);
  CHECK(resident.batch_q >= 8);
  CHECK(resident.device_bytes() <= std::size_t(130) << 30);
  const k::GpuJKPlan streamed = k::plan_gpu_jk(nbf, stored, rows, 2, std::size_t(4) << 30);
  CHECK_FALSE(streamed.resident);
  CHECK(streamed.batch_q >= 1);
  CHECK(streamed.rows_bytes >= sizeof(double) * stored * streamed.batch_q);
  CHECK(streamed.device_bytes() <= std::size_t(4) << 30);
  CHECK_THROWS_AS(k::plan_gpu_jk(nbf, stored, rows, 1, std::size_t(20) << 20), k::GpuError);
  // A build's batch: the plan's for the planned columns, fewer for more (fp64), refused beyond twice.
  CHECK(k::gpu_jk_batch(resident, nbf, k::Precision::fp64) == resident.batch_q);
  CHECK(k::gpu_jk_batch(resident, 2 * nbf, k::Precision::fp64) >= 1);
  CHECK(k::gpu_jk_batch(resident, 2 * nbf, k::Precision::fp64) <= (resident.batch_q + 1) / 2 + 1);
  CHECK_THROWS_AS(k::gpu_jk_batch(resident, 2 * nbf + 1, k::Precision::fp64), k::GpuError);
}

TEST_CASE("the GPU J/K build's logic on the host equals PackedJK: rows resident or streamed, fp64 and fp32, "
          "symmetric, empty and non-symmetric densities") {
  const k::BlockPackedLayout layout = random_layout(40, 0.5, 43);
  const std::size_t n = layout.n(), naux = 53, stored = layout.size();
  std::mt19937 rng(47);
  const std::vector<double> rows = random_packed_rows(layout, naux, rng);
  const std::vector<Factors> densities{random_factors(n, 7, true, rng), random_factors(n, 0, true, rng),
                                       random_factors(n, 4, false, rng)};
  for (const bool resident : {true, false}) {
    const k::GpuJKPlan plan = resident ? k::plan_gpu_jk(n, stored, naux, 3, kHuge) : streamed_plan(n, stored, naux, 3);
    REQUIRE(plan.resident == resident);
    INFO((resident ? "resident" : "streamed") << ", batches of " << plan.batch_q);
    HostJKDevice device(plan.device_bytes());
    k::StackedJK stacked(layout, plan, device);
    check_like_packed(stacked, resident, layout, densities, rows, 8, kFp64Relative, kFp32Relative);
  }
}
