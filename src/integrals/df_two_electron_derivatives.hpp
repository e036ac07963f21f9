// The nuclear derivative of a density-fitted two-electron energy that is separable in densities,
//   E_2 = Σ_μνλσ (μν|λσ) [A_μν D_λσ − Σ_s (A_s)_μλ (C_s C_sᵀ)_νσ],
// with the integrals fitted in the Coulomb metric, (μν|λσ) ≈ Σ_PQ (μν|P) [J⁻¹]_PQ (Q|λσ). A
// determinant's (four_centre_gradient's Γ) is A = ½ D and A_s = ½ D_s (RHF: the one C_s stands for
// both spins, D = 2 C Cᵀ, A_0 = ½ D); the MP2 gradient's adds its relaxed density P to A and A_0,
// the Coulomb and exchange terms of P with the SCF density. With the fitted coefficients
// c^P_μν = Σ_Q [J⁻¹]_PQ (Q|μν) and d_P(X) = Σ_μν c^P_μν X_μν:
//   dE_2/dR_A = Σ_Pμν Γ^P_μν ∂(P|μν)/∂R_A + Σ_PQ M_PQ ∂(P|Q)/∂R_A,
//   Γ^P = d_P(D) A + d_P(A) D − Σ_s (A_s c^P C_s C_sᵀ + C_s C_sᵀ c^P A_s),
//   M_PQ = −½ (d_P(A) d_Q(D) + d_P(D) d_Q(A)) + Σ_s tr(c^P A_s c^Q C_s C_sᵀ)
// (Psi4's DFJKGrad, PySCF's df.grad.rhf). J⁻¹ is the SCF fit's own (CoulombFitting), the pairs
// those its tensor stores: the derivative of the energy the DF-SCF computed; c^P comes from that
// tensor's fitted factors (`factors`, each rank its Q), not from the integrals anew. Both functions
// are collective: the ranks share the batches of auxiliary shells, and each returns the whole sum.
// `progress`, when given, is told 0 when the derivative integrals start, then the share of this
// rank's batches of them done. `work`, when given, gets this rank's flops of the densities' GEMMs
// and libint2's time for the derivative integrals. `occupied_products`, when given (one set C_0):
// B^Q C_0 of this rank's rows Q, each followed by C_0ᵀ B^Q C_0 (an OccupiedFockResponse's, made
// with this C_0), taken instead of made again.
//
// Memory: c^P_μν itself, as large as the SCF's tensor, is never held. Per set C_s one array of rows
// P, c^P C_s (nbf × nocc_s): B^Q C_s from the factors' rows Q, then fitted, M mixing the rows, and
// replaced by A_s c^P C_s (all Γ^P needs of it) in one sweep over blocks of its columns (occupied
// orbitals), which also sums the exchange weights over the block's columns. Its first rows stay
// in memory as the budget allows, the others in a scratch file, read and written once by the sweep
// and read once, row by row, by the Γ^P squares. Everything large is drawn from the budget as
// separable_term_plan plans it.
#pragma once

#include <functional>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/scratch.hpp"
#include "src/common/stage_work.hpp"
#include "src/integrals/fitted_tensor_store.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/two_electron_derivatives.hpp"
#include "src/molecule/molecule.hpp"

namespace dfmp2 {

struct SeparableDensities {
  Eigen::MatrixXd density;                         // D, symmetric
  Eigen::MatrixXd coulomb_partner;                 // A, symmetric
  std::vector<Eigen::MatrixXd> occupied;           // C_s, nbf × nocc_s
  std::vector<Eigen::MatrixXd> exchange_partners;  // A_s, symmetric, one per C_s
};

// The sizes the separable term's arrays follow from.
struct SeparableTermSizes {
  std::size_t nbf = 0, naux = 0;      // orbital functions, the JK set's functions
  std::size_t largest_shell = 1;      // the JK set's most functions in a shell
  std::vector<std::size_t> occupied;  // each C_s's columns
  int ranks = 1;
  // Occupied orbitals per block of the sweep's columns: every rank some, each of the block's two
  // buffers at most block_bytes, at least one.
  std::size_t sweep_orbitals(std::size_t block_bytes) const;
};

// The largest block the plans give the sweep's buffers and a batch of Γ^P squares: large enough
// for their GEMMs' and integrals' rate, small beside the arrays.
inline constexpr std::size_t kLargestSeparableBlock = std::size_t(16) << 20;

// What a plan chooses for the separable term's arrays.
struct SeparableTermLayout {
  std::size_t ram_rows = 0;                          // rows P of each c^P C_s in memory, the rest on disk
  std::size_t block_bytes = kLargestSeparableBlock;  // the sweep's buffers' and the squares' batch's bound
};

// What density_fitted_two_electron_gradient draws at its peak: the rows of each c^P C_s in memory
// (the rest on disk), the metric and its fit, the metric term's weights, and the sweep's buffers
// or, after them, a batch of Γ^P squares.
StagePlan separable_term_plan(const SeparableTermSizes& sizes, const SeparableTermLayout& layout);

// The batch of Γ^P squares three_centre_gradient_of_squares draws for an auxiliary set of naux
// functions: at most block_bytes and a rank's share of the naux, but at least the set's largest
// shell.
std::size_t squares_batch_bytes(std::size_t nbf, std::size_t naux, std::size_t largest_shell, int ranks,
                                std::size_t block_bytes);

// natom × 3 (x, y, z). layout: as planned; scratch may be null when it keeps every row in memory.
Eigen::MatrixXd density_fitted_two_electron_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                                     const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                     FittedTensorStore& factors,
                                                     const Molecule& mol, const SeparableDensities& densities,
                                                     const SeparableTermLayout& layout, MemoryBudget& budget,
                                                     const ScratchDirectory* scratch, Communicator& comm,
                                                     const std::function<void(double done)>& progress = {},
                                                     StageWork* work = nullptr,
                                                     const double* occupied_products = nullptr);

// Σ_Pμν Γ^P_μν ∂(P|μν)/∂R_A for a Γ made one auxiliary function at a time as a dense symmetric
// nbf × nbf square: gamma(P, square) writes Γ^P (called from several threads at once), in
// square_flops floating-point operations, which `work` counts with libint2's time. The squares of
// a batch are drawn from `budget` (squares_batch_bytes with block_bytes).
Eigen::MatrixXd three_centre_gradient_of_squares(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                                 const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                 const Molecule& mol,
                                                 const std::function<void(Eigen::Index P, double* square)>& gamma,
                                                 MemoryBudget& budget, std::size_t block_bytes, Communicator& comm,
                                                 const std::function<void(double done)>& progress = {},
                                                 StageWork* work = nullptr, double square_flops = 0.0);

}  // namespace dfmp2
