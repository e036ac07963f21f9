#include "src/integrals/shell_pairs.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>

#include <libint2.hpp>
#include <omp.h>

#include "src/common/cell_grid.hpp"
#include "src/integrals/libint.hpp"

namespace dfmp2 {
namespace {

// The screening's first, cheap step bounds each pair's Schwarz bound from above without
// integrals. Every function of a shell is pointwise at most g(ρ) = Σ_p |c_p| ρ^l e^(−α_p ρ²),
// ρ = |r − A|: libint2 normalises the x^l component, and a Cartesian monomial or a solid
// harmonic of that norm is at most ρ^l in size. Since ρ^l e^(−ε ρ²) ≤ (l / (2eε))^(l/2), g is at
// most a sum of s Gaussians w_p e^(−α'_p ρ²), α'_p = α_p − ε; a product of two of them is
// e^(−α'β'/(α'+β') R²) times an s Gaussian of exponent γ = α'+β', whose Coulomb norm is
// (√2 π^(5/2))^(1/2) γ^(−5/4). The Coulomb norm's triangle inequality then bounds
// sqrt((μν|μν)) ≤ ‖|μ||ν|‖ by the sum over primitive pairs (pair_bound).
struct PrimitiveBound {
  double exponent;  // α'
  double weight;    // w
};

struct ShellBound {
  std::vector<PrimitiveBound> primitives;
  double diffuse = std::numeric_limits<double>::infinity();  // the smallest α'
  // D = Σ_p w_p (C (2α'_p)^(−5/4))^(1/2): γ^(−5/4) is log-convex, so pair_bound(a, b, R²) ≤
  // D_a D_b e^(−κ_ab R²), κ_ab the most diffuse primitives' α'β'/(α'+β').
  double diagonal = 0.0;
};

// Part of each p, d, … exponent spent on the polynomial ρ^l: more widens the prefactor less but
// slows the bound's decay with distance.
constexpr double kPolynomialShare = 0.25;
// The bound is rigorous; the margin covers rounding in it and in libint2's integrals.
constexpr double kBoundSafety = 10.0;
const double kCoulombNormFactor = std::sqrt(std::sqrt(2.0) * std::pow(std::numbers::pi, 2.5));

ShellBound shell_bound(const libint2::Shell& shell) {
  ShellBound bound;
  for (const libint2::Shell::Contraction& contraction : shell.contr)
    for (std::size_t p = 0; p < shell.alpha.size(); ++p) {
      const double alpha = shell.alpha[p], l = contraction.l;
      const double epsilon = l > 0 ? kPolynomialShare * alpha : 0.0;
      const double polynomial = l > 0 ? std::pow(l / (2.0 * std::numbers::e * epsilon), l / 2.0) : 1.0;
      const PrimitiveBound primitive{alpha - epsilon, std::abs(contraction.coeff[p]) * polynomial};
      bound.primitives.push_back(primitive);
      bound.diffuse = std::min(bound.diffuse, primitive.exponent);
      bound.diagonal +=
          primitive.weight * std::sqrt(kCoulombNormFactor * std::pow(2.0 * primitive.exponent, -1.25));
    }
  return bound;
}

double reduced_exponent(double a, double b) { return a * b / (a + b); }

// An upper bound on sqrt(max (μν|μν)) over the functions of two shells R² apart.
double pair_bound(const ShellBound& a, const ShellBound& b, double r2) {
  double sum = 0.0;
  for (const PrimitiveBound& p : a.primitives)
    for (const PrimitiveBound& q : b.primitives)
      sum += p.weight * q.weight * kCoulombNormFactor * std::pow(p.exponent + q.exponent, -1.25) *
             std::exp(-reduced_exponent(p.exponent, q.exponent) * r2);
  return sum;
}

double distance_squared(const libint2::Shell& a, const libint2::Shell& b) {
  double r2 = 0.0;
  for (int c = 0; c < 3; ++c) r2 += (a.O[c] - b.O[c]) * (a.O[c] - b.O[c]);
  return r2;
}

// The pairs whose bound, times `largest` (at least the largest Schwarz bound), reaches the
// threshold, so may be significant: the others need no integral. Row s1 lists its s2 ≤ s1 in
// order; the grid's cells are as wide as the farthest such pair can be apart.
using PairRows = std::vector<std::vector<std::size_t>>;

PairRows pair_candidates(const libint2::BasisSet& obs, const std::vector<ShellBound>& bounds, double largest,
                         double threshold) {
  double dmax = 0.0, diffuse = std::numeric_limits<double>::infinity();
  for (const ShellBound& b : bounds) {
    dmax = std::max(dmax, b.diagonal);
    diffuse = std::min(diffuse, b.diffuse);
  }
  const double floor = threshold / (kBoundSafety * largest);  // a pair's bound below this: not significant
  const double reach = std::sqrt(std::max(0.0, std::log(dmax * dmax / floor)) / reduced_exponent(diffuse, diffuse));
  std::vector<CellGrid::Point> centres;
  for (const libint2::Shell& shell : obs) centres.push_back(shell.O);
  const CellGrid grid(centres, reach);
  PairRows candidates(obs.size());
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t s1 = 0; s1 < obs.size(); ++s1) {
    std::vector<std::size_t>& row = candidates[s1];
    grid.for_each_near(obs[s1].O, [&](std::size_t s2) {
      if (s2 > s1) return;
      const double r2 = distance_squared(obs[s1], obs[s2]);
      const double decay = reduced_exponent(bounds[s1].diffuse, bounds[s2].diffuse);
      if (bounds[s1].diagonal * bounds[s2].diagonal * std::exp(-decay * r2) < floor) return;
      if (pair_bound(bounds[s1], bounds[s2], r2) >= floor) row.push_back(s2);
    });
    std::sort(row.begin(), row.end());
  }
  return candidates;
}

// sqrt(max (μν|μν)) over the functions of each candidate pair, row by row.
std::vector<std::vector<double>> schwarz_bounds(const libint2::BasisSet& obs, const PairRows& candidates,
                                                const std::function<void(double)>& progress) {
  using libint2::Operator;
  auto engines = engines_per_thread(libint2::Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  for (auto& engine : engines) engine.set_precision(0.0);  // the bounds must not be screened
  std::vector<std::vector<double>> values(candidates.size());
  std::size_t total = 0;
  for (const auto& row : candidates) total += row.size();
  std::atomic<std::size_t> done{0};
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < candidates.size(); ++s1) {
    libint2::Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 : candidates[s1]) {
      engine.compute2<Operator::coulomb, libint2::BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s1], obs[s2]);
      double largest = 0.0;
      if (buf[0] != nullptr) {
        const std::size_t n12 = obs[s1].size() * obs[s2].size();
        for (std::size_t k = 0; k < n12; ++k) largest = std::max(largest, std::abs(buf[0][k * n12 + k]));
      }
      values[s1].push_back(std::sqrt(largest));
    }
    done += candidates[s1].size();
    if (progress && omp_get_thread_num() == 0) progress(double(done) / double(std::max<std::size_t>(total, 1)));
  }
  if (progress) progress(1.0);
  return values;
}

}  // namespace

