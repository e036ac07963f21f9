// The GPU J/K build's host logic (kernels/gpu/stacked_jk: buffers, resident and streamed rows,
// batches, the stacked products) run on a host stand-in for the GPU against PackedJK, and its
// device memory plan (kernels/gpu/gpu_jk_plan); the GPU DF transform's (kernels/gpu/
// stacked_transform: buffers, batches, products) on the same stand-in against the CPU transform's
// products per Q (the full square times C_occ, then C_virᵀ times that), and its plan. The CUDA
// kernels and cuBLAS calls themselves are checked by tests/gpu/test_gpu_jk.cpp and
// test_gpu_transform.cpp where a GPU is at hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gpu/gpu_jk_plan.hpp"
#include "kernels/gpu/stacked_jk.hpp"
#include "kernels/gpu/stacked_transform.hpp"
#include "kernels/packed_jk.hpp"
#include "tests/kernels/host_jk_device.hpp"
#include "tests/kernels/jk_cases.hpp"

namespace k = dfmp2::kernels;
using namespace dfmp2::test;

namespace {

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

namespace {

struct SpinOrbitals {
  std::vector<double> C_occ, C_vir;
  std::size_t nocc = 0, nvir = 0;
};

SpinOrbitals random_orbitals(std::size_t n, std::size_t nocc, std::size_t nvir, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  SpinOrbitals s{std::vector<double>(n * nocc), std::vector<double>(n * nvir), nocc, nvir};
  for (double& x : s.C_occ) x = value(rng);
  for (double& x : s.C_vir) x = value(rng);
  return s;
}

// Rows [Q][every spin's row-major [i][a]] as the CPU transform makes them.
std::vector<double> cpu_transform(const k::BlockPackedLayout& layout, const std::vector<double>& rows, std::size_t nq,
                                  const std::vector<SpinOrbitals>& spins) {
  const std::size_t n = layout.n();
  std::size_t nov_all = 0;
  for (const SpinOrbitals& s : spins) nov_all += s.nocc * s.nvir;
  std::vector<double> out(nq * nov_all), square(n * n), X;
  for (std::size_t q = 0; q < nq; ++q) {
    k::unpack_symmetric(layout, rows.data() + q * layout.size(), square.data());
    std::size_t offset = 0;
    for (const SpinOrbitals& s : spins) {
      X.assign(n * s.nocc, 0.0);
      k::cpu_engine().gemm(k::Op::none, k::Op::none, 1.0, k::host_matrix<const double>(square.data(), n, n, n),
                           k::host_matrix(s.C_occ.data(), n, s.nocc, n), 0.0, k::host_matrix(X.data(), n, s.nocc, n));
      k::cpu_engine().gemm(k::Op::transpose, k::Op::none, 1.0, k::host_matrix(s.C_vir.data(), n, s.nvir, n),
                           k::host_matrix<const double>(X.data(), n, s.nocc, n), 0.0,
                           k::host_matrix(out.data() + q * nov_all + offset, s.nvir, s.nocc, s.nvir));
      offset += s.nocc * s.nvir;
    }
  }
  return out;
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0.0;
  for (std::size_t x = 0; x < a.size(); ++x) d = std::max(d, std::abs(a[x] - b[x]));
  return d;
}

double largest(const std::vector<double>& a) {
  double m = 0.0;
  for (const double x : a) m = std::max(m, std::abs(x));
  return m;
}

// Against the CPU's products (in other orders): measured up to 4.0e-16 of the largest element.
constexpr double kRelative = 4e-15;

}  // namespace

TEST_CASE("the GPU transform's plan: batches of at most the calls' rows, within the memory given, refused when one "
          "row does not fit") {
  const std::size_t nbf = 600, stored = 150000, nocc = 50, nvir = 550;
  const k::GpuTransformPlan large = k::plan_gpu_transform(nbf, stored, nocc, nvir, nocc * nvir, 64, std::size_t(80) << 30);
  CHECK(large.batch_q >= 1);
  CHECK(large.batch_q <= 64);
  CHECK(large.device_bytes() <= std::size_t(80) << 30);
  CHECK(large.squares_bytes >= sizeof(double) * nbf * nbf * large.batch_q);
  CHECK(large.out_bytes >= sizeof(double) * nocc * nvir * large.batch_q);
  const k::GpuTransformPlan small = k::plan_gpu_transform(nbf, stored, nocc, nvir, nocc * nvir, 64, std::size_t(40) << 20);
  CHECK(small.batch_q >= 1);
  CHECK(small.batch_q < large.batch_q);
  CHECK(small.device_bytes() <= std::size_t(40) << 20);
  CHECK(k::plan_gpu_transform(nbf, stored, nocc, nvir, nocc * nvir, 3, std::size_t(80) << 30).batch_q == 3);
  CHECK_THROWS_AS(k::plan_gpu_transform(nbf, stored, nocc, nvir, nocc * nvir, 64, std::size_t(4) << 20), k::GpuError);
}

TEST_CASE("the GPU transform's logic on the host equals the CPU's products: one spin, two spins one of them empty, "
          "in one batch and in many") {
  const k::BlockPackedLayout layout = random_layout(30, 0.5, 71);
  const std::size_t n = layout.n(), nq = 23;
  std::mt19937 rng(73);
  const std::vector<double> rows = random_packed_rows(layout, nq, rng);
  const std::vector<std::vector<SpinOrbitals>> cases{
      {random_orbitals(n, 5, n - 5, rng)},
      {random_orbitals(n, 6, n - 6, rng), random_orbitals(n, 4, n - 4, rng)},
      {random_orbitals(n, 1, n - 1, rng), random_orbitals(n, 0, n, rng)}};
  for (const std::vector<SpinOrbitals>& spins : cases) {
    std::size_t nocc_all = 0, nvir_all = 0, nov_all = 0;
    std::vector<k::TransformOrbitals> orbitals;
    for (const SpinOrbitals& s : spins) {
      nocc_all += s.nocc;
      nvir_all += s.nvir;
      nov_all += s.nocc * s.nvir;
      orbitals.push_back({s.C_occ.data(), s.nocc, s.C_vir.data(), s.nvir});
    }
    const std::vector<double> expected = cpu_transform(layout, rows, nq, spins);
    const k::GpuTransformPlan whole =
        k::plan_gpu_transform(n, layout.size(), nocc_all, nvir_all, nov_all, nq, std::size_t(1) << 40);
    REQUIRE(whole.batch_q == nq);
    // The memory of batches of 4 rows: several batches, the last one shorter.
    const std::size_t room = k::plan_gpu_transform(n, layout.size(), nocc_all, nvir_all, nov_all, 4, std::size_t(1) << 40)
                                 .device_bytes();
    const k::GpuTransformPlan batched = k::plan_gpu_transform(n, layout.size(), nocc_all, nvir_all, nov_all, nq, room);
    REQUIRE(batched.batch_q >= 4);
    REQUIRE(batched.batch_q < nq / 2);
    for (const k::GpuTransformPlan& plan : {whole, batched}) {
      INFO(spins.size() << " spins, batches of " << plan.batch_q);
      HostJKDevice device(plan.device_bytes());
      k::StackedTransform transform(layout, plan, orbitals, device);
      REQUIRE(transform.row_elements() == nov_all);
      std::vector<double> out(nq * nov_all, -1.0);
      // Twice: the stack's unstored blocks stay zero across calls.
      for (int call = 0; call < 2; ++call) {
        transform(rows.data(), nq, out.data());
        CHECK(largest_difference(out, expected) <= kRelative * largest(expected));
      }
      if (spins.size() == 2) CHECK(transform.offset(1) == spins[0].nocc * spins[0].nvir);
    }
  }
}
