// Density fitting in the Coulomb metric: turns three-index integrals (P|x) into fitted factors
// B^Q_x = Σ_P M_QP (P|x) with Mᵀ M = J⁻¹, J_PQ = (P|Q), so that (x|y) ≈ Σ_Q B^Q_x B^Q_y.
// M = L⁻¹ from the Cholesky factor J = L Lᵀ; when J is too ill-conditioned for that, M = J^-1/2
// with eigenvalues below `condition` × λ_max dropped.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <Eigen/Core>

#include "src/parallel.hpp"

namespace dfmp2 {

class CoulombFitting {
 public:
  explicit CoulombFitting(const Eigen::MatrixXd& metric, double condition = 1e-10);

  // In place on row-major [naux][ncols] data: row P becomes B^P.
  void apply(double* data, std::size_t ncols) const;

  // The same over ranks: this rank holds rows `my_rows` of (P|x) (row-major, ncols wide) and
  // gets back rows rows_of(rank) × columns cols_of(rank) of B = M (P|x), row-major.
  // Collective: every rank calls it with its own rows.
  std::vector<double> apply_distributed(Communicator& comm, const double* my_data, Range my_rows,
                                        std::size_t ncols,
                                        const std::function<Range(int)>& rows_of,
                                        const std::function<Range(int)>& cols_of) const;

  std::size_t naux() const { return static_cast<std::size_t>(factor_.rows()); }
  bool uses_cholesky() const { return cholesky_; }

 private:
  Eigen::MatrixXd factor_;  // lower Cholesky factor L, or J^-1/2
  Eigen::MatrixXd fitting_matrix() const;  // M itself: L⁻¹, or J^-1/2
  bool cholesky_ = true;
};

}  // namespace dfmp2
