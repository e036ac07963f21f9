#include "src/df_jk.hpp"

#include <omp.h>

#include "src/density_fitting.hpp"
#include "src/errors.hpp"
#include "src/memory.hpp"

namespace dfmp2 {

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, std::size_t memory_bytes)
    : nbf_(obs.nbf()), naux_(aux.nbf()) {
  const std::size_t bytes = sizeof(double) * static_cast<std::size_t>(naux_ * nbf_ * nbf_);
  if (bytes > memory_bytes)
    throw InputError("DF-SCF needs " + format_bytes(bytes) +
                     " for its three-index tensor, more than --memory " +
                     format_bytes(memory_bytes) + "; raise --memory");
  B_.resize(static_cast<std::size_t>(naux_ * nbf_ * nbf_));
  three_index_integrals(aux, 0, aux.size(), obs, pairs, B_.data());
  CoulombFitting(coulomb_metric(aux)).apply(B_.data(), static_cast<std::size_t>(nbf_ * nbf_));
}

Eigen::MatrixXd DensityFittedFock::operator()(const Eigen::MatrixXd& C_occ) const {
  const Eigen::Map<const Eigen::MatrixXd> B(B_.data(), nbf_ * nbf_, naux_);  // column Q = B^Q
  const Eigen::MatrixXd D = C_occ * C_occ.transpose();
  const Eigen::VectorXd gamma = B.transpose() * D.reshaped();
  const Eigen::MatrixXd J = (B * gamma).reshaped(nbf_, nbf_);

  std::vector<Eigen::MatrixXd> K_parts(omp_get_max_threads(), Eigen::MatrixXd::Zero(nbf_, nbf_));
#pragma omp parallel
  {
    Eigen::MatrixXd& K = K_parts[omp_get_thread_num()];
    Eigen::MatrixXd Z(C_occ.cols(), nbf_);
#pragma omp for schedule(dynamic, 4)
    for (Eigen::Index Q = 0; Q < naux_; ++Q) {
      const Eigen::Map<const Eigen::MatrixXd> BQ(B_.data() + Q * nbf_ * nbf_, nbf_, nbf_);
      Z.noalias() = C_occ.transpose() * BQ;
      K.selfadjointView<Eigen::Lower>().rankUpdate(Z.transpose());
    }
  }
  Eigen::MatrixXd K = Eigen::MatrixXd::Zero(nbf_, nbf_);
  for (const auto& part : K_parts) K += part;
  K = K.selfadjointView<Eigen::Lower>();
  return 2.0 * J - K;
}

}  // namespace dfmp2
