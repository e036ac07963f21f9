// The block-packed layout against element-by-element indexing, and the one-pass J/K kernel against
// J and K summed straight from their definitions: screened layouts, symmetric and non-symmetric
// densities, several densities in one pass, rows in one block or several, 1 and 3 threads; and the
// Z-vector's occupied-projected response kernel against the same definitions.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/occupied_response.hpp"
#include "kernels/packed_jk.hpp"
#include "tests/kernels/jk_cases.hpp"

namespace k = dfmp2::kernels;
using dfmp2::test::Factors;
using dfmp2::test::random_factors;
using dfmp2::test::random_layout;

namespace {

// Element (m, c) of the symmetric matrix whose stored elements are `stored`, 0 where not stored.
double element(const k::BlockPackedLayout& layout, const double* stored, std::size_t m, std::size_t c) {
  const std::size_t at = layout.find(std::max(m, c), std::min(m, c));
  return at == k::BlockPackedLayout::npos ? 0.0 : stored[at];
}

}  // namespace

TEST_CASE("a block-packed layout stores its blocks' elements by rows, and all blocks make the packed triangle") {
  const k::BlockPackedLayout all = random_layout(9, 1.0, 3);
  for (std::size_t m = 0; m < all.n(); ++m)
    for (std::size_t c = 0; c <= m; ++c) CHECK(all.find(m, c) == m * (m + 1) / 2 + c);
  CHECK(all.size() == k::packed_size(all.n()));

  const k::BlockPackedLayout some = random_layout(12, 0.4, 5);
  std::vector<int> seen(some.size(), 0);
  std::size_t found = 0;
  for (std::size_t m = 0; m < some.n(); ++m)
    for (std::size_t c = 0; c <= m; ++c)
      if (const std::size_t at = some.find(m, c); at != k::BlockPackedLayout::npos) {
        ++seen[at];
        ++found;
        CHECK((at >= some.row_offset(m) && at < some.row_offset(m + 1)));
      }
  CHECK(found == some.size());  // every stored position is one element's
  CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(some.size()));
  CHECK(some.size() < k::packed_size(some.n()));
  CHECK(some.row_block_offset(some.row_blocks()) == some.size());
}

TEST_CASE("unpacking writes the stored elements to one triangle or both, and weighted packing gives Σ A_mk B_mk") {
  const k::BlockPackedLayout layout = random_layout(11, 0.5, 7);
  const std::size_t n = layout.n();
  std::vector<double> stored(layout.size());
  for (std::size_t p = 0; p < stored.size(); ++p) stored[p] = 1.0 + double(p);
  std::vector<float> upper(n * n, -1.0f);
  std::vector<double> both(n * n, -1.0);
  k::unpack_upper(layout, stored.data(), upper.data());
  k::unpack_symmetric(layout, stored.data(), both.data());
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> A(n * n);
  for (double& a : A) a = u(rng);
  double sum = 0.0;
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t c = 0; c < n; ++c) {
      const double value = element(layout, stored.data(), m, c);
      CHECK(both[m * n + c] == value);
      const bool written = c <= m && layout.find(m, c) != k::BlockPackedLayout::npos;
      CHECK(upper[m * n + c] == (written ? float(value) : -1.0f));  // column-major (c, m): upper when c ≤ m
      sum += A[m * n + c] * value;
    }
  const std::vector<double> weighted = k::pack_weighted(layout, A.data());
  double dot = 0.0;
  for (std::size_t p = 0; p < stored.size(); ++p) dot += weighted[p] * stored[p];
  CHECK(dot == Approx(sum).epsilon(1e-13));
}

namespace {

// naux rows of `layout`, uniform in [−1, 1], and the full symmetric matrices B^Q they store.
std::pair<std::vector<double>, std::vector<std::vector<double>>> random_rows(const k::BlockPackedLayout& layout,
                                                                              std::size_t naux, std::mt19937& rng) {
  const std::size_t n = layout.n();
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> rows(naux * layout.size());
  for (double& x : rows) x = u(rng);
  std::vector<std::vector<double>> full(naux, std::vector<double>(n * n));
  for (std::size_t q = 0; q < naux; ++q)
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t c = 0; c < n; ++c) full[q][m * n + c] = element(layout, rows.data() + q * layout.size(), m, c);
  return {rows, full};
}

