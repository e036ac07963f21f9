// The Z-vector response's GPU logic (kernels/gpu/stacked_response: caches, resident and streamed
// rows, batches, the stacked products, its plan) on the host stand-in for the GPU against
// OccupiedResponse on the CPU threads. tests/gpu/test_gpu_response.cpp runs the same cases on a GPU.
#include <catch2/catch.hpp>

#include <cstddef>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/gpu/stacked_response.hpp"
#include "tests/kernels/host_jk_device.hpp"
#include "tests/kernels/response_cases.hpp"

namespace k = dfmp2::kernels;
using namespace dfmp2::test;

namespace {

std::unique_ptr<k::JKDevice> host_device(std::size_t bytes) { return std::make_unique<HostJKDevice>(bytes); }

}  // namespace

TEST_CASE("the GPU response plan: caches and rows resident, else the rows streamed, refused when the caches and one "
          "Q do not fit") {
  const std::size_t nbf = 960, stored = 300000, rows = 4600;
  const std::vector<std::size_t> rhf{200}, uhf{201, 199};
  const std::size_t caches = sizeof(double) * rows * (nbf * 200 + 200 * 200);
  const k::GpuResponsePlan resident = k::plan_gpu_response(nbf, stored, rows, rhf, std::size_t(130) << 30);
  CHECK(resident.resident);
  CHECK(resident.caches_bytes >= caches);
  CHECK(resident.rows_bytes >= sizeof(double) * stored * rows);
  CHECK(resident.batch_q >= 8);
  CHECK(resident.device_bytes() <= std::size_t(130) << 30);
  const std::size_t small = caches + (std::size_t(2) << 30);
  const k::GpuResponsePlan streamed = k::plan_gpu_response(nbf, stored, rows, uhf, small + caches);
  CHECK_FALSE(streamed.resident);
  CHECK(streamed.batch_q >= 1);
  CHECK(streamed.caches_bytes >= 2 * caches);
  CHECK(streamed.rows_bytes >= sizeof(double) * stored * streamed.batch_q);
  CHECK(streamed.device_bytes() <= small + caches);
  CHECK_THROWS_AS(k::plan_gpu_response(nbf, stored, rows, rhf, caches), k::GpuError);
  CHECK(k::gpu_response_flops(resident, false) > 2.0 * nbf * nbf * 200 * rows);
  CHECK(k::gpu_response_flops(resident, true) > 4.0 * nbf * nbf * 200 * rows);
}

TEST_CASE("the GPU response's logic on the host equals OccupiedResponse: caches, products of L and of symmetric D, "
          "one set and two (one empty), rows resident or streamed") {
  for (const bool resident : {true, false}) {
    check_response_like_cpu(host_device, {7}, resident, 51);
    check_response_like_cpu(host_device, {5, 3}, resident, 53);
    check_response_like_cpu(host_device, {4, 0}, resident, 55);
  }
}

TEST_CASE("the GPU response refuses rows that are not the caching pass's batches") {
  const k::BlockPackedLayout layout = random_layout(10, 0.7, 57);
  const std::size_t n = layout.n(), naux = 12, stored = layout.size();
  std::mt19937 rng(59);
  const std::vector<double> rows = random_packed_rows(layout, naux, rng);
  const Factors C = random_factors(n, 3, true, rng);
  std::vector<double> cache(k::OccupiedResponse::cache_elements(n, 3, naux));
  const k::GpuResponsePlan plan = k::plan_gpu_response(n, stored, naux, {3}, std::size_t(1) << 30);
  HostJKDevice device(plan.device_bytes());
  k::StackedResponse response(layout, plan, device, {{C.left.data(), 3, cache.data(), nullptr}});
  response.cache(0, naux, rows.data());
  const double* L[1] = {C.left.data()};
  response.begin(L);
  CHECK_THROWS_AS(response.add(0, 5, rows.data()), std::logic_error);
  CHECK_THROWS_AS(response.add(0, naux + 1, rows.data()), std::invalid_argument);
}
