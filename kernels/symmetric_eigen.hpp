// Eigenvalues and eigenvectors of a real symmetric matrix, ascending, by LAPACK's divide and
// conquer (dsyevd, from OpenBLAS: threaded, much faster than Eigen's own solver at n ~ 10³).
#pragma once

#include <Eigen/Core>

namespace dfmp2::kernels {

struct SymmetricEigen {
  Eigen::VectorXd values;   // ascending
  Eigen::MatrixXd vectors;  // column k belongs to values(k)
};

SymmetricEigen symmetric_eigen(const Eigen::MatrixXd& A);

}  // namespace dfmp2::kernels