// J and K of one density from their definitions: D = L Rᵀ, γ_Q = Σ B^Q_mk D_mk, J = Σ_Q γ_Q B^Q,
// K = Σ_Q (B^Q L)(B^Q R)ᵀ, with B^Q the full symmetric matrices.
void reference_jk(const std::vector<std::vector<double>>& B, std::size_t n, const Factors& f, std::vector<double>& J,
                  std::vector<double>& K) {
  const std::vector<double>& R = f.right.empty() ? f.left : f.right;
  std::vector<double> D(n * n, 0.0);
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t i = 0; i < f.columns; ++i) D[c * n + m] += f.left[i * n + m] * R[i * n + c];
  J.assign(n * n, 0.0);
  K.assign(n * n, 0.0);
  for (const auto& BQ : B) {
    double gamma = 0.0;
    for (std::size_t x = 0; x < n * n; ++x) gamma += BQ[x] * D[x];
    for (std::size_t x = 0; x < n * n; ++x) J[x] += gamma * BQ[x];
    std::vector<double> XL(n * f.columns, 0.0), XR(n * f.columns, 0.0);
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t i = 0; i < f.columns; ++i)
        for (std::size_t v = 0; v < n; ++v) {
          XL[i * n + m] += BQ[m * n + v] * f.left[i * n + v];
          XR[i * n + m] += BQ[m * n + v] * R[i * n + v];
        }
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t v = 0; v < n; ++v)
        for (std::size_t i = 0; i < f.columns; ++i) K[v * n + m] += XL[i * n + m] * XR[i * n + v];
  }
}

}  // namespace

TEST_CASE("J and K of several densities in one pass equal their definitions, in fp64 and within fp32 rounding") {
  const int saved_threads = omp_get_max_threads();
  const k::BlockPackedLayout layout = random_layout(14, 0.6, 9);
  const std::size_t n = layout.n(), naux = 37;
  std::mt19937 rng(13);
  const auto [rows, full] = random_rows(layout, naux, rng);
  // Two symmetric densities (UHF-like, one of them empty as the H atom's β) and a general one.
  const std::vector<Factors> densities{random_factors(n, 5, true, rng), random_factors(n, 0, true, rng),
                                       random_factors(n, 3, false, rng)};
  std::vector<k::DensityFactors> views;
  for (const Factors& f : densities) views.push_back(f.view());
  for (int threads : {1, 3})
    for (k::Precision precision : {k::Precision::fp64, k::Precision::fp32})
      for (std::size_t block : {naux, std::size_t(8)}) {  // all rows at once, or streamed in blocks
        INFO("threads " << threads << " fp32 " << (precision == k::Precision::fp32) << " block " << block);
        omp_set_num_threads(threads);
        k::PackedJK jk(layout, threads);
        std::vector<std::vector<double>> J(3, std::vector<double>(n * n)), K(3, std::vector<double>(n * n, -1.0));
        jk.begin(views, precision);
        for (std::size_t first = 0; first < naux; first += block)
          jk.add(rows.data() + first * layout.size(), std::min(block, naux - first));
        std::vector<double*> Jp{J[0].data(), J[1].data(), J[2].data()}, Kp{K[0].data(), K[1].data(), K[2].data()};
        jk.finish(Jp, Kp);
        for (std::size_t s = 0; s < densities.size(); ++s) {
          std::vector<double> J_ref, K_ref;
          reference_jk(full, n, densities[s], J_ref, K_ref);
          double scale = 1e-300;
          for (double v : K_ref) scale = std::max(scale, std::abs(v));
          const double tolerance = precision == k::Precision::fp32 ? 1e-5 : 1e-12;
          for (std::size_t x = 0; x < n * n; ++x) {
            CHECK(std::abs(J[s][x] - J_ref[x]) <= 1e-12 * std::max(scale, 1.0));  // J stays fp64
            CHECK(std::abs(K[s][x] - K_ref[x]) <= tolerance * std::max(scale, 1.0));
          }
        }
      }
  omp_set_num_threads(saved_threads);
}

