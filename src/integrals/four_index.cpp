#include "src/integrals/four_index.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/libint.hpp"

namespace dfmp2 {
namespace {

using libint2::BraKet;
using libint2::Operator;

// The densities one quartet contracts with: the spins' mean D_J = Σ_s D_s / kSpins for the
// Coulomb lines, which sum to 2J(D_J) = J(D) (D = 2 D_0 for a closed shell, D_α + D_β for UHF),
// and each spin's own D_s for its exchange lines, which sum to −K(D_s).
template <std::size_t kSpins>
struct QuartetDensities {
  const Eigen::MatrixXd& coulomb;
  std::array<const Eigen::MatrixXd*, kSpins> exchange;
};

// Adds one quartet's contribution to every spin's G (6 Coulomb/exchange updates per unique
// integral and spin).
template <std::size_t kSpins>
void add_quartet(const libint2::BasisSet& obs, const std::vector<std::size_t>& shell2bf,
                 const ShellPairs& pairs, std::size_t p12, std::size_t p34, const double* values,
                 const QuartetDensities<kSpins>& D, std::array<Eigen::MatrixXd, kSpins>& G) {
  const auto [s1, s2] = pairs.pairs[p12];
  const auto [s3, s4] = pairs.pairs[p34];
  const double degeneracy = (s1 == s2 ? 1.0 : 2.0) * (s3 == s4 ? 1.0 : 2.0) * (p12 == p34 ? 1.0 : 2.0);
  const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size(), n3 = obs[s3].size(), n4 = obs[s4].size();
  for (std::size_t f1 = 0, f1234 = 0; f1 < n1; ++f1) {
    const std::size_t b1 = shell2bf[s1] + f1;
    for (std::size_t f2 = 0; f2 < n2; ++f2) {
      const std::size_t b2 = shell2bf[s2] + f2;
      for (std::size_t f3 = 0; f3 < n3; ++f3) {
        const std::size_t b3 = shell2bf[s3] + f3;
        for (std::size_t f4 = 0; f4 < n4; ++f4, ++f1234) {
          const std::size_t b4 = shell2bf[s4] + f4;
          const double v = values[f1234] * degeneracy;
          const double coulomb_12 = D.coulomb(b3, b4) * v, coulomb_34 = D.coulomb(b1, b2) * v;
          for (std::size_t s = 0; s < kSpins; ++s) {
            const Eigen::MatrixXd& Ds = *D.exchange[s];
            Eigen::MatrixXd& Gs = G[s];
            Gs(b1, b2) += coulomb_12;
            Gs(b3, b4) += coulomb_34;
            Gs(b1, b3) -= 0.25 * Ds(b2, b4) * v;
            Gs(b2, b4) -= 0.25 * Ds(b1, b3) * v;
            Gs(b1, b4) -= 0.25 * Ds(b2, b3) * v;
            Gs(b2, b3) -= 0.25 * Ds(b1, b4) * v;
          }
        }
      }
    }
  }
}

const double* compute_quartet(libint2::Engine& engine, const libint2::BasisSet& obs,
                              const ShellPairs& pairs, std::size_t p12, std::size_t p34) {
  const auto [s1, s2] = pairs.pairs[p12];
  const auto [s3, s4] = pairs.pairs[p34];
  engine.compute2<Operator::coulomb, BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s3], obs[s4], &pairs.data[p12],
                                                       &pairs.data[p34]);
  return engine.results()[0];
}

// Each spin's G from the quartets `visit_bra(p12, thread, add)` hands to add(p34, values), over
// the bra pairs of this part (for_each_bra_of_part).
template <std::size_t kSpins, typename VisitBra>
std::vector<Eigen::MatrixXd> contract_quartets(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                               const std::vector<Eigen::MatrixXd>& D_spins, int part, int parts,
                                               VisitBra&& visit_bra) {
  const auto shell2bf = obs.shell2bf();
  const auto nbf = static_cast<Eigen::Index>(obs.nbf());
  const Eigen::MatrixXd mean = kSpins == 1 ? D_spins[0] : Eigen::MatrixXd(0.5 * (D_spins[0] + D_spins[1]));
  QuartetDensities<kSpins> D{mean, {}};
  for (std::size_t s = 0; s < kSpins; ++s) D.exchange[s] = &D_spins[s];
  std::array<Eigen::MatrixXd, kSpins> zero;
  zero.fill(Eigen::MatrixXd::Zero(nbf, nbf));
  std::vector<std::array<Eigen::MatrixXd, kSpins>> g(static_cast<std::size_t>(omp_get_max_threads()), zero);
  for_each_bra_of_part(pairs, part, parts, [&](std::size_t p12, int thread) {
    visit_bra(p12, thread, [&](std::size_t p34, const double* values) {
      add_quartet<kSpins>(obs, shell2bf, pairs, p12, p34, values, D, g[thread]);
    });
  });
  std::vector<Eigen::MatrixXd> G;
  for (std::size_t s = 0; s < kSpins; ++s) {
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(nbf, nbf);
    for (const auto& share : g) sum += share[s];
    G.push_back(0.5 * (sum + sum.transpose()));
  }
  return G;
}

