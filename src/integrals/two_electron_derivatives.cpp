#include "src/integrals/two_electron_derivatives.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/centre_derivatives.hpp"
#include "src/integrals/four_index.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/thread_gradients.hpp"
#include "src/molecule/basis.hpp"

namespace dfmp2 {
namespace {

using libint2::BraKet;
using libint2::Engine;
using libint2::Operator;

// Adds Σ_f w_f ∂v_f/∂R_c to the atom of each centre c, from a first-derivative engine's results:
// derivatives[3c + k] holds ∂v/∂(centre c's coordinate k) for the n values of the shell set.
template <std::size_t N>
void add_centre_derivatives(const Engine::target_ptr_vec& derivatives, const std::array<std::size_t, N>& atoms,
                            const double* weights, std::size_t n, Eigen::MatrixXd& g) {
  for (std::size_t c = 0; c < N; ++c)
    for (std::size_t k = 0; k < 3; ++k) {
      const double* d = derivatives[3 * c + k];
      double sum = 0.0;
      for (std::size_t f = 0; f < n; ++f) sum += weights[f] * d[f];
      g(static_cast<Eigen::Index>(atoms[c]), static_cast<Eigen::Index>(k)) += sum;
    }
}

// All centres on one atom: by translational invariance their derivatives cancel on it.
template <std::size_t N>
bool one_atom(const std::array<std::size_t, N>& atoms) {
  return std::all_of(atoms.begin(), atoms.end(), [&](std::size_t a) { return a == atoms[0]; });
}

// Γ_μνλσ of four_centre_gradient symmetrised as its integrals are, times the quartet's degeneracy:
// ½ D_μν D_λσ − ¼ Σ_s (D^s_μλ D^s_νσ + D^s_μσ D^s_νλ), over the quartet's functions in libint2's order.
void quartet_density(const libint2::BasisSet& obs, const std::array<std::size_t, 4>& s, double degeneracy,
                     const Eigen::MatrixXd& D, const std::vector<Eigen::MatrixXd>& D_spins, std::vector<double>& out) {
  const auto& shell2bf = obs.shell2bf();
  // Σ over α and β: a closed shell's one D_0 stands for both.
  const double exchange = 0.25 * (D_spins.size() == 1 ? 2.0 : 1.0);
  const std::size_t n1 = obs[s[0]].size(), n2 = obs[s[1]].size(), n3 = obs[s[2]].size(), n4 = obs[s[3]].size();
  out.resize(n1 * n2 * n3 * n4);
  for (std::size_t f1 = 0, f = 0; f1 < n1; ++f1) {
    const std::size_t m = shell2bf[s[0]] + f1;
    for (std::size_t f2 = 0; f2 < n2; ++f2) {
      const std::size_t n = shell2bf[s[1]] + f2;
      for (std::size_t f3 = 0; f3 < n3; ++f3) {
        const std::size_t l = shell2bf[s[2]] + f3;
        for (std::size_t f4 = 0; f4 < n4; ++f4, ++f) {
          const std::size_t t = shell2bf[s[3]] + f4;
          double K = 0.0;
          for (const Eigen::MatrixXd& Ds : D_spins) K += Ds(m, l) * Ds(n, t) + Ds(m, t) * Ds(n, l);
          out[f] = degeneracy * (0.5 * D(m, n) * D(l, t) - exchange * K);
        }
      }
    }
  }
}

// libint2's primitive-pair data of (shifted, other) for the two shells a shell's centre derivative
// is made of (CentreDerivative): made once per orbital shell pair and used for every auxiliary
// shell of a batch, where compute2 would otherwise rebuild it on each call.
class ShiftedPairData {
 public:
  ShiftedPairData(const CentreDerivative& d, const libint2::Shell& other)
      : raised_(&d.raised), raised_data_(shell_pair_data(d.raised, other)) {
    if (d.lowered) lowered_data_ = shell_pair_data(*d.lowered, other);
  }
  const libint2::ShellPair& of(const libint2::Shell& shifted) const {
    return &shifted == raised_ ? raised_data_ : lowered_data_;
  }

