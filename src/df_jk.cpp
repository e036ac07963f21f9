#include "src/df_jk.hpp"

#include <omp.h>

#include "src/density_fitting.hpp"
#include "src/errors.hpp"
#include "src/memory.hpp"

namespace dfmp2 {

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, std::size_t memory_bytes,
                                     Communicator& comm)
    : comm_(comm), nbf_(obs.nbf()) {
  const std::size_t nbf2 = static_cast<std::size_t>(nbf_ * nbf_);
  // Rank r computes (P|μν) for its auxiliary shells and receives B^Q for the same block of Q.
  auto functions_of = [&](int rank) {
    const auto [first, last] = shell_block(aux, rank, comm.size());
    return Range{first_function(aux, first), first_function(aux, last)};
  };
  const Range mine = functions_of(comm.rank());
  naux_ = static_cast<Eigen::Index>(mine.size());
  const std::size_t bytes = sizeof(double) * mine.size() * nbf2 * (comm.size() > 1 ? 2 : 1);
  if (bytes > memory_bytes)
    throw InputError("DF-SCF needs " + format_bytes(bytes) +
                     " for its three-index tensor, more than --memory " +
                     format_bytes(memory_bytes) + "; raise --memory");
  const auto [first, last] = shell_block(aux, comm.rank(), comm.size());
  B_.resize(mine.size() * nbf2);
  three_index_integrals(aux, first, last, obs, pairs, B_.data());
  const CoulombFitting fitting(coulomb_metric(aux));
  if (comm.size() == 1) {
    fitting.apply(B_.data(), nbf2);
  } else {
    B_ = fitting.apply_distributed(comm, B_.data(), mine, nbf2, functions_of,
                                   [&](int) { return Range{0, nbf2}; });
  }
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
  Eigen::MatrixXd G = 2.0 * J - K;
  comm_.allreduce_sum(G.data(), static_cast<std::size_t>(G.size()));
  return G;
}

}  // namespace dfmp2
