#include "src/integrals/density_fitting.hpp"

#include <cmath>

#include <Eigen/Cholesky>

#include "kernels/symmetric_eigen.hpp"

namespace dfmp2 {

CoulombFitting::CoulombFitting(const Eigen::MatrixXd& metric, double condition) {
  const kernels::SymmetricEigen eig = kernels::symmetric_eigen(metric);
  const double cutoff = condition * eig.values.maxCoeff();
  if (eig.values.minCoeff() > cutoff) {
    // Nothing to drop: L⁻¹ spans the same fit as J^-1/2, and applying it is a triangular solve.
    Eigen::LLT<Eigen::MatrixXd> llt(metric);
    if (llt.info() == Eigen::Success) {
      factor_ = llt.matrixL();
      return;
    }
  }
  cholesky_ = false;
  Eigen::VectorXd inv_sqrt(eig.values.size());
  for (Eigen::Index k = 0; k < eig.values.size(); ++k)
    inv_sqrt(k) = eig.values(k) > cutoff ? 1.0 / std::sqrt(eig.values(k)) : 0.0;
  factor_ = eig.vectors * inv_sqrt.asDiagonal() * eig.vectors.transpose();
}

void CoulombFitting::apply(double* data, std::size_t ncols) const {
  // A rank holding no occupied orbital passes an empty block (null data): Eigen would bind a
  // reference to it (undefined behaviour UBSan reports), and there is nothing to fit.
  if (ncols == 0) return;
  // Row-major [naux][ncols] is the column-major ncols × naux matrix A(x, P); B = A Mᵀ.
  Eigen::Map<Eigen::MatrixXd> A(data, static_cast<Eigen::Index>(ncols), factor_.rows());
  if (cholesky_) {
    factor_.triangularView<Eigen::Lower>().transpose().solveInPlace<Eigen::OnTheRight>(A);
  } else {
    const Eigen::MatrixXd fitted = A * factor_;  // J^-1/2 is symmetric
    A = fitted;
  }
}

}  // namespace dfmp2
