#include "src/density_fitting.hpp"

#include <algorithm>

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

Eigen::MatrixXd CoulombFitting::fitting_matrix() const {
  if (!cholesky_) return factor_;
  Eigen::MatrixXd M = Eigen::MatrixXd::Identity(factor_.rows(), factor_.cols());
  factor_.triangularView<Eigen::Lower>().solveInPlace(M);
  return M;
}

std::vector<double> CoulombFitting::apply_distributed(
    Communicator& comm, const double* my_data, Range my_rows, std::size_t ncols,
    const std::function<Range(int)>& rows_of, const std::function<Range(int)>& cols_of) const {
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::MatrixXd M = fitting_matrix();
  const Eigen::Map<const RowMatrix> mine(my_data, static_cast<Eigen::Index>(my_rows.size()),
                                         static_cast<Eigen::Index>(ncols));
  const Range my_out_rows = rows_of(comm.rank()), my_out_cols = cols_of(comm.rank());
  std::vector<double> result(my_out_rows.size() * my_out_cols.size());
  // Column slices bound the message and scratch size (~32 MiB).
  constexpr std::size_t kSliceDoubles = std::size_t(1) << 22;
  for (int destination = 0; destination < comm.size(); ++destination) {
    const Range rows = rows_of(destination), cols = cols_of(destination);
    if (rows.size() == 0 || cols.size() == 0) continue;
    const std::size_t slice = std::max<std::size_t>(1, kSliceDoubles / rows.size());
    for (std::size_t c0 = cols.begin; c0 < cols.end; c0 += slice) {
      const std::size_t width = std::min(slice, cols.end - c0);
      // This rank's share of B(rows, c0 : c0+width) = Σ_{P mine} M(rows, P) (P|x).
      RowMatrix part = M.block(rows.begin, my_rows.begin, rows.size(), my_rows.size()) *
                       mine.middleCols(c0, width);
      comm.reduce_sum(part.data(), static_cast<std::size_t>(part.size()), destination);
      if (comm.rank() == destination)
        Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>(
            result.data() + (c0 - cols.begin), rows.size(), width,
            Eigen::OuterStride<>(cols.size())) = part;
    }
  }
  return result;
}

}  // namespace dfmp2
