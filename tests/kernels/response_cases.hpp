// The Z-vector's response on a GPU (kernels/gpu/stacked_response) against OccupiedResponse on the
// CPU threads, on a JKDevice the caller makes: the host stand-in (tests/kernels) or the CUDA device
// (tests/gpu). One set (RHF), two sets and two with one empty (UHF); rows resident and streamed,
// in batches that split the blocks the rows come in.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/gpu/stacked_response.hpp"
#include "kernels/occupied_response.hpp"
#include "tests/kernels/jk_cases.hpp"

namespace dfmp2::test {

using MakeDevice = std::function<std::unique_ptr<k::JKDevice>(std::size_t bytes)>;

// Against the CPU threads' products (SYMM on the stored blocks, other orders), relative to the
// largest element: measured up to 8.1e-16 on the host stand-in.
constexpr double kResponseRelative = 5e-15;

// The largest plan for the sizes with rows resident (or streamed) in batches of at most `batch_q`.
inline k::GpuResponsePlan response_plan(std::size_t n, std::size_t stored, std::size_t rows,
                                        const std::vector<std::size_t>& nocc, bool resident, std::size_t batch_q) {
  std::size_t bytes = k::plan_gpu_response(n, stored, rows, nocc, std::size_t(1) << 40).device_bytes();
  for (;; bytes = bytes / 20 * 19) {
    const k::GpuResponsePlan plan = k::plan_gpu_response(n, stored, rows, nocc, bytes);
    if (plan.resident == resident && plan.batch_q <= batch_q) return plan;
  }
}

inline double largest_apart(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0.0;
  for (std::size_t x = 0; x < a.size(); ++x) d = std::max(d, std::abs(a[x] - b[x]));
  return d;
}

inline double largest_element(const std::vector<double>& a) {
  double m = 1e-300;
  for (const double x : a) m = std::max(m, std::abs(x));
  return m;
}

// One product over every row, `block` rows per add: begin(L) or begin_symmetric(D), then F_s C_s.
template <typename Response, typename Begin>
std::vector<std::vector<double>> response_product(Response& response, const Begin& begin,
                                                  const std::vector<double>& rows, std::size_t stored,
                                                  std::size_t block, std::size_t n,
                                                  const std::vector<std::size_t>& nocc) {
  begin(response);
  const std::size_t naux = rows.size() / stored;
  for (std::size_t first = 0; first < naux; first += block)
    response.add(first, std::min(block, naux - first), rows.data() + first * stored);
  std::vector<std::vector<double>> F;
  std::vector<double*> out;
  for (const std::size_t o : nocc) F.emplace_back(n * o, -1.0);
  for (std::vector<double>& f : F) out.push_back(f.empty() ? nullptr : f.data());
  response.finish(out);
  return F;
}

// The GPU's response of `nocc` sets on `make_device`'s device beside the CPU's: the caches it
// copies back, then two products of L's (the second starts from zero) and one of symmetric D's.
inline void check_response_like_cpu(const MakeDevice& make_device, const std::vector<std::size_t>& nocc, bool resident,
                                    unsigned seed) {
  const k::BlockPackedLayout layout = random_layout(30, 0.5, seed);
  const std::size_t n = layout.n(), naux = 37, stored = layout.size(), block = 13;
  std::mt19937 rng(seed + 1);
  const std::vector<double> rows = random_packed_rows(layout, naux, rng);
  // Resident rows need batches of 8 Q at least (the plan's least): 12 and 5 split the blocks of 13.
  const k::GpuResponsePlan plan = response_plan(n, stored, naux, nocc, resident, resident ? 12 : 5);
  INFO((resident ? "resident" : "streamed") << ", batches of " << plan.batch_q << ", sets " << nocc.size());
  REQUIRE(plan.resident == resident);
  std::vector<Factors> C, L, D;
  std::vector<std::vector<double>> cpu_cache, gpu_cache;
  std::vector<k::OccupiedResponse::Set> cpu_sets, gpu_sets;
  for (const std::size_t o : nocc) {
    C.push_back(random_factors(n, o, true, rng));
    L.push_back(random_factors(n, o, true, rng));
    D.push_back(random_factors(n, n, true, rng));
    for (std::size_t c = 0; c < n; ++c)  // D symmetric
      for (std::size_t m = 0; m < c; ++m) D.back().left[c * n + m] = D.back().left[m * n + c];
    cpu_cache.emplace_back(k::OccupiedResponse::cache_elements(n, o, naux));
    gpu_cache.emplace_back(cpu_cache.back().size(), -1.0);
    cpu_sets.push_back({C.back().left.data(), o, cpu_cache.back().data(), nullptr});
    gpu_sets.push_back({C.back().left.data(), o, gpu_cache.back().data(), nullptr});
  }
  k::OccupiedResponse cpu(layout, cpu_sets, naux, 2);
  const std::unique_ptr<k::JKDevice> device = make_device(plan.device_bytes());
  k::StackedResponse gpu(layout, plan, *device, gpu_sets);
  for (std::size_t first = 0; first < naux; first += block) {
    cpu.cache(first, std::min(block, naux - first), rows.data() + first * stored);
    gpu.cache(first, std::min(block, naux - first), rows.data() + first * stored);
  }
  for (std::size_t s = 0; s < nocc.size(); ++s)
    CHECK(largest_apart(gpu_cache[s], cpu_cache[s]) <= kResponseRelative * largest_element(cpu_cache[s]));
  std::vector<const double*> L_views, D_views;
  for (std::size_t s = 0; s < nocc.size(); ++s) {
    L_views.push_back(L[s].left.data());
    D_views.push_back(D[s].left.data());
  }
  const auto of_L = [&](auto& r) { r.begin(L_views); };
  const auto of_D = [&](auto& r) { r.begin_symmetric(D_views); };
  const std::size_t copied_by_cache = gpu.uploaded_bytes();
  for (int product = 0; product < 3; ++product) {
    INFO("product " << product);
    const auto want = product < 2 ? response_product(cpu, of_L, rows, stored, block, n, nocc)
                                  : response_product(cpu, of_D, rows, stored, block, n, nocc);
    const auto got = product < 2 ? response_product(gpu, of_L, rows, stored, block, n, nocc)
                                 : response_product(gpu, of_D, rows, stored, block, n, nocc);
    for (std::size_t s = 0; s < nocc.size(); ++s) {
      const double apart = largest_apart(got[s], want[s]), scale = largest_element(want[s]);
      std::printf("response, %s, %zu sets, set %zu, product %d: %.2e of the largest element apart\n",
                  resident ? "resident" : "streamed", nocc.size(), s, product, apart / scale);
      CHECK(apart <= kResponseRelative * scale);
    }
  }
  // Resident rows are copied by the caching pass only; streamed ones by every pass.
  CHECK(copied_by_cache == sizeof(double) * naux * stored);
  CHECK(gpu.uploaded_bytes() == (resident ? 1 : 4) * copied_by_cache);
}

}  // namespace dfmp2::test