 private:
  const libint2::Shell* raised_;
  libint2::ShellPair raised_data_, lowered_data_;
};

// The shifted pair data ThreeCentreForces takes for orbital shells s1 ≥ s2: d(s1)'s shells beside
// s2 and, unless they are one shell, d(s2)'s beside s1.
struct PairShifts {
  ShiftedPairData a;
  std::optional<ShiftedPairData> b;
  PairShifts(const std::vector<CentreDerivative>& d, const libint2::BasisSet& obs, std::size_t s1, std::size_t s2)
      : a(d[s1], obs[s2]), b(s1 == s2 ? std::nullopt : std::optional<ShiftedPairData>(std::in_place, d[s2], obs[s1])) {}
  const ShiftedPairData* b_or_null() const { return b ? &*b : nullptr; }
};

// For one auxiliary shell P and orbital shells a, b: f_a = Σ_Pμν Γ^P_μν (P|∂μ/∂A ν) and
// f_b = Σ_Pμν Γ^P_μν (P|μ ∂ν/∂B), μ of a on A, ν of b on B, Γ the block [P][μ][ν], from
// undifferentiated integrals over l ± 1 shells (CentreContraction). The derivative with
// respect to P's centre is −(f_a + f_b), by translational invariance. P_data: (P|unit)'s pair
// data; a_data and b_data: da's shells beside b and db's beside a (b_data unused when a is b).
class ThreeCentreForces {
 public:
  std::pair<Eigen::Vector3d, Eigen::Vector3d> operator()(Engine& engine, const libint2::Shell& P,
                                                         const libint2::ShellPair& P_data, const libint2::Shell& a,
                                                         const CentreDerivative& da, const ShiftedPairData& a_data,
                                                         const libint2::Shell& b, const CentreDerivative& db,
                                                         const ShiftedPairData* b_data, const double* gamma) {
    const std::size_t nP = P.size(), na = a.size(), nb = b.size();
    // (P|shifted other), [P][shifted][other]
    const auto beside = [&engine, &P, &P_data](const libint2::Shell& other, const ShiftedPairData& data) {
      return [&engine, &P, &P_data, &other, &data](const libint2::Shell& shifted) {
        engine.compute2<Operator::coulomb, BraKet::xs_xx, 0>(P, libint2::Shell::unit(), shifted, other, &P_data,
                                                             &data.of(shifted));
        return engine.results()[0];
      };
    };
    const Eigen::Vector3d fa = contract_(a, da, nP, nb, gamma, beside(b, a_data));
    if (&a == &b) return {fa, fa};  // one shell: (P|μ ∂ν) is (P|∂μ ν) transposed, Γ^P symmetric
    transposed_.resize(nP * nb * na);  // Γ as [P][ν][μ], b's functions between P's and a's
    for (std::size_t p = 0; p < nP; ++p)
      for (std::size_t m = 0; m < na; ++m)
        for (std::size_t v = 0; v < nb; ++v) transposed_[(p * nb + v) * na + m] = gamma[(p * na + m) * nb + v];
    const Eigen::Vector3d fb = contract_(b, db, nP, na, transposed_.data(), beside(a, *b_data));
    return {fa, fb};
  }

 private:
  CentreContraction contract_;
  std::vector<double> transposed_;
};

// sqrt(max (P|P)) per auxiliary shell, for the screening.
std::vector<double> auxiliary_bounds(const libint2::BasisSet& aux) {
  std::vector<double> bound(aux.size());
  auto engines = engines_per_thread(coulomb_engine(aux.max_nprim(), aux.max_l(), BraKet::xs_xs));
  for (Engine& engine : engines) engine.set_precision(0.0);
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t p = 0; p < aux.size(); ++p) {
    Engine& engine = engines[static_cast<std::size_t>(omp_get_thread_num())];
    engine.compute2<Operator::coulomb, BraKet::xs_xs, 0>(aux[p], libint2::Shell::unit(), aux[p], libint2::Shell::unit());
    const double* values = engine.results()[0];
    const std::size_t n = aux[p].size();
    double largest = 0.0;
    for (std::size_t f = 0; values != nullptr && f < n; ++f) largest = std::max(largest, values[f * n + f]);
    bound[p] = std::sqrt(largest);
  }
  return bound;
}

// A triple (P|μν) libint2's time is sampled on: one in kLibintSampleStride of those each thread computes.
struct SampledTriple {
  std::size_t p, pair;
};

// libint2's seconds for every triple computed: the sample's integrals with a zero Γ (its
// contraction, a few multiply-adds per integral, is timed with them; the pair data, made once per
// pair in the loop, is not), on this thread, scaled to the triples computed and to the threads.
double sampled_libint_seconds(Engine& engine, const libint2::BasisSet& aux, const std::vector<libint2::ShellPair>& aux_data,
                              const libint2::BasisSet& obs, const std::vector<CentreDerivative>& derivatives,
                              const ShellPairs& pairs, const std::vector<std::vector<SampledTriple>>& samples,
                              std::size_t computed) {
  ThreeCentreForces forces;
  std::vector<double> zeros;
  double seconds = 0.0;
  std::size_t sampled = 0;
  for (const std::vector<SampledTriple>& sample : samples)
    for (const auto& [p, k] : sample) {
      const auto [s1, s2] = pairs.pairs[k];
      const PairShifts shifts(derivatives, obs, s1, s2);
      zeros.assign(aux[p].size() * obs[s1].size() * obs[s2].size(), 0.0);
      const auto start = std::chrono::steady_clock::now();
      forces(engine, aux[p], aux_data[p], obs[s1], derivatives[s1], shifts.a, obs[s2], derivatives[s2],
             shifts.b_or_null(), zeros.data());
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++sampled;
    }
  return sampled > 0 ? seconds * double(computed) / double(sampled) / double(omp_get_max_threads()) : 0.0;
}

}  // namespace

