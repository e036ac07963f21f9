// OffloadEngine's host logic (kernels/gpu/offload_engine: resident ranges, the staging buffer,
// tiles of C and of the inner dimension) run on the host stand-in for the GPU against the CPU
// engine, and its plan. The CUDA copies and cuBLAS calls themselves are checked by
// tests/gpu/test_gpu_gradient.cpp where a GPU is at hand.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/gpu/offload_engine.hpp"
#include "tests/kernels/host_jk_device.hpp"
#include "tests/kernels/random_matrix.hpp"

namespace k = dfmp2::kernels;
using dfmp2::test::HostJKDevice;
using Matrix = dfmp2::test::RandomMatrix<double>;

namespace {

// The same products in other orders (tiles of the inner dimension): sums of ≤ 40 products of O(1)
// numbers, measured within 3.1e-15 of the CPU engine's.
constexpr double kTolerance = 3e-14;

double largest_difference(const Matrix& a, const Matrix& b) {
  double largest = 0.0;
  for (std::size_t i = 0; i < a.data.size(); ++i) largest = std::max(largest, std::abs(a.data[i] - b.data[i]));
  return largest;
}

// C = 0.7 op(A) op(B) + beta C on the offload engine and on the CPU engine, A in a resident range
// or not, for every transpose; the pad rows of C (RandomMatrix's) must stay as they were.
void check_products(std::size_t staging, bool a_resident, double beta) {
  std::mt19937 rng(11);
  const std::size_t m = 23, n = 17, kk = 40;
  for (const k::Op op_a : {k::Op::none, k::Op::transpose})
    for (const k::Op op_b : {k::Op::none, k::Op::transpose}) {
      const Matrix A = op_a == k::Op::none ? Matrix(m, kk, rng, 3) : Matrix(kk, m, rng, 3);
      const Matrix B = op_b == k::Op::none ? Matrix(kk, n, rng) : Matrix(n, kk, rng);
      Matrix C(m, n, rng, 5);
      Matrix expected = C;
      k::cpu_engine().gemm(op_a, op_b, 0.7, A.view(), B.view(), beta, expected.view());
      const k::GpuOffloadPlan plan{a_resident, a_resident ? A.data.size() : 0, staging};
      HostJKDevice device(plan.device_bytes());
      const std::vector<std::span<const double>> ranges{std::span<const double>(A.data)};
      k::OffloadEngine engine(plan, device, k::cpu_engine(), ranges);
      const std::size_t uploaded_before = engine.uploaded_bytes();
      engine.gemm(op_a, op_b, 0.7, A.view(), B.view(), beta, C.view());
      INFO("staging " << staging << ", A resident " << a_resident << ", beta " << beta << ", ops " << int(op_a)
                      << int(op_b));
      CHECK(largest_difference(C, expected) < kTolerance);
      CHECK(engine.products() == 1);
      // Each tile copies its part of B, and of A unless resident, and of C when beta reads it.
      const std::size_t uploaded = engine.uploaded_bytes() - uploaded_before;
      const std::size_t least = sizeof(double) * (kk * n + (a_resident ? 0 : m * kk) + (beta != 0.0 ? m * n : 0));
      CHECK(uploaded >= least);
      if (staging >= m * kk + kk * n + m * n) CHECK(uploaded == least);
      CHECK(engine.uploaded_bytes() >= (a_resident ? sizeof(double) * A.data.size() : 0));
    }
}

}  // namespace

TEST_CASE("the offload engine's products equal the CPU engine's: whole, in tiles of C and of the inner dimension, "
          "A resident or copied, beta zero or not") {
  for (const std::size_t staging : {std::size_t(4000), std::size_t(300), std::size_t(40), std::size_t(3)})
    for (const bool a_resident : {false, true})
      for (const double beta : {0.0, -1.5}) check_products(staging, a_resident, beta);
}

TEST_CASE("the offload engine leaves fp32 products to the host engine") {
  std::mt19937 rng(5);
  const dfmp2::test::RandomMatrix<float> A(6, 4, rng), B(4, 3, rng);
  dfmp2::test::RandomMatrix<float> C(6, 3, rng), expected = C;
  const k::GpuOffloadPlan plan{false, 0, 100};
  HostJKDevice device(plan.device_bytes());
  k::OffloadEngine engine(plan, device, k::cpu_engine(), {});
  engine.gemm(k::Op::none, k::Op::none, 1.0f, A.view(), B.view(), 0.5f, C.view());
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 1.0f, A.view(), B.view(), 0.5f, expected.view());
  CHECK(C.data == expected.data);
  CHECK(engine.products() == 0);
  CHECK(engine.uploaded_bytes() == 0);
}

TEST_CASE("the offload engine refuses resident ranges beyond its plan's") {
  const k::GpuOffloadPlan small{true, 3, 100};
  HostJKDevice room(small.device_bytes());
  const std::vector<double> four(4, 1.0);
  const std::vector<std::span<const double>> ranges{std::span<const double>(four)};
  CHECK_THROWS_AS(k::OffloadEngine(small, room, k::cpu_engine(), ranges), std::invalid_argument);
}

TEST_CASE("the offload plan: ranges resident when they fit beside the staging buffer, else streamed, refused below "
          "the least staging buffer") {
  const std::vector<std::size_t> ranges{std::size_t(1) << 24, std::size_t(1) << 23};  // 128 + 64 MiB
  const std::size_t other = std::size_t(1) << 20;                                     // 8 MiB
  const std::string what = "the products";
  const k::GpuOffloadPlan resident = k::plan_gpu_offload(ranges, other, std::size_t(1) << 30, what);
  CHECK(resident.resident);
  CHECK(resident.resident_elements == (std::size_t(3) << 23));
  CHECK(resident.staging_elements == 3 * other);
  CHECK(resident.device_bytes() <= std::size_t(1) << 30);
  // 200 MiB: the ranges (192 MiB) do not fit beside 24 MiB of staging.
  const k::GpuOffloadPlan streamed = k::plan_gpu_offload(ranges, other, std::size_t(200) << 20, what);
  CHECK_FALSE(streamed.resident);
  CHECK(streamed.resident_elements == 0);
  CHECK(streamed.staging_elements < 3 * ranges[0]);  // what the memory leaves
  CHECK(streamed.device_bytes() <= std::size_t(200) << 20);
  CHECK(k::plan_gpu_offload(ranges, other, std::size_t(4) << 30, what).staging_elements == 3 * other);
  CHECK(k::plan_gpu_offload(ranges, 10, std::size_t(4) << 30, what).staging_elements == k::kGpuLeastStagingElements);
  CHECK_THROWS_WITH(k::plan_gpu_offload(ranges, other, std::size_t(1) << 20, what),
                    "GPU: 1.0 MiB of GPU memory is less than the 1.5 MiB the products need there: raise "
                    "--gpu-memory or use --device cpu");
}
