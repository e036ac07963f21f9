// Gaussian integrals from libint2: one-electron matrices, the Coulomb metric (P|Q), three-index
// (P|μν) in batches of auxiliary shells, and the exact four-index two-electron Fock term.
// OpenMP over shells; each thread owns a libint2 engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// libint2 must be initialised once per process while integrals are computed.
class Libint2Session {
 public:
  Libint2Session();
  ~Libint2Session();
  Libint2Session(const Libint2Session&) = delete;
  Libint2Session& operator=(const Libint2Session&) = delete;
};

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs);
// T + V: kinetic energy plus attraction to the nuclei.
Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol);

// Shell pairs (μ ≥ ν shells) whose Schwarz bound sqrt(max|(μν|μν)|) can matter, with the bound.
struct ShellPairs {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  Eigen::MatrixXd schwarz;  // nshell × nshell, symmetric
};
ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold = 1e-12);

// (P|Q) over auxiliary functions.
Eigen::MatrixXd coulomb_metric(const libint2::BasisSet& aux);

// (P|μν) for auxiliary shells [first_shell, last_shell) and μ in the orbital shells
// rows = [first, last) (default: all), every ν: written to out as row-major
// [P − P_first][μ − μ_first][ν]. Pairs outside `pairs` are zero.
void three_index_integrals(const libint2::BasisSet& aux, std::size_t first_shell,
                           std::size_t last_shell, const libint2::BasisSet& obs,
                           const ShellPairs& pairs, double* out,
                           std::pair<std::size_t, std::size_t> rows = {0, SIZE_MAX});

// Shell batches [first, last) within [begin, end) whose functions number at most
// max_functions each (at least one shell per batch).
std::vector<std::pair<std::size_t, std::size_t>> shell_batches(const libint2::BasisSet& basis,
                                                                std::size_t begin, std::size_t end,
                                                                std::size_t max_functions);

// Part `part` of `parts` contiguous shell ranges [first, last) with about equal function counts.
std::pair<std::size_t, std::size_t> shell_block(const libint2::BasisSet& basis, int part, int parts);
// First function of shell `shell` (nbf for shell == size()).
std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell);

// G = 2J − K for the closed-shell density D = C_occ C_occᵀ, from exact four-index integrals
// with 8-fold symmetry and density-weighted Schwarz screening. With parts > 1, only this
// part's share of the quartets (bra pairs p with p % parts == part): the shares sum to G.
Eigen::MatrixXd exact_two_electron_fock(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                        const Eigen::MatrixXd& D, int part = 0, int parts = 1);

}  // namespace dfmp2
