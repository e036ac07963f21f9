// First derivatives of the one-electron integrals with respect to the nuclear positions,
// contracted with a symmetric matrix over the orbital basis. Debian's libint2 has no one-body
// derivative integrals; they come from its undifferentiated ones over shells of l ± 1:
// ∂/∂A_x of a primitive x_A^a y_A^b z_A^c e^(−α r_A²) on A is 2α x_A^(a+1)… − a x_A^(a−1)….
// Every result is natom × 3 (x, y, z), in Eh/bohr when the matrix is a density.
#pragma once

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// Σ_μν W_μν ∂S_μν/∂R_A, W symmetric (the energy-weighted density of an SCF gradient).
Eigen::MatrixXd overlap_gradient(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& W);

// Σ_μν D_μν ∂(T + V)_μν/∂R_A, D symmetric: as the functions' centres move, and V's
// Hellmann–Feynman part, as the nuclei whose attraction V is move.
Eigen::MatrixXd core_hamiltonian_gradient(const libint2::BasisSet& obs, const Molecule& mol,
                                          const Eigen::MatrixXd& D);

}  // namespace dfmp2