Eigen::MatrixXd metric_gradient(const libint2::BasisSet& aux, const Molecule& mol, const Eigen::MatrixXd& M) {
  require_max_l(aux, LIBINT2_MAX_AM_2eri1, "the metric derivative");
  const std::vector<std::size_t> atoms = shell_atoms(aux, mol);
  const auto& shell2bf = aux.shell2bf();
  const libint2::Shell& unit = libint2::Shell::unit();
  auto engines = engines_per_thread(coulomb_engine(aux.max_nprim(), aux.max_l(), BraKet::xs_xs, 1));
  ThreadGradients g(mol.atoms.size());
#pragma omp parallel
  {
    std::vector<double> weights;
#pragma omp for schedule(dynamic)
    for (std::size_t s1 = 0; s1 < aux.size(); ++s1) {
      Engine& engine = engines[static_cast<std::size_t>(omp_get_thread_num())];
      for (std::size_t s2 = 0; s2 < s1; ++s2) {  // s1 == s2: one atom
        const std::array<std::size_t, 2> centres{atoms[s1], atoms[s2]};
        if (one_atom(centres)) continue;
        engine.compute2<Operator::coulomb, BraKet::xs_xs, 1>(aux[s1], unit, aux[s2], unit);
        if (engine.results()[0] == nullptr) continue;
        const std::size_t n1 = aux[s1].size(), n2 = aux[s2].size();
        weights.resize(n1 * n2);
        for (std::size_t f1 = 0; f1 < n1; ++f1)  // (P|Q) and (Q|P)
          for (std::size_t f2 = 0; f2 < n2; ++f2) weights[f1 * n2 + f2] = 2.0 * M(shell2bf[s1] + f1, shell2bf[s2] + f2);
        add_centre_derivatives(engine.results(), centres, weights.data(), n1 * n2, g.mine());
      }
    }
  }
  return g.sum();
}

ThreeCentreScreening::ThreeCentreScreening(const libint2::BasisSet& obs, const ShellPairs& pairs, double threshold)
    : pair_bounds(pairs.pairs.size()), threshold(threshold) {
  const std::vector<CentreDerivative> derivatives(obs.begin(), obs.end());
  auto engines = engines_per_thread(Engine(Operator::coulomb, obs.max_nprim(), obs.max_l() + 1));
  for (Engine& engine : engines) engine.set_precision(0.0);  // bounds must not be screened
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t k = 0; k < pairs.pairs.size(); ++k) {
    const auto [s1, s2] = pairs.pairs[k];
    Engine& engine = engines[static_cast<std::size_t>(omp_get_thread_num())];
    pair_bounds[k] = derivative_norm_bound(engine, obs[s1], derivatives[s1], obs[s2]);
    if (s1 != s2)
      pair_bounds[k] = std::max(pair_bounds[k], derivative_norm_bound(engine, obs[s2], derivatives[s2], obs[s1]));
  }
}

