// The nuclear derivative of a determinant's density-fitted two-electron energy
// E_2 = Σ_μνλσ Γ_μνλσ (μν|λσ), Γ as four_centre_gradient's, with the integrals fitted in the
// Coulomb metric, (μν|λσ) ≈ Σ_PQ (μν|P) [J⁻¹]_PQ (Q|λσ). With the fitted coefficients
// c^P_μν = Σ_Q [J⁻¹]_PQ (Q|μν), d_P = Σ_μν c^P_μν D_μν and Y^P_s = C_sᵀ c^P C_s (C_s the occupied
// orbitals of spin s):
//   dE_2/dR_A = Σ_Pμν Γ^P_μν ∂(P|μν)/∂R_A − ½ Σ_PQ (d_P d_Q − Σ_s Σ_ij Y^P_s,ij Y^Q_s,ij) ∂(P|Q)/∂R_A,
//   Γ^P = d_P D − Σ_s C_s Y^P_s C_sᵀ
// (Psi4's DFJKGrad, PySCF's df.grad.rhf). J⁻¹ is the SCF fit's own (CoulombFitting), the pairs
// those its tensor stores: the derivative of the energy the DF-SCF computed.
#pragma once

#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/integrals/shell_pairs.hpp"
#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// occupied: C_occ per spin, nbf × nocc_s; one set for a closed shell, standing for both spins.
// natom × 3 (x, y, z).
Eigen::MatrixXd density_fitted_two_electron_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                                     const ShellPairs& pairs, const Molecule& mol,
                                                     const std::vector<Eigen::MatrixXd>& occupied);

}  // namespace dfmp2
