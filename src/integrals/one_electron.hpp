// One-electron integrals over the orbital basis.
#pragma once

#include <array>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs);
// T + V: kinetic energy plus attraction to the nuclei (of the real atoms: ghosts have none).
Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol);
// ⟨μ|x|ν⟩, ⟨μ|y|ν⟩, ⟨μ|z|ν⟩ about the origin (bohr).
std::array<Eigen::MatrixXd, 3> position_matrices(const libint2::BasisSet& obs);
// The dipole moment (e·bohr, about the origin) of the nuclei (ghosts have no charge) and the
// electron density D (AO).
Eigen::Vector3d dipole_moment(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& D);

}  // namespace dfmp2
