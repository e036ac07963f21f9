#include "src/integrals/integrals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <libint2.hpp>
#include <omp.h>

namespace dfmp2 {
namespace {

using libint2::BraKet;
using libint2::Engine;
using libint2::Operator;
using libint2::Shell;

std::vector<Engine> engines_per_thread(const Engine& prototype) {
  return std::vector<Engine>(static_cast<std::size_t>(omp_get_max_threads()), prototype);
}

std::size_t max_nprim(const libint2::BasisSet& a, const libint2::BasisSet& b) {
  return std::max(a.max_nprim(), b.max_nprim());
}

int max_l(const libint2::BasisSet& a, const libint2::BasisSet& b) {
  return std::max(a.max_l(), b.max_l());
}

// The bra-ket is fixed at construction: an engine built for the default four-centre kind and
// switched later refuses auxiliary shells above the four-centre limit, below the 2-/3-centre one.
Engine coulomb_engine(std::size_t max_nprim, int max_l, BraKet braket) {
  return Engine(Operator::coulomb, max_nprim, max_l, 0, std::numeric_limits<double>::epsilon(),
                libint2::operator_traits<Operator::coulomb>::default_params(), braket);
}

// One-electron operator matrix, OpenMP over shell pairs (s1 ≥ s2).
Eigen::MatrixXd one_body(const libint2::BasisSet& obs, Engine prototype) {
  const auto shell2bf = obs.shell2bf();
  const std::size_t nshell = obs.size();
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(obs.nbf(), obs.nbf());
  auto engines = engines_per_thread(prototype);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute(obs[s1], obs[s2]);
      if (buf[0] == nullptr) continue;
      const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size();
      const std::size_t b1 = shell2bf[s1], b2 = shell2bf[s2];
      for (std::size_t f1 = 0; f1 < n1; ++f1)
        for (std::size_t f2 = 0; f2 < n2; ++f2) {
          M(b1 + f1, b2 + f2) = buf[0][f1 * n2 + f2];
          M(b2 + f2, b1 + f1) = buf[0][f1 * n2 + f2];
        }
    }
  }
  return M;
}

}  // namespace

Libint2Session::Libint2Session() { libint2::initialize(); }
Libint2Session::~Libint2Session() { libint2::finalize(); }

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs) {
  return one_body(obs, Engine(Operator::overlap, obs.max_nprim(), obs.max_l()));
}

Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol) {
  Engine nuclear(Operator::nuclear, obs.max_nprim(), obs.max_l());
  std::vector<std::pair<double, std::array<double, 3>>> charges;
  for (const Atom& atom : mol.atoms) charges.push_back({static_cast<double>(atom.Z), atom.r});
  nuclear.set_params(charges);
  return one_body(obs, Engine(Operator::kinetic, obs.max_nprim(), obs.max_l())) +
         one_body(obs, nuclear);
}

ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold) {
  const std::size_t nshell = obs.size();
  ShellPairs result;
  result.schwarz = Eigen::MatrixXd::Zero(nshell, nshell);
  auto engines = engines_per_thread(Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  for (auto& engine : engines) engine.set_precision(0.0);  // the bounds must not be screened
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute2<Operator::coulomb, BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s1], obs[s2]);
      double largest = 0.0;
      if (buf[0] != nullptr) {
        const std::size_t n12 = obs[s1].size() * obs[s2].size();
        for (std::size_t k = 0; k < n12; ++k) largest = std::max(largest, std::abs(buf[0][k * n12 + k]));
      }
      result.schwarz(s1, s2) = result.schwarz(s2, s1) = std::sqrt(largest);
    }
  }
  const double largest = result.schwarz.maxCoeff();
  for (std::size_t s1 = 0; s1 < nshell; ++s1)
    for (std::size_t s2 = 0; s2 <= s1; ++s2)
      if (result.schwarz(s1, s2) * largest >= threshold) result.pairs.emplace_back(s1, s2);
  return result;
}