TEST_CASE("the occupied-projected response (4J − 2K)(D) C_o equals it from J and K's definitions, for Z (also "
          "within fp32 rounding) and any symmetric D") {
  const int saved_threads = omp_get_max_threads();
  const k::BlockPackedLayout layout = random_layout(13, 0.6, 21);
  const std::size_t n = layout.n(), naux = 29, nocc = 4;
  std::mt19937 rng(17);
  const auto [rows, full] = random_rows(layout, naux, rng);
  const Factors occupied = random_factors(n, nocc, true, rng);
  // D = ½ (L Rᵀ + R Lᵀ): (4J − 2K)(D) = 4 J(L Rᵀ) − K(L Rᵀ) − K(L Rᵀ)ᵀ, J seeing only the symmetric
  // part; Z is R = C_o.
  const auto response_of = [&](const Factors& pair) {
    std::vector<double> J_ref, K_ref;
    reference_jk(full, n, pair, J_ref, K_ref);
    std::vector<double> FC(n * nocc, 0.0);
    for (std::size_t i = 0; i < nocc; ++i)
      for (std::size_t m = 0; m < n; ++m)
        for (std::size_t c = 0; c < n; ++c)
          FC[i * n + m] += (4.0 * J_ref[c * n + m] - K_ref[c * n + m] - K_ref[m * n + c]) * occupied.left[i * n + c];
    return FC;
  };
  Factors pair = random_factors(n, nocc, false, rng);
  pair.right = occupied.left;
  const std::vector<double> expected = response_of(pair);
  const Factors general = random_factors(n, 6, false, rng);
  const std::vector<double> expected_general = response_of(general);
  std::vector<double> D(n * n, 0.0);  // ½ (L Rᵀ + R Lᵀ) of `general`, column-major
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t c = 0; c < n; ++c)
      for (std::size_t i = 0; i < general.columns; ++i)
        D[c * n + m] += 0.5 * (general.left[i * n + m] * general.right[i * n + c] +
                               general.right[i * n + m] * general.left[i * n + c]);
  double scale = 1.0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  for (double v : expected_general) scale = std::max(scale, std::abs(v));
  for (int threads : {1, 3})
    for (std::size_t block : {naux, std::size_t(7)}) {
      INFO("threads " << threads << " block " << block);
      omp_set_num_threads(threads);
      std::vector<double> cache(k::OccupiedResponse::cache_elements(n, nocc, naux));
      std::vector<float> cache_fp32(cache.size());
      k::OccupiedResponse response(layout, {{occupied.left.data(), nocc, cache.data(), cache_fp32.data()}}, naux,
                                   threads);
      for (std::size_t first = 0; first < naux; first += block)
        response.cache(first, std::min(block, naux - first), rows.data() + first * layout.size());
      for (int product = 0; product < 2; ++product) {  // a second product starts from zero
        std::vector<double> FC(n * nocc, -1.0);
        const double* L[1] = {pair.left.data()};
        double* out[1] = {FC.data()};
        response.begin(L);
        for (std::size_t first = 0; first < naux; first += block)
          response.add(first, std::min(block, naux - first), rows.data() + first * layout.size());
        response.finish(out);
        for (std::size_t x = 0; x < n * nocc; ++x) CHECK(std::abs(FC[x] - expected[x]) <= 1e-12 * scale);
        response.begin(L, k::Precision::fp32);  // the same product from the fp32 cache
        for (std::size_t first = 0; first < naux; first += block)
          response.add(first, std::min(block, naux - first), rows.data() + first * layout.size());
        response.finish(out);
        double fp32_error = 0.0;
        for (std::size_t x = 0; x < n * nocc; ++x) fp32_error = std::max(fp32_error, std::abs(FC[x] - expected[x]));
        CHECK(fp32_error > 1e-12 * scale);  // rounded
        CHECK(fp32_error <= 1e-5 * scale);
        const double* D_of_set[1] = {D.data()};
        response.begin_symmetric(D_of_set);
        for (std::size_t first = 0; first < naux; first += block)
          response.add(first, std::min(block, naux - first), rows.data() + first * layout.size());
        response.finish(out);
        for (std::size_t x = 0; x < n * nocc; ++x) CHECK(std::abs(FC[x] - expected_general[x]) <= 1e-12 * scale);
      }
    }
  omp_set_num_threads(saved_threads);
}

