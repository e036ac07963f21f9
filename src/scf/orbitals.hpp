// Molecular orbitals, the SCF's product (or given in the input, then the SCF is skipped).
#pragma once

#include <optional>

#include <Eigen/Core>

namespace dfmp2 {

// One set of orbitals: RHF's, each occupied orbital holding an electron of either spin, or one
// spin's of UHF.
struct SpinOrbitals {
  Eigen::MatrixXd C;    // nbf × nmo, columns ordered by energy
  Eigen::VectorXd eps;  // nmo
  int nocc = 0;
};

// RHF: C, eps and nocc (doubly occupied). UHF: those are the α orbitals and `beta` holds the β
// ones, in the same basis with the same nmo (nocc ≥ beta->nocc).
struct Orbitals : SpinOrbitals {
  std::optional<SpinOrbitals> beta;

  bool unrestricted() const { return beta.has_value(); }
  int spin_count() const { return unrestricted() ? 2 : 1; }
  // Set s of spin_count(): RHF's, or α (0) and β (1).
  const SpinOrbitals& spin(int s) const { return s == 0 ? *this : *beta; }
  SpinOrbitals& spin(int s) { return s == 0 ? *this : *beta; }
};

}  // namespace dfmp2
