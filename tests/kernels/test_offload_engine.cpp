// OffloadEngine's host logic (kernels/gpu/offload_engine: resident ranges, the staging buffer,
// tiles of C and of the inner dimension) run on the host stand-in for the GPU against the CPU
// engine, and its plan. The CUDA copies and cuBLAS calls themselves are checked by
// tests/gpu/test_gpu_offload.cpp and test_gpu_gradient.cpp where a GPU is at hand.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/gpu/offload_engine.hpp"
#include "tests/kernels/host_jk_device.hpp"
#include "tests/kernels/offload_cases.hpp"
#include "tests/kernels/random_matrix.hpp"

namespace k = dfmp2::kernels;
using dfmp2::test::HostJKDevice;

namespace {

// The same products in other orders (tiles of the inner dimension): sums of ≤ 40 products of O(1)
// numbers, measured within 3.1e-15 of the CPU engine's.
constexpr double kTolerance = 3e-14;

}  // namespace

TEST_CASE("the offload engine's products equal the CPU engine's: whole, in tiles of C and of the inner dimension, "
          "A resident or copied, B and C pinned or not, beta zero or not") {
  dfmp2::test::check_offload_products([](std::size_t bytes) { return std::make_unique<HostJKDevice>(bytes); },
                                      kTolerance);
}

TEST_CASE("the offload engine solves with a held L on the device, in tiles of B, and without one on the host") {
  dfmp2::test::check_offload_solves([](std::size_t bytes) { return std::make_unique<HostJKDevice>(bytes); },
                                    kTolerance);
}

TEST_CASE("the offload engine reads held operands where it copied them, until they are released") {
  dfmp2::test::check_held_operands([](std::size_t bytes) { return std::make_unique<HostJKDevice>(bytes); },
                                   kTolerance);
}

TEST_CASE("the offload engine writes a C that lies in a placed array where it is placed, and reads it there") {
  dfmp2::test::check_placed_arrays([](std::size_t bytes) { return std::make_unique<HostJKDevice>(bytes); },
                                   kTolerance);
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

// The stand-in counts what a CUDA device would page-lock (cudaHostRegister), and for how long.
TEST_CASE("the offload engine pins its ranges while they stream, and what PinnedHost names while it lives") {
  const std::vector<double> rows(300, 1.0), more_rows(200, 2.0), block(50, 3.0);
  const std::vector<std::span<const double>> ranges{std::span<const double>(rows), std::span<const double>(more_rows)};
  const std::size_t rows_bytes = sizeof(double) * (rows.size() + more_rows.size());
  for (const bool resident : {true, false}) {
    INFO("resident " << resident);
    const k::GpuOffloadPlan plan{resident, resident ? rows.size() + more_rows.size() : 0, 1000};
    HostJKDevice device(plan.device_bytes());
    {
      k::OffloadEngine engine(plan, device, k::cpu_engine(), ranges);
      CHECK(device.pinned_bytes() == (resident ? 0 : rows_bytes));  // copied once when resident
      {
        const k::PinnedHost pinned(engine, {std::span<const double>(block), std::span<const double>()});
        CHECK(device.pinned_bytes() == (resident ? 0 : rows_bytes) + sizeof(double) * block.size());
      }
      CHECK(device.pinned_bytes() == (resident ? 0 : rows_bytes));
    }
    CHECK(device.pinned_bytes() == 0);
    CHECK(device.unknown_unpins() == 0);
  }
  const k::PinnedHost on_cpu(k::cpu_engine(), {std::span<const double>(block)});  // a hint the CPU engine ignores
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
  const k::GpuOffloadPlan resident = k::plan_gpu_offload(ranges, other, 0, std::size_t(1) << 30, what);
  CHECK(resident.resident);
  CHECK(resident.resident_elements == (std::size_t(3) << 23));
  CHECK(resident.staging_elements == 3 * other);
  CHECK(resident.device_bytes() <= std::size_t(1) << 30);
  // 200 MiB: the ranges (192 MiB) do not fit beside 24 MiB of staging.
  const k::GpuOffloadPlan streamed = k::plan_gpu_offload(ranges, other, 0, std::size_t(200) << 20, what);
  CHECK_FALSE(streamed.resident);
  CHECK(streamed.resident_elements == 0);
  CHECK(streamed.staging_elements < 3 * ranges[0]);  // what the memory leaves
  CHECK(streamed.device_bytes() <= std::size_t(200) << 20);
  CHECK(k::plan_gpu_offload(ranges, other, 0, std::size_t(4) << 30, what).staging_elements == 3 * other);
  CHECK(k::plan_gpu_offload(ranges, 10, 0, std::size_t(4) << 30, what).staging_elements == k::kGpuLeastStagingElements);
  // Room for held operands beside the ranges and the staging buffer, none where it does not fit.
  const std::size_t held = std::size_t(1) << 22;  // 32 MiB
  const k::GpuOffloadPlan holding = k::plan_gpu_offload(ranges, other, held, std::size_t(1) << 30, what);
  CHECK(holding.resident);
  CHECK(holding.held_elements == held);
  CHECK(holding.staging_elements == 3 * other);
  CHECK(holding.device_bytes() <= std::size_t(1) << 30);
  const k::GpuOffloadPlan no_room = k::plan_gpu_offload(ranges, other, held, std::size_t(220) << 20, what);
  CHECK(no_room.resident);  // 192 + 24 MiB fit 220 MiB, 32 more do not
  CHECK(no_room.held_elements == 0);
  CHECK(no_room.staging_elements == 3 * other);
  CHECK_THROWS_WITH(k::plan_gpu_offload(ranges, other, 0, std::size_t(1) << 20, what),
                    "GPU: 1.0 MiB of GPU memory is less than the 1.5 MiB the products need there: raise "
                    "--gpu-memory or use --device cpu");
}
