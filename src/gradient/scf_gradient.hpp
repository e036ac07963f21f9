// The SCF energy's gradient with respect to the nuclear positions, from converged canonical RHF
// or UHF orbitals: dE/dR_A = ∂V_nn/∂R_A + Σ_μν D_μν ∂H_μν/∂R_A − Σ_μν W_μν ∂S_μν/∂R_A + the
// two-electron term (exact: four_centre_gradient; density-fitted:
// density_fitted_two_electron_gradient). Results are
// natom × 3 (x, y, z) in Eh/bohr.
#pragma once

#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/molecule/molecule.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct BasisSetData;

struct ScfDensities {
  // Per spin as exact_two_electron_fock takes them: RHF's D_0 = C_occ C_occᵀ (one, standing for
  // both spins), or UHF's D_α and D_β.
  std::vector<Eigen::MatrixXd> spins;
  std::vector<Eigen::MatrixXd> occupied;  // C_occ of each, D_s = C_occ C_occᵀ
  Eigen::MatrixXd total;            // D = 2 D_0, or D_α + D_β
  Eigen::MatrixXd energy_weighted;  // W = Σ_s Σ_i^occ ε_i C_μi C_νi over both spins
};
ScfDensities scf_densities(const Orbitals& orbitals);

// The determinant's two-electron energy as density_fitted_two_electron_gradient takes it:
// A = ½ D, A_s = ½ D_s (RHF's one set: C Cᵀ, standing for both spins).
SeparableDensities scf_separable_densities(const ScfDensities& densities);

// What every SCF gradient holds beside its two-electron term:
// ∂V_nn/∂R_A + Σ_μν D_μν ∂H_μν/∂R_A − Σ_μν W_μν ∂S_μν/∂R_A; H includes the effective core
// potentials of `potentials` (the orbital set's data) on the atoms that carry one: without it, a
// molecule with ECPs is a std::logic_error (its gradient would silently lack them). comm's ranks
// share the potentials' derivatives (collective; every rank gets the whole).
Eigen::MatrixXd scf_gradient_without_two_electron(const libint2::BasisSet& obs, const Molecule& mol,
                                                  const ScfDensities& densities, Communicator& comm,
                                                  const BasisSetData* potentials = nullptr);
// Its terms apart: the one without the potentials, and Σ_μν D_μν ∂U_μν/∂R_A of the potentials
// (zero for a molecule without any; a std::logic_error with ECPs and no `potentials`).
Eigen::MatrixXd scf_gradient_without_two_electron_or_ecp(const libint2::BasisSet& obs, const Molecule& mol,
                                                         const ScfDensities& densities);
Eigen::MatrixXd ecp_gradient_term(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& D,
                                  const BasisSetData* potentials, Communicator& comm);

// dE_SCF/dR_A of an SCF with exact four-index integrals (--scf exact), RHF or UHF.
Eigen::MatrixXd exact_scf_gradient(const libint2::BasisSet& obs, const Molecule& mol, const Orbitals& orbitals,
                                   const BasisSetData* potentials = nullptr);

// dE_SCF/dR_A of a density-fitted SCF (--scf df), RHF or UHF: jk_aux its auxiliary set, pairs the
// orbital shell pairs its tensor stored, factors that tensor (this rank's Q). Its arrays are drawn
// from `budget` and laid out as `layout` says (scratch: for its rows on disk, if any). Collective
// (the ranks share the three-centre terms).
Eigen::MatrixXd density_fitted_scf_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& jk_aux,
                                            const ShellPairs& pairs, FittedTensorStore& factors, const Molecule& mol,
                                            const Orbitals& orbitals, const SeparableTermLayout& layout,
                                            MemoryBudget& budget, const ScratchDirectory* scratch,
                                            Communicator& comm, const BasisSetData* potentials = nullptr);

}  // namespace dfmp2
