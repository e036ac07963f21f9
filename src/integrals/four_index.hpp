// The exact two-electron Fock term from four-index integrals (μν|λσ): 8-fold symmetry,
// density-weighted Schwarz screening, libint2's shell-pair data precomputed.
#pragma once

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/integrals/shell_pairs.hpp"

namespace dfmp2 {

// G = 2J − K for the closed-shell density D (D = C_occ C_occᵀ), or for a density difference
// (incremental Fock builds: G is linear in D, and a small ΔD screens most quartets away).
// With parts > 1, only the quartets of bra pairs p with p % parts == part: the parts sum to G.
Eigen::MatrixXd exact_two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                        const Eigen::MatrixXd& D, int part = 0, int parts = 1);

// libint2's own time for exact_two_electron_fock(obs, pairs, D) over this run's threads: a
// sample of its unscreened quartets timed on one thread, scaled to all of them.
double exact_fock_libint_seconds(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                 const Eigen::MatrixXd& D, int part = 0, int parts = 1);

}  // namespace dfmp2
