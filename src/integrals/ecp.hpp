// Effective core potential integrals over the orbital basis (libecpint, with the shell pairs of
// ecp_shell_pair.hpp): the potentials an orbital set such as def2-SVP puts in place of the core
// electrons of Rb–Rn.
#pragma once

#include <cstddef>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/parallel.hpp"
#include "src/molecule/basis.hpp"
#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// A shell pair is left out for a potential when exp(−bound) bounds its integrals by Cauchy–Schwarz
// over |U| (bound: each shell's most diffuse primitive against the potential's most diffuse
// Gaussian): e^−40 ≈ 4e-18, far below what the potentials' coefficients (≲ 1e3) make visible.
inline constexpr double kEcpScreening = 40.0;

struct EcpIntegrals {
  Eigen::MatrixXd U;  // ⟨μ|Σ_C U_C|ν⟩, Eh, spherical or Cartesian as the shells are
  std::size_t computed = 0, screened = 0;  // (shell pair, potential) triples
  // libecpint said its radial quadrature stopped short of its tolerance for some integral (it
  // does for Au; the energies still agree with PySCF's to 6e-10 Eh, results/accuracy.md).
  bool quadrature_warned = false;
};

// True when an atom of mol carries a potential (Atom::ecp_electrons, set by assign_ecp_cores).
bool has_ecp(const Molecule& mol);

// The potentials of `basis` on the atoms of mol that carry one, over the shells of obs, on all
// OpenMP threads; comm's ranks share the shell pairs and sum U, computed, screened (every rank
// gets the whole). Throws InputError when a shell's l is above what libecpint computes.
EcpIntegrals ecp_integrals(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                           Communicator& comm, double screening = kEcpScreening);
// On this process alone.
EcpIntegrals ecp_integrals(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                           double screening = kEcpScreening);

// Σ_μν D_μν ∂⟨μ|Σ_C U_C|ν⟩/∂R_A (D symmetric), natom × 3, Eh/bohr: the functions' centres and the
// potentials' own (ecp_shell_pair.hpp), screened as ecp_integrals.
// comm's ranks share the shell pairs and sum the gradient, as ecp_integrals.
Eigen::MatrixXd ecp_gradient(const libint2::BasisSet& obs, const BasisSetData& basis, const Molecule& mol,
                             const Eigen::MatrixXd& D, Communicator& comm);

}  // namespace dfmp2
