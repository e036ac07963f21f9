// Random block-packed layouts and density factors for the J/K tests (tests/kernels, tests/gpu).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "kernels/block_packed.hpp"
#include "kernels/gpu/gpu_jk_plan.hpp"
#include "kernels/packed_jk.hpp"

namespace dfmp2::test {

namespace k = dfmp2::kernels;

// Row blocks of 1–4 functions; every diagonal block stored, an off-diagonal one with probability
// `kept` (1: all, the plain packed triangle).
inline k::BlockPackedLayout random_layout(std::size_t nblocks, double kept, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::size_t> starts;
  std::size_t n = 0;
  for (std::size_t b = 0; b < nblocks; ++b) {
    starts.push_back(n);
    n += 1 + rng() % 4;
  }
  std::vector<std::pair<std::size_t, std::size_t>> stored;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::size_t r = 0; r < nblocks; ++r)
    for (std::size_t c = 0; c <= r; ++c)
      if (c == r || u(rng) < kept) stored.emplace_back(r, c);
  return k::BlockPackedLayout(starts, n, stored);
}

struct Factors {
  std::vector<double> left, right;  // right empty: symmetric
  std::size_t columns;
  k::DensityFactors view() const { return {left.data(), right.empty() ? nullptr : right.data(), columns}; }
};

inline Factors random_factors(std::size_t n, std::size_t columns, bool symmetric, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Factors f{std::vector<double>(n * columns), {}, columns};
  for (double& x : f.left) x = u(rng);
  if (!symmetric) {
    f.right.resize(n * columns);
    for (double& x : f.right) x = u(rng);
  }
  return f;
}

// naux rows of `layout`, uniform in [−1, 1].
inline std::vector<double> random_packed_rows(const k::BlockPackedLayout& layout, std::size_t naux, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> rows(naux * layout.size());
  for (double& x : rows) x = u(rng);
  return rows;
}

struct JKMatrices {
  std::vector<std::vector<double>> J, K;
};

// J and K (n × n) of `densities` from a builder with PackedJK's begin and finish, its rows added
// `block` at a time by add(first, rows, count).
template <typename Builder, typename Add>
JKMatrices build_jk(Builder& jk, Add add, std::size_t n, const std::vector<Factors>& densities, k::Precision precision,
                    const std::vector<double>& rows, std::size_t stored, std::size_t block) {
  std::vector<k::DensityFactors> views;
  for (const Factors& f : densities) views.push_back(f.view());
  jk.begin(views, precision);
  const std::size_t naux = rows.size() / stored;
  for (std::size_t first = 0; first < naux; first += block)
    add(first, rows.data() + first * stored, std::min(block, naux - first));
  JKMatrices out{std::vector<std::vector<double>>(densities.size(), std::vector<double>(n * n, -1.0)),
                 std::vector<std::vector<double>>(densities.size(), std::vector<double>(n * n, -1.0))};
  std::vector<double*> J, K;
  for (std::size_t s = 0; s < densities.size(); ++s) {
    J.push_back(out.J[s].data());
    K.push_back(out.K[s].data());
  }
  jk.finish(J, K);
  return out;
}

// The largest |a − b| over all matrices of one kind, relative to the largest |b| (at least 1e-300);
// infinite where a is not finite.
inline double relative_difference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double most = 0.0, scale = 1e-300;
  for (std::size_t s = 0; s < b.size(); ++s)
    for (std::size_t x = 0; x < b[s].size(); ++x) {
      if (!std::isfinite(a[s][x])) return HUGE_VAL;
      most = std::max(most, std::abs(a[s][x] - b[s][x]));
      scale = std::max(scale, std::abs(b[s][x]));
    }
  return most / scale;
}

// The first GPU J/K plan, budgets shrinking by a tenth from the resident one's, that streams.
inline k::GpuJKPlan streamed_plan(std::size_t nbf, std::size_t stored, std::size_t rows, std::size_t densities) {
  std::size_t budget = k::plan_gpu_jk(nbf, stored, rows, densities, std::size_t(1) << 40).device_bytes();
  for (;; budget = budget / 10 * 9)
    if (const k::GpuJKPlan plan = k::plan_gpu_jk(nbf, stored, rows, densities, budget); !plan.resident) return plan;
}

// Builds by a GPU J/K builder (GpuJK, StackedJK) beside PackedJK's of the same rows: fp64, fp32
// and fp64 again (the stack re-zeroed for each precision), rows added all at once and `block` at a
// time. J (fp64 always) and K within the tolerances relative to the largest element; resident
// rows copied by the first build only, streamed ones by every build.
template <typename Builder>
void check_like_packed(Builder& builder, bool resident, const k::BlockPackedLayout& layout,
                       const std::vector<Factors>& densities, const std::vector<double>& rows, std::size_t block,
                       double fp64_relative, double fp32_relative) {
  const std::size_t n = layout.n(), stored = layout.size(), naux = rows.size() / stored;
  k::PackedJK packed(layout, 2);
  const auto packed_add = [&](std::size_t, const double* r, std::size_t count) { packed.add(r, count); };
  const auto builder_add = [&](std::size_t first, const double* r, std::size_t count) { builder.add(first, r, count); };
  for (const k::Precision precision : {k::Precision::fp64, k::Precision::fp32, k::Precision::fp64}) {
    const bool fp32 = precision == k::Precision::fp32;
    for (const std::size_t added : {naux, block}) {
      INFO((fp32 ? "fp32" : "fp64") << ", rows added " << added << " at a time");
      const std::size_t uploaded = builder.uploaded_bytes();
      const JKMatrices cpu = build_jk(packed, packed_add, n, densities, precision, rows, stored, added);
      const JKMatrices other = build_jk(builder, builder_add, n, densities, precision, rows, stored, added);
      CHECK(relative_difference(other.J, cpu.J) <= fp64_relative);
      CHECK(relative_difference(other.K, cpu.K) <= (fp32 ? fp32_relative : fp64_relative));
      const std::size_t copied = builder.uploaded_bytes() - uploaded;
      CHECK(copied == (resident && uploaded > 0 ? 0 : sizeof(double) * naux * stored));
    }
  }
}

}  // namespace dfmp2::test
