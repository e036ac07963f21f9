// First derivatives of the Coulomb integrals with respect to the nuclear positions, contracted
// with given densities: the two-centre metric (P|Q) and the four-centre (μν|λσ) from libint2's
// first-derivative engines (which return the derivatives with respect to every shell's centre,
// the atom the shell sits on), the three-centre (P|μν) from its undifferentiated integrals over
// l ± 1 orbital shells (centre_derivatives.hpp says why). Every result is natom × 3 (x, y, z).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/stage_work.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// Σ_PQ M_PQ ∂(P|Q)/∂R_A over the auxiliary basis, M symmetric.
Eigen::MatrixXd metric_gradient(const libint2::BasisSet& aux, const Molecule& mol, const Eigen::MatrixXd& M);

inline constexpr double kThreeCentreDerivativeThreshold = 1e-11;

// What three_centre_gradient screens by: a shell triple P, μν is skipped when its largest
// |Γ^P_μν| times the bound of its derivative integrals, sqrt((P|P)) times the pair's bound (the
// larger of its two shells' derivative_norm_bound), is below `threshold`. The pairs' bounds are
// made once per orbital basis, for every auxiliary set's terms.
struct ThreeCentreScreening {
  ThreeCentreScreening(const libint2::BasisSet& obs, const ShellPairs& pairs,
                       double threshold = kThreeCentreDerivativeThreshold);
  std::vector<double> pair_bounds;  // one per pair of `pairs`
  double threshold;
};

// Γ^P_μν for three_centre_gradient, served a batch of auxiliary shells at a time from wherever the
// caller keeps it (memory, disk), in the caller's own layout. Γ^P must be symmetric in μν: the
// integrals are, so only the symmetric part of a Γ would count.
struct ThreeCentreDensity {
  std::vector<ShellRange> batches;  // of auxiliary shells, together each shell once
  // Makes a batch's blocks available; called once per batch, in the order of `batches`, outside
  // any parallel region.
  std::function<void(ShellRange batch)> load;
  // Writes the block of auxiliary shell p (of the loaded batch) and orbital shells s1 ≥ s2,
  // row-major [P][μ][ν], to out; called from several threads at once.
  std::function<void(std::size_t p, std::size_t s1, std::size_t s2, double* out)> block;
  // Optional: told 0 before the first batch, then the share of the batches done after each.
  std::function<void(double done)> progress;
  // Optional: libint2's time for the derivative integrals is added to it, from a sample of the
  // shell triples timed on one thread.
  StageWork* work = nullptr;
};

// Σ_Pμν Γ^P_μν ∂(P|μν)/∂R_A, μν over every orbital function pair (both orders), from the shell
// pairs `pairs` holds (those outside are taken as zero), screened by `screening` (of these pairs).
Eigen::MatrixXd three_centre_gradient(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                      const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                      const Molecule& mol, const ThreeCentreDensity& gamma);

// The two-electron part of an SCF gradient with exact integrals, Σ_μνλσ Γ_μνλσ ∂(μν|λσ)/∂R_A with
// Γ_μνλσ = ½ D_μν D_λσ − ½ Σ_s D^s_μλ D^s_νσ: D_spins as for exact_two_electron_fock (one, a closed
// shell's D_0 with D = 2 D_0 and D^α = D^β = D_0; or UHF's D_α, D_β, D = D_α + D_β). Quartets are
// screened as the Fock build's (for_each_quartet), by the Schwarz bounds times |D| products.
Eigen::MatrixXd four_centre_gradient(const libint2::BasisSet& obs, const ShellPairs& pairs, const Molecule& mol,
                                     const std::vector<Eigen::MatrixXd>& D_spins);

}  // namespace dfmp2