Eigen::MatrixXd coulomb_metric(const libint2::BasisSet& aux) {
  const auto shell2bf = aux.shell2bf();
  const std::size_t nshell = aux.size();
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(aux.nbf(), aux.nbf());
  auto engines = engines_per_thread(coulomb_engine(aux.max_nprim(), aux.max_l(), BraKet::xs_xs));
  const Shell& unit = Shell::unit();
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute2<Operator::coulomb, BraKet::xs_xs, 0>(aux[s1], unit, aux[s2], unit);
      if (buf[0] == nullptr) continue;
      const std::size_t n1 = aux[s1].size(), n2 = aux[s2].size();
      for (std::size_t f1 = 0; f1 < n1; ++f1)
        for (std::size_t f2 = 0; f2 < n2; ++f2)
          J(shell2bf[s1] + f1, shell2bf[s2] + f2) = J(shell2bf[s2] + f2, shell2bf[s1] + f1) =
              buf[0][f1 * n2 + f2];
    }
  }
  return J;
}

void three_index_integrals(const libint2::BasisSet& aux, std::size_t first_shell,
                           std::size_t last_shell, const libint2::BasisSet& obs,
                           const ShellPairs& pairs, double* out,
                           std::pair<std::size_t, std::size_t> rows) {
  const auto aux2bf = aux.shell2bf();
  const auto obs2bf = obs.shell2bf();
  const std::size_t nbf = obs.nbf();
  const std::size_t row_first = rows.first, row_last = std::min(rows.second, obs.size());
  const std::size_t m_first = first_function(obs, row_first);
  const std::size_t nrows = first_function(obs, row_last) - m_first;
  const std::size_t p_first = first_function(aux, first_shell);
  const std::size_t p_count = first_function(aux, last_shell) - p_first;
  std::fill(out, out + p_count * nrows * nbf, 0.0);
  auto in_rows = [&](std::size_t shell) { return shell >= row_first && shell < row_last; };
  std::vector<std::pair<std::size_t, std::size_t>> row_pairs;
  for (const auto& pair : pairs.pairs)
    if (in_rows(pair.first) || in_rows(pair.second)) row_pairs.push_back(pair);

  auto engines =
      engines_per_thread(coulomb_engine(max_nprim(aux, obs), max_l(aux, obs), BraKet::xs_xx));
  const Shell& unit = Shell::unit();
  const std::size_t npairs = row_pairs.size();
  const std::size_t nwork = (last_shell - first_shell) * npairs;
  // Each (P shell, μν pair) writes its own block and its mirror: no two tasks share an element.
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t task = 0; task < nwork; ++task) {
    const std::size_t sP = first_shell + task / npairs;
    const auto [s1, s2] = row_pairs[task % npairs];
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    engine.compute2<Operator::coulomb, BraKet::xs_xx, 0>(aux[sP], unit, obs[s1], obs[s2]);
    if (buf[0] == nullptr) continue;
    const std::size_t nP = aux[sP].size(), n1 = obs[s1].size(), n2 = obs[s2].size();
    const bool row1 = in_rows(s1), row2 = in_rows(s2);
    for (std::size_t fP = 0; fP < nP; ++fP) {
      double* slab = out + (aux2bf[sP] + fP - p_first) * nrows * nbf;
      for (std::size_t f1 = 0; f1 < n1; ++f1)
        for (std::size_t f2 = 0; f2 < n2; ++f2) {
          const double v = buf[0][(fP * n1 + f1) * n2 + f2];
          const std::size_t m = obs2bf[s1] + f1, n = obs2bf[s2] + f2;
          if (row1) slab[(m - m_first) * nbf + n] = v;
          if (row2) slab[(n - m_first) * nbf + m] = v;
        }
    }
  }
}

std::vector<std::pair<std::size_t, std::size_t>> shell_batches(const libint2::BasisSet& basis,
                                                                std::size_t begin, std::size_t end,
                                                                std::size_t max_functions) {
  std::vector<std::pair<std::size_t, std::size_t>> batches;
  std::size_t first = begin, functions = 0;
  for (std::size_t s = begin; s < end; ++s) {
    if (s > first && functions + basis[s].size() > max_functions) {
      batches.emplace_back(first, s);
      first = s;
      functions = 0;
    }
    functions += basis[s].size();
  }
  if (end > first) batches.emplace_back(first, end);
  return batches;
}

std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell) {
  return shell < basis.size() ? basis.shell2bf()[shell] : basis.nbf();
}

