// The exact two-electron Fock term from four-index integrals (μν|λσ): 8-fold symmetry,
// density-weighted Schwarz screening, libint2's shell-pair data precomputed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>
#include <omp.h>

#include "src/integrals/shell_pairs.hpp"

namespace dfmp2 {

// The loops over quartets that the Fock build shares with the gradient (two_electron_derivatives).

// Quartets whose bound (below) stays under this are skipped.
inline constexpr double kQuartetThreshold = 1e-12;

// Largest |D_s| over the spins per shell block, for density-weighted screening: it bounds the
// exchange densities and their mean, the Coulomb density of a Fock build.
Eigen::MatrixXd shell_block_max(const libint2::BasisSet& obs, const std::vector<Eigen::MatrixXd>& D_spins);

// The unique quartets (p12 ≥ p34) of bra pair p12 whose bound, the Schwarz bounds of both pairs
// times the largest Dmax over the six shell pairs, reaches kQuartetThreshold: visit(p34) for every
// p34 ≤ p12 that passes, in order.
template <typename Visit>
void for_each_quartet(const ShellPairs& pairs, const Eigen::MatrixXd& Dmax, std::size_t p12, Visit&& visit) {
  const auto [s1, s2] = pairs.pairs[p12];
  const double bra = pairs.schwarz(s1, s2);
  for (std::size_t p34 = 0; p34 <= p12; ++p34) {
    const auto [s3, s4] = pairs.pairs[p34];
    const double dmax = std::max({Dmax(s1, s2), Dmax(s3, s4), Dmax(s1, s3), Dmax(s2, s4),
                                  Dmax(s1, s4), Dmax(s2, s3)});
    if (bra * pairs.schwarz(s3, s4) * dmax >= kQuartetThreshold) visit(p34);
  }
}

// body(p12, thread) for the bra pairs p12 with p12 % parts == part, in parallel, from the most
// expensive (largest p12: most ket pairs) down, for load balance.
template <typename Body>
void for_each_bra_of_part(const ShellPairs& pairs, int part, int parts, Body&& body) {
  const std::size_t npairs = pairs.pairs.size();
#pragma omp parallel for schedule(dynamic)
  for (std::size_t k = 0; k < npairs; ++k) {
    const std::size_t p12 = npairs - 1 - k;
    if (p12 % static_cast<std::size_t>(parts) == static_cast<std::size_t>(part)) body(p12, omp_get_thread_num());
  }
}

// G_s = J(D) − K(D_s) for each spin density D_s: one, a closed shell's D_0 = C_occ C_occᵀ (both
// spins alike: D = 2 D_0, G = 2J − K), or UHF's α and β (D = D_α + D_β); from one pass over the
// quartets. Or the same for density differences (incremental Fock builds: G is linear in the
// densities, and small changes screen most quartets away). With parts > 1, only the quartets of
// bra pairs p with p % parts == part: the parts sum to G.
std::vector<Eigen::MatrixXd> exact_two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                                     const std::vector<Eigen::MatrixXd>& D_spins, int part = 0,
                                                     int parts = 1);

// libint2's own time for exact_two_electron_fock(obs, pairs, D_spins) over this run's threads: a
// sample of its unscreened quartets timed on one thread, scaled to all of them.
double exact_fock_libint_seconds(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                 const std::vector<Eigen::MatrixXd>& D_spins, int part = 0, int parts = 1);

// The quartets of exact_two_electron_fock computed once and kept, for SCF iterations that then
// only contract them (as Psi4's PK and conventional SCF do) — when they fit in memory: every
// unique quartet of this part whose Schwarz bound reaches the screening threshold.
class StoredQuartets {
 public:
  // What the store of this part would hold, from the Schwarz bounds alone (no integral).
  static std::size_t bytes(const libint2::BasisSet& obs, const ShellPairs& pairs, int part = 0, int parts = 1);
  StoredQuartets(const libint2::BasisSet& obs, const ShellPairs& pairs, int part = 0, int parts = 1);
  // exact_two_electron_fock(obs, pairs, D_spins, part, parts), without its density screening.
  std::vector<Eigen::MatrixXd> fock(const std::vector<Eigen::MatrixXd>& D_spins) const;

 private:
  const libint2::BasisSet& obs_;
  const ShellPairs& pairs_;
  int part_, parts_;
  std::vector<std::vector<std::uint32_t>> kets_;  // per bra pair: its stored ket pairs, in order
  std::vector<std::vector<double>> values_;       // per bra pair: their integrals, one after another
};

}  // namespace dfmp2
