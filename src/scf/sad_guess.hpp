// The SCF's starting density: a superposition of atomic densities (SAD), the guess Psi4 and
// most programs start closed-shell SCF from. The core-Hamiltonian guess can lead DIIS into an
// excited state of large conjugated molecules (pentacene, hexacene).
#pragma once

#include <Eigen/Core>

#include "src/common/memory.hpp"
#include "src/molecule/basis.hpp"
#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// Factor F of the guess density D = F Fᵀ (closed-shell convention D = C_occ C_occᵀ) over the
// functions of place_on(basis, mol): block diagonal, one block per atom, each the spherically
// averaged neutral atom from an SCF in the same basis with exact integrals (drawn from `budget`);
// a ghost atom's block has its rows and no column (no electrons), as in Psi4's SAD.
Eigen::MatrixXd atomic_density_guess(const BasisSetData& basis, const Molecule& mol, MemoryBudget& budget);
// What it draws from the budget at most: the builds and stored integrals of the largest atom's SCF.
std::size_t atomic_density_guess_bytes(const BasisSetData& basis, const Molecule& mol);

}  // namespace dfmp2