TEST_CASE("the occupied response of two spins' sets: [J(Z_α + Z_β) − K(Z_s)] C_s of Z_s = L_s C_sᵀ + C_s L_sᵀ, "
          "and 2 [J(D_α + D_β) − K(D_s)] C_s of symmetric D_s") {
  const k::BlockPackedLayout layout = random_layout(12, 0.6, 23);
  const std::size_t n = layout.n(), naux = 31;
  const std::size_t nocc[2] = {5, 3};
  std::mt19937 rng(29);
  const auto [rows, full] = random_rows(layout, naux, rng);
  // For pairs (L_s, R_s): J(L Rᵀ + R Lᵀ) = 2 J(L Rᵀ), K(L Rᵀ + R Lᵀ) = K(L Rᵀ) + K(L Rᵀ)ᵀ, so both
  // products are [2 J_α + 2 J_β − K_s − K_sᵀ] C_s of J_s, K_s = J, K of L_s R_sᵀ (for D_s =
  // ½ (L_s R_sᵀ + R_s L_sᵀ), 2 [J(D_α + D_β) − K(D_s)] is the same sum).
  std::vector<Factors> occupied, changes, general;
  for (const std::size_t o : nocc) {
    occupied.push_back(random_factors(n, o, true, rng));
    changes.push_back(random_factors(n, o, false, rng));
    changes.back().right = occupied.back().left;
    general.push_back(random_factors(n, 4, false, rng));
  }
  const auto expected_of = [&](const std::vector<Factors>& pairs) {
    std::vector<std::vector<double>> J(2), K(2), FC(2);
    for (std::size_t s = 0; s < 2; ++s) reference_jk(full, n, pairs[s], J[s], K[s]);
    for (std::size_t s = 0; s < 2; ++s) {
      FC[s].assign(n * nocc[s], 0.0);
      for (std::size_t i = 0; i < nocc[s]; ++i)
        for (std::size_t m = 0; m < n; ++m)
          for (std::size_t c = 0; c < n; ++c)
            FC[s][i * n + m] += (2.0 * J[0][c * n + m] + 2.0 * J[1][c * n + m] - K[s][c * n + m] - K[s][m * n + c]) *
                                occupied[s].left[i * n + c];
    }
    return FC;
  };
  const std::vector<std::vector<double>> expected = expected_of(changes), expected_symmetric = expected_of(general);
  std::vector<std::vector<double>> D(2, std::vector<double>(n * n, 0.0));
  for (std::size_t s = 0; s < 2; ++s)
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t c = 0; c < n; ++c)
        for (std::size_t i = 0; i < general[s].columns; ++i)
          D[s][c * n + m] += 0.5 * (general[s].left[i * n + m] * general[s].right[i * n + c] +
                                    general[s].right[i * n + m] * general[s].left[i * n + c]);
  std::vector<std::vector<double>> cache(2);
  std::vector<k::OccupiedResponse::Set> sets;
  for (std::size_t s = 0; s < 2; ++s) {
    cache[s].resize(k::OccupiedResponse::cache_elements(n, nocc[s], naux));
    sets.push_back({occupied[s].left.data(), nocc[s], cache[s].data(), nullptr});
  }
  k::OccupiedResponse response(layout, sets, naux, 2);
  response.cache(0, naux, rows.data());
  std::vector<std::vector<double>> FC{std::vector<double>(n * nocc[0]), std::vector<double>(n * nocc[1])};
  double* out[2] = {FC[0].data(), FC[1].data()};
  const double* L[2] = {changes[0].left.data(), changes[1].left.data()};
  const double* densities[2] = {D[0].data(), D[1].data()};
  for (const bool symmetric : {false, true}) {
    INFO("symmetric " << symmetric);
    if (symmetric)
      response.begin_symmetric(densities);
    else
      response.begin(L);
    response.add(0, naux, rows.data());
    response.finish(out);
    const std::vector<std::vector<double>>& want = symmetric ? expected_symmetric : expected;
    for (std::size_t s = 0; s < 2; ++s) {
      double scale = 1.0;
      for (double v : want[s]) scale = std::max(scale, std::abs(v));
      for (std::size_t x = 0; x < FC[s].size(); ++x) CHECK(std::abs(FC[s][x] - want[s][x]) <= 1e-12 * scale);
    }
  }
}

TEST_CASE("a set without occupied orbitals (UHF's β of no electron) takes no part in the occupied response, with "
          "fp32 caches too") {
  const k::BlockPackedLayout layout = random_layout(10, 0.7, 31);
  const std::size_t n = layout.n(), naux = 17, nocc = 3;
  std::mt19937 rng(37);
  const auto [rows, full] = random_rows(layout, naux, rng);
  const Factors occupied = random_factors(n, nocc, true, rng);
  Factors change = random_factors(n, nocc, false, rng);
  change.right = occupied.left;
  // With the other set's Z zero, set 0's is [J(Z) − K(Z)] C = [2 J(L Cᵀ) − K(L Cᵀ) − K(L Cᵀ)ᵀ] C.
  std::vector<double> J, K, expected(n * nocc, 0.0);
  reference_jk(full, n, change, J, K);
  for (std::size_t i = 0; i < nocc; ++i)
    for (std::size_t m = 0; m < n; ++m)
      for (std::size_t c = 0; c < n; ++c)
        expected[i * n + m] += (2.0 * J[c * n + m] - K[c * n + m] - K[m * n + c]) * occupied.left[i * n + c];
  std::vector<double> cache(k::OccupiedResponse::cache_elements(n, nocc, naux));
  std::vector<float> cache_fp32(cache.size());
  k::OccupiedResponse response(layout, {{occupied.left.data(), nocc, cache.data(), cache_fp32.data()},
                                        {nullptr, 0, nullptr, nullptr}},
                               naux, 2);
  response.cache(0, naux, rows.data());
  std::vector<double> FC(n * nocc);
  double* out[2] = {FC.data(), nullptr};
  const double* L[2] = {change.left.data(), nullptr};
  double scale = 1.0;
  for (double v : expected) scale = std::max(scale, std::abs(v));
  for (const k::Precision precision : {k::Precision::fp64, k::Precision::fp32}) {
    response.begin(L, precision);
    response.add(0, naux, rows.data());
    response.finish(out);
    const double tolerance = precision == k::Precision::fp64 ? 1e-12 : 1e-5;  // fp32: as the test above
    for (std::size_t x = 0; x < FC.size(); ++x) CHECK(std::abs(FC[x] - expected[x]) <= tolerance * scale);
  }
}
