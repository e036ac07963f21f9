#include "src/density_fitting.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

namespace dfmp2 {

CoulombFitting::CoulombFitting(const Eigen::MatrixXd& metric, double condition) {
  Eigen::LLT<Eigen::MatrixXd> llt(metric);
  if (llt.info() == Eigen::Success) {
    const Eigen::VectorXd diagonal = llt.matrixL().toDenseMatrix().diagonal();
    // Pivots squared are the metric's conditioning along the factorisation.
    const double ratio = diagonal.minCoeff() / diagonal.maxCoeff();
    if (ratio * ratio > condition) {
      factor_ = llt.matrixL();
      return;
    }
  }
  cholesky_ = false;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(metric);
  const Eigen::VectorXd& lambda = eig.eigenvalues();
  const double cutoff = condition * lambda.maxCoeff();
  Eigen::VectorXd inv_sqrt(lambda.size());
  for (Eigen::Index k = 0; k < lambda.size(); ++k)
    inv_sqrt(k) = lambda(k) > cutoff ? 1.0 / std::sqrt(lambda(k)) : 0.0;
  factor_ = eig.eigenvectors() * inv_sqrt.asDiagonal() * eig.eigenvectors().transpose();
}

void CoulombFitting::apply(double* data, std::size_t ncols) const {
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
