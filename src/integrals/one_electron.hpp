// One-electron integrals over the orbital basis.
#pragma once

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs);
// T + V: kinetic energy plus attraction to the nuclei (of the real atoms: ghosts have none).
Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol);

}  // namespace dfmp2