Eigen::MatrixXd three_centre_gradient(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                      const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                      const Molecule& mol, const ThreeCentreDensity& gamma) {
  require_max_l(obs, max_differentiable_l(), "the three-centre derivative");
  const std::vector<std::size_t> aux_atoms = shell_atoms(aux, mol), obs_atoms = shell_atoms(obs, mol);
  const std::vector<CentreDerivative> derivatives(obs.begin(), obs.end());
  std::vector<libint2::ShellPair> aux_data;
  for (const libint2::Shell& P : aux) aux_data.push_back(shell_pair_data(P, libint2::Shell::unit()));
  const std::vector<double> aux_bound = auxiliary_bounds(aux);
  auto engines = engines_per_thread(coulomb_engine(std::max(aux.max_nprim(), obs.max_nprim()),
                                                   std::max(aux.max_l(), obs.max_l() + 1), BraKet::xs_xx));
  ThreadGradients g(mol.atoms.size());
  std::vector<std::vector<SampledTriple>> samples(engines.size());
  std::vector<std::size_t> computed(engines.size(), 0);
  if (gamma.progress) gamma.progress(0.0);
  for (std::size_t b = 0; b < gamma.batches.size(); ++b) {
    const ShellRange batch = gamma.batches[b];
    gamma.load(batch);
#pragma omp parallel
    {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      ThreeCentreForces forces;
      std::vector<double> block;
#pragma omp for schedule(dynamic)
      for (std::size_t k = 0; k < pairs.pairs.size(); ++k) {
        const auto [s1, s2] = pairs.pairs[k];
        const double degeneracy = s1 == s2 ? 1.0 : 2.0;  // (P|μν) and (P|νμ)
        const PairShifts shifts(derivatives, obs, s1, s2);
        for (std::size_t p = batch.first; p < batch.last; ++p) {
          const std::array<std::size_t, 3> centres{aux_atoms[p], obs_atoms[s1], obs_atoms[s2]};
          if (one_atom(centres)) continue;
          block.resize(aux[p].size() * obs[s1].size() * obs[s2].size());
          gamma.block(p, s1, s2, block.data());
          double largest = 0.0;
          for (const double value : block) largest = std::max(largest, std::abs(value));
          if (largest * aux_bound[p] * screening.pair_bounds[k] < screening.threshold) continue;
          if (gamma.work != nullptr && computed[thread]++ % kLibintSampleStride == 0) samples[thread].push_back({p, k});
          const auto [f1, f2] = forces(engines[thread], aux[p], aux_data[p], obs[s1], derivatives[s1], shifts.a,
                                       obs[s2], derivatives[s2], shifts.b_or_null(), block.data());
          Eigen::MatrixXd& mine = g.mine();
          mine.row(static_cast<Eigen::Index>(obs_atoms[s1])) += degeneracy * f1.transpose();
          mine.row(static_cast<Eigen::Index>(obs_atoms[s2])) += degeneracy * f2.transpose();
          mine.row(static_cast<Eigen::Index>(aux_atoms[p])) -= degeneracy * (f1 + f2).transpose();
        }
      }
    }
    if (gamma.progress) gamma.progress(static_cast<double>(b + 1) / static_cast<double>(gamma.batches.size()));
  }
  if (gamma.work != nullptr)
    gamma.work->libint_seconds += sampled_libint_seconds(engines[0], aux, aux_data, obs, derivatives, pairs, samples,
                                                         std::accumulate(computed.begin(), computed.end(), std::size_t(0)));
  return g.sum();
}

Eigen::MatrixXd four_centre_gradient(const libint2::BasisSet& obs, const ShellPairs& pairs, const Molecule& mol,
                                     const std::vector<Eigen::MatrixXd>& D_spins) {
  require_max_l(obs, max_differentiable_l(), "the four-centre derivative");
  const std::vector<std::size_t> atoms = shell_atoms(obs, mol);
  Eigen::MatrixXd D = D_spins[0];
  for (std::size_t s = 1; s < D_spins.size(); ++s) D += D_spins[s];
  if (D_spins.size() == 1) D *= 2.0;
  // Γ holds products of two densities: Dmax times the largest |D_s| bounds them.
  double largest = 0.0;
  for (const Eigen::MatrixXd& Ds : D_spins) largest = std::max(largest, Ds.cwiseAbs().maxCoeff());
  const Eigen::MatrixXd bound = shell_block_max(obs, D_spins) * largest;
  auto engines = engines_per_thread(coulomb_engine(obs.max_nprim(), obs.max_l(), BraKet::xx_xx, 1));
  std::vector<std::vector<double>> gamma(engines.size());
  ThreadGradients g(mol.atoms.size());
  for_each_bra_of_part(pairs, 0, 1, [&](std::size_t p12, int thread) {
    Engine& engine = engines[static_cast<std::size_t>(thread)];
    const auto [s1, s2] = pairs.pairs[p12];
    for_each_quartet(pairs, bound, p12, [&](std::size_t p34) {
      const auto [s3, s4] = pairs.pairs[p34];
      const std::array<std::size_t, 4> centres{atoms[s1], atoms[s2], atoms[s3], atoms[s4]};
      if (one_atom(centres)) return;
      engine.compute2<Operator::coulomb, BraKet::xx_xx, 1>(obs[s1], obs[s2], obs[s3], obs[s4], &pairs.data[p12],
                                                           &pairs.data[p34]);
      if (engine.results()[0] == nullptr) return;
      const double degeneracy = (s1 == s2 ? 1.0 : 2.0) * (s3 == s4 ? 1.0 : 2.0) * (p12 == p34 ? 1.0 : 2.0);
      std::vector<double>& weights = gamma[static_cast<std::size_t>(thread)];
      quartet_density(obs, {s1, s2, s3, s4}, degeneracy, D, D_spins, weights);
      add_centre_derivatives(engine.results(), centres, weights.data(), weights.size(), g.mine());
    });
  });
  return g.sum();
}

}  // namespace dfmp2