std::size_t ShellPairs::bytes() const {
  std::size_t total = table_bytes(static_cast<std::size_t>(schwarz.rows())) +
                      sizeof(kernels::StoredBlock) * layout.blocks().size() + 4 * sizeof(std::size_t) * layout.n();
  for (const auto& pair : data) total += sizeof(pair) + pair.primpairs.size() * sizeof(pair.primpairs[0]);
  return total;
}

std::size_t ShellPairs::table_bytes(std::size_t nshell) { return (sizeof(double) + sizeof(long)) * nshell * nshell; }

ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold,
                                   const std::function<void(double)>& progress) {
  const std::size_t nshell = obs.size();
  std::vector<ShellBound> bounds(nshell);
  double largest_bound = 0.0;
  for (std::size_t s = 0; s < nshell; ++s) {
    bounds[s] = shell_bound(obs[s]);
    largest_bound = std::max(largest_bound, bounds[s].diagonal * bounds[s].diagonal);
  }
  // D_a D_b bounds every pair's Schwarz bound, so the largest D² bounds the largest of them.
  const PairRows candidates = pair_candidates(obs, bounds, largest_bound, threshold);
  const std::vector<std::vector<double>> values = schwarz_bounds(obs, candidates, progress);
  ShellPairs result;
  result.schwarz = Eigen::MatrixXd::Zero(nshell, nshell);
  double largest = 0.0;
  for (std::size_t s1 = 0; s1 < nshell; ++s1)
    for (std::size_t k = 0; k < values[s1].size(); ++k) {
      const std::size_t s2 = candidates[s1][k];
      result.schwarz(s1, s2) = result.schwarz(s2, s1) = values[s1][k];
      largest = std::max(largest, values[s1][k]);
    }
  // Every other pair's bound is below threshold / largest_bound: were the largest among them,
  // its square would be below the threshold, and no pair significant here or among all pairs.
  result.index.assign(nshell * nshell, -1);
  for (std::size_t s1 = 0; s1 < nshell; ++s1)
    for (std::size_t s2 : candidates[s1])
      if (result.schwarz(s1, s2) * largest >= threshold) {
        result.index[s1 * nshell + s2] = static_cast<long>(result.pairs.size());
        result.pairs.emplace_back(s1, s2);
      }
  const auto& starts = obs.shell2bf();
  result.layout = kernels::BlockPackedLayout(starts, obs.nbf(), result.pairs);
  result.data.resize(result.pairs.size());
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t p = 0; p < result.pairs.size(); ++p)
    result.data[p] = shell_pair_data(obs[result.pairs[p].first], obs[result.pairs[p].second]);
  return result;
}

}  // namespace dfmp2
