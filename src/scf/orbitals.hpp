// Molecular orbitals, the SCF's product (or given in the input, then the SCF is skipped).
#pragma once

#include <Eigen/Core>

namespace dfmp2 {

struct Orbitals {
  Eigen::MatrixXd C;    // nbf × nmo, columns ordered by energy
  Eigen::VectorXd eps;  // nmo
  int nocc = 0;
};

}  // namespace dfmp2