template <std::size_t kSpins>
std::vector<Eigen::MatrixXd> two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                               const std::vector<Eigen::MatrixXd>& D_spins, int part, int parts) {
  const Eigen::MatrixXd Dmax = shell_block_max(obs, D_spins);
  auto engines = engines_per_thread(libint2::Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  return contract_quartets<kSpins>(obs, pairs, D_spins, part, parts, [&](std::size_t p12, int thread, auto&& add) {
    for_each_quartet(pairs, Dmax, p12, [&](std::size_t p34) {
      if (const double* values = compute_quartet(engines[thread], obs, pairs, p12, p34)) add(p34, values);
    });
  });
}

// The store keeps the quartets whose Schwarz bound alone reaches the threshold: those of any
// density whose elements are at most 1 in magnitude (for_each_quartet's D_max of ones).
Eigen::MatrixXd unit_density_bound(const libint2::BasisSet& obs) {
  return Eigen::MatrixXd::Ones(static_cast<Eigen::Index>(obs.size()), static_cast<Eigen::Index>(obs.size()));
}

std::size_t quartet_size(const libint2::BasisSet& obs, const ShellPairs& pairs, std::size_t p12, std::size_t p34) {
  const auto [s1, s2] = pairs.pairs[p12];
  const auto [s3, s4] = pairs.pairs[p34];
  return obs[s1].size() * obs[s2].size() * obs[s3].size() * obs[s4].size();
}

}  // namespace

Eigen::MatrixXd shell_block_max(const libint2::BasisSet& obs, const std::vector<Eigen::MatrixXd>& D_spins) {
  const auto shell2bf = obs.shell2bf();
  const std::size_t nshell = obs.size();
  Eigen::MatrixXd Dmax = Eigen::MatrixXd::Zero(nshell, nshell);
  for (const Eigen::MatrixXd& D : D_spins)
    for (std::size_t s1 = 0; s1 < nshell; ++s1)
      for (std::size_t s2 = 0; s2 < nshell; ++s2)
        Dmax(s1, s2) = std::max(
            Dmax(s1, s2), D.block(shell2bf[s1], shell2bf[s2], obs[s1].size(), obs[s2].size()).cwiseAbs().maxCoeff());
  return Dmax;
}

std::vector<Eigen::MatrixXd> exact_two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                                     const std::vector<Eigen::MatrixXd>& D_spins, int part,
                                                     int parts) {
  if (D_spins.size() == 1) return two_electron_fock<1>(obs, pairs, D_spins, part, parts);
  if (D_spins.size() == 2) return two_electron_fock<2>(obs, pairs, D_spins, part, parts);
  throw std::invalid_argument("exact_two_electron_fock: one or two spin densities, not " +
                              std::to_string(D_spins.size()));
}

double exact_fock_libint_seconds(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                 const std::vector<Eigen::MatrixXd>& D_spins, int part, int parts) {
  const Eigen::MatrixXd Dmax = shell_block_max(obs, D_spins);
  std::vector<std::pair<std::size_t, std::size_t>> sample;
  std::size_t computed = 0;
  for (std::size_t p12 = static_cast<std::size_t>(part); p12 < pairs.pairs.size();
       p12 += static_cast<std::size_t>(parts))
    for_each_quartet(pairs, Dmax, p12, [&](std::size_t p34) {
      if (computed++ % kLibintSampleStride == 0) sample.emplace_back(p12, p34);
    });
  if (sample.empty()) return 0.0;
  libint2::Engine engine(Operator::coulomb, obs.max_nprim(), obs.max_l());
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [p12, p34] : sample) compute_quartet(engine, obs, pairs, p12, p34);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds * double(computed) / double(sample.size()) / double(omp_get_max_threads());
}

std::size_t StoredQuartets::bytes(const libint2::BasisSet& obs, const ShellPairs& pairs, int part, int parts) {
  const Eigen::MatrixXd bound = unit_density_bound(obs);
  std::size_t total = 0;
  for (std::size_t p12 = static_cast<std::size_t>(part); p12 < pairs.pairs.size();
       p12 += static_cast<std::size_t>(parts))
    for_each_quartet(pairs, bound, p12, [&](std::size_t p34) {
      total += sizeof(double) * quartet_size(obs, pairs, p12, p34) + sizeof(std::uint32_t);
    });
  return total;
}

StoredQuartets::StoredQuartets(const libint2::BasisSet& obs, const ShellPairs& pairs, int part, int parts)
    : obs_(obs), pairs_(pairs), part_(part), parts_(parts), kets_(pairs.pairs.size()), values_(pairs.pairs.size()) {
  const Eigen::MatrixXd bound = unit_density_bound(obs);
  auto engines = engines_per_thread(libint2::Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  for_each_bra_of_part(pairs, part, parts, [&](std::size_t p12, int thread) {
    libint2::Engine& engine = engines[static_cast<std::size_t>(thread)];
    for_each_quartet(pairs, bound, p12, [&](std::size_t p34) {
      const std::size_t size = quartet_size(obs, pairs, p12, p34);
      const double* values = compute_quartet(engine, obs, pairs, p12, p34);
      kets_[p12].push_back(static_cast<std::uint32_t>(p34));
      if (values) values_[p12].insert(values_[p12].end(), values, values + size);
      else values_[p12].resize(values_[p12].size() + size, 0.0);  // libint2's "all zero"
    });
  });
}

std::vector<Eigen::MatrixXd> StoredQuartets::fock(const std::vector<Eigen::MatrixXd>& D_spins) const {
  const auto visit_bra = [this](std::size_t p12, int, auto&& add) {
    const double* values = values_[p12].data();
    for (const std::uint32_t p34 : kets_[p12]) {
      add(p34, values);
      values += quartet_size(obs_, pairs_, p12, p34);
    }
  };
  if (D_spins.size() == 1) return contract_quartets<1>(obs_, pairs_, D_spins, part_, parts_, visit_bra);
  if (D_spins.size() == 2) return contract_quartets<2>(obs_, pairs_, D_spins, part_, parts_, visit_bra);
  throw std::invalid_argument("StoredQuartets::fock: one or two spin densities, not " + std::to_string(D_spins.size()));
}

}  // namespace dfmp2