std::pair<std::size_t, std::size_t> shell_block(const libint2::BasisSet& basis, int part, int parts) {
  // Part k starts at the first shell whose first function reaches k/parts of all functions.
  auto start = [&](int k) {
    const std::size_t target = basis.nbf() * static_cast<std::size_t>(k) / static_cast<std::size_t>(parts);
    std::size_t shell = 0;
    while (shell < basis.size() && first_function(basis, shell) < target) ++shell;
    return shell;
  };
  return {start(part), part + 1 == parts ? basis.size() : start(part + 1)};
}

Eigen::MatrixXd exact_two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                        const Eigen::MatrixXd& D, int part, int parts) {
  const auto shell2bf = obs.shell2bf();
  const std::size_t nshell = obs.size();
  const std::size_t nbf = obs.nbf();
  // Largest |D| per shell block, for density-weighted screening.
  Eigen::MatrixXd Dmax = Eigen::MatrixXd::Zero(nshell, nshell);
  for (std::size_t s1 = 0; s1 < nshell; ++s1)
    for (std::size_t s2 = 0; s2 < nshell; ++s2)
      Dmax(s1, s2) = D.block(shell2bf[s1], shell2bf[s2], obs[s1].size(), obs[s2].size())
                         .cwiseAbs()
                         .maxCoeff();
  const double threshold = 1e-12;
  const int nthreads = omp_get_max_threads();
  std::vector<Eigen::MatrixXd> g(nthreads, Eigen::MatrixXd::Zero(nbf, nbf));
  auto engines = engines_per_thread(Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  const std::size_t npairs = pairs.pairs.size();
#pragma omp parallel for schedule(dynamic)
  for (std::size_t p12 = static_cast<std::size_t>(part); p12 < npairs;
       p12 += static_cast<std::size_t>(parts)) {
    const int thread = omp_get_thread_num();
    Engine& engine = engines[thread];
    Eigen::MatrixXd& G = g[thread];
    const auto& buf = engine.results();
    const auto [s1, s2] = pairs.pairs[p12];
    // Quartets (s1 s2|s3 s4) with s3 ≤ s1 and s4 ≤ (s3 == s1 ? s2 : s3): each unique once.
    for (std::size_t p34 = 0; p34 <= p12; ++p34) {
      const auto [s3, s4] = pairs.pairs[p34];
      const double dmax = std::max({Dmax(s1, s2), Dmax(s3, s4), Dmax(s1, s3), Dmax(s2, s4),
                                    Dmax(s1, s4), Dmax(s2, s3)});
      if (pairs.schwarz(s1, s2) * pairs.schwarz(s3, s4) * dmax < threshold) continue;
      engine.compute2<Operator::coulomb, BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s3], obs[s4]);
      if (buf[0] == nullptr) continue;
      const double degeneracy = (s1 == s2 ? 1.0 : 2.0) * (s3 == s4 ? 1.0 : 2.0) *
                                (p12 == p34 ? 1.0 : 2.0);
      const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size(), n3 = obs[s3].size(),
                        n4 = obs[s4].size();
      for (std::size_t f1 = 0, f1234 = 0; f1 < n1; ++f1) {
        const std::size_t b1 = shell2bf[s1] + f1;
        for (std::size_t f2 = 0; f2 < n2; ++f2) {
          const std::size_t b2 = shell2bf[s2] + f2;
          for (std::size_t f3 = 0; f3 < n3; ++f3) {
            const std::size_t b3 = shell2bf[s3] + f3;
            for (std::size_t f4 = 0; f4 < n4; ++f4, ++f1234) {
              const std::size_t b4 = shell2bf[s4] + f4;
              const double v = buf[0][f1234] * degeneracy;
              G(b1, b2) += D(b3, b4) * v;
              G(b3, b4) += D(b1, b2) * v;
              G(b1, b3) -= 0.25 * D(b2, b4) * v;
              G(b2, b4) -= 0.25 * D(b1, b3) * v;
              G(b1, b4) -= 0.25 * D(b2, b3) * v;
              G(b2, b3) -= 0.25 * D(b1, b4) * v;
            }
          }
        }
      }
    }
  }
  Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(nbf, nbf);
  for (const auto& part : g) sum += part;
  return 0.5 * (sum + sum.transpose());
}

}  // namespace dfmp2
