// The one-pass packed J/K kernel against J and K summed straight from their definitions, for
// shapes that exercise partial batches and more threads than batches.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/packed.hpp"
#include "kernels/packed_jk.hpp"

namespace k = dfmp2::kernels;

namespace {

struct Case {
  std::size_t nbf, naux, nf;
};

// B^Q as full symmetric matrices, and F, with reproducible random entries.
struct Data {
  std::vector<double> packed, full, F;
  Data(const Case& c) : packed(c.naux * k::packed_size(c.nbf)), full(c.naux * c.nbf * c.nbf), F(c.nbf * c.nf) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (std::size_t q = 0; q < c.naux; ++q)
      for (std::size_t m = 0; m < c.nbf; ++m)
        for (std::size_t n = 0; n <= m; ++n) {
          const double v = u(rng);
          packed[q * k::packed_size(c.nbf) + k::packed_index(m, n)] = v;
          full[(q * c.nbf + m) * c.nbf + n] = full[(q * c.nbf + n) * c.nbf + m] = v;
        }
    for (double& f : F) f = u(rng);
  }
};

// One density D = F Fᵀ (F: nf columns).
template <typename Real>
void build_one(k::PackedJK& jk, const double* F, std::size_t nf, double* J, double* K) {
  jk.build<Real>(F, std::span<const std::size_t>(&nf, 1), J, std::span<double* const>(&K, 1));
}

}  // namespace

TEST_CASE("unpacking gives both triangles of the packed matrix, or the one SYMM reads") {
  const std::size_t n = 37;
  std::vector<double> packed(k::packed_size(n));
  for (std::size_t p = 0; p < packed.size(); ++p) packed[p] = double(p);
  const auto element = [&](std::size_t m, std::size_t c) {
    return float(packed[k::packed_index(std::max(m, c), std::min(m, c))]);
  };
  std::vector<float> both(n * n, -1.0f), upper(n * n, -1.0f);
  k::unpack_symmetric(packed.data(), n, both.data());
  k::unpack_upper(packed.data(), n, upper.data());
  for (std::size_t m = 0; m < n; ++m)
    for (std::size_t c = 0; c < n; ++c) {
      CHECK(both[m * n + c] == element(m, c));
      CHECK(upper[m * n + c] == (c <= m ? element(m, c) : -1.0f));  // column-major (c, m): upper when c ≤ m
    }
}

TEST_CASE("packed J and K equal their definitions in fp64, and within fp32 rounding in fp32") {
  const int saved_threads = omp_get_max_threads();
  for (const Case c : {Case{5, 3, 2}, Case{23, 40, 7}, Case{64, 131, 33}}) {
    for (int threads : {1, 3}) {
      INFO("nbf " << c.nbf << " naux " << c.naux << " nf " << c.nf << " threads " << threads);
      omp_set_num_threads(threads);
      const Data d(c);
      const std::size_t n = c.nbf;
      // D = F Fᵀ; γ_Q = Σ B^Q_μν D_μν; J = Σ_Q γ_Q B^Q; K = Σ_Q (B^Q F)(B^Q F)ᵀ.
      std::vector<double> D(n * n, 0.0), J_ref(n * n, 0.0), K_ref(n * n, 0.0);
      for (std::size_t m = 0; m < n; ++m)
        for (std::size_t v = 0; v < n; ++v)
          for (std::size_t i = 0; i < c.nf; ++i) D[m * n + v] += d.F[i * n + m] * d.F[i * n + v];
      for (std::size_t q = 0; q < c.naux; ++q) {
        const double* BQ = d.full.data() + q * n * n;
        double gamma = 0.0;
        for (std::size_t x = 0; x < n * n; ++x) gamma += BQ[x] * D[x];
        for (std::size_t x = 0; x < n * n; ++x) J_ref[x] += gamma * BQ[x];
        std::vector<double> X(n * c.nf, 0.0);
        for (std::size_t m = 0; m < n; ++m)
          for (std::size_t i = 0; i < c.nf; ++i)
            for (std::size_t v = 0; v < n; ++v) X[m * c.nf + i] += BQ[m * n + v] * d.F[i * n + v];
        for (std::size_t m = 0; m < n; ++m)
          for (std::size_t v = 0; v < n; ++v)
            for (std::size_t i = 0; i < c.nf; ++i) K_ref[m * n + v] += X[m * c.nf + i] * X[v * c.nf + i];
      }
      k::PackedJK jk({d.packed.data(), c.naux, n});
      std::vector<double> J(n * n), K(n * n), J32(n * n), K32(n * n);
      build_one<double>(jk, d.F.data(), c.nf, J.data(), K.data());
      build_one<float>(jk, d.F.data(), c.nf, J32.data(), K32.data());
      double scale = 0.0;
      for (double v : K_ref) scale = std::max(scale, std::abs(v));
      for (std::size_t x = 0; x < n * n; ++x) {
        CHECK(J[x] == Approx(J_ref[x]).epsilon(1e-12).margin(1e-12 * scale));
        CHECK(K[x] == Approx(K_ref[x]).epsilon(1e-12).margin(1e-12 * scale));
        CHECK(J32[x] == Approx(J_ref[x]).epsilon(1e-12).margin(1e-12 * scale));  // J stays fp64
        CHECK(std::abs(K32[x] - K_ref[x]) <= 1e-5 * scale);
      }
    }
  }
  omp_set_num_threads(saved_threads);
}

TEST_CASE("two spin densities in one pass: J of their sum, and each spin's own K") {
  // α and β factors of different widths (a triplet: two more α), and a β with none (the H atom).
  for (const auto& [nf_alpha, nf_beta] : {std::pair<std::size_t, std::size_t>{9, 7}, {3, 0}}) {
    INFO("nf " << nf_alpha << " + " << nf_beta);
    const Case c{29, 47, nf_alpha + nf_beta};
    const Data d(c);  // d.F = [F_α F_β], column-major
    const std::size_t n = c.nbf;
    k::PackedJK jk({d.packed.data(), c.naux, n});
    // References from the one-spin build: K(D_s) from F_s alone; J is linear in D.
    std::vector<double> J_alpha(n * n), J_beta(n * n, 0.0), K_alpha(n * n), K_beta(n * n, 0.0);
    build_one<double>(jk, d.F.data(), nf_alpha, J_alpha.data(), K_alpha.data());
    if (nf_beta > 0) build_one<double>(jk, d.F.data() + n * nf_alpha, nf_beta, J_beta.data(), K_beta.data());
    const std::size_t nf[2] = {nf_alpha, nf_beta};
    for (bool fp32 : {false, true}) {
      std::vector<double> J(n * n), Ka(n * n), Kb(n * n, -1.0);
      double* K[2] = {Ka.data(), Kb.data()};
      if (fp32)
        jk.build<float>(d.F.data(), nf, J.data(), K);
      else
        jk.build<double>(d.F.data(), nf, J.data(), K);
      const double tolerance = fp32 ? 1e-5 : 1e-12;
      double scale = 0.0;
      for (double v : K_alpha) scale = std::max(scale, std::abs(v));
      for (std::size_t x = 0; x < n * n; ++x) {
        CHECK(std::abs(J[x] - (J_alpha[x] + J_beta[x])) <= 1e-12 * scale);  // J is summed in fp64 either way
        CHECK(std::abs(Ka[x] - K_alpha[x]) <= tolerance * scale);
        CHECK(std::abs(Kb[x] - K_beta[x]) <= tolerance * scale);
      }
    }
  }
}
