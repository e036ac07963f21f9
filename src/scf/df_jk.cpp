#include "src/scf/df_jk.hpp"

#include <omp.h>

#include "src/integrals/density_fitting.hpp"
#include "src/common/errors.hpp"
#include "src/common/memory.hpp"

namespace dfmp2 {

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, std::size_t memory_bytes,
                                     Communicator& comm)
    : comm_(comm), nbf_(obs.nbf()) {
  const std::size_t nbf = obs.nbf(), nbf2 = nbf * nbf, naux = aux.nbf();
  // Each rank computes (P|μν) for every P and its rows μ and fits them (the metric mixes only
  // P); then the ranks trade columns so that each holds every μν of its block of Q.
  auto columns_of = [&](int rank) {
    const auto [first, last] = shell_block(obs, rank, comm.size());
    return Range{first_function(obs, first) * nbf, first_function(obs, last) * nbf};
  };
  auto q_of = [&](int rank) { return block_of(naux, rank, comm.size()); };
  const Range my_columns = columns_of(comm.rank()), my_q = q_of(comm.rank());
  naux_ = static_cast<Eigen::Index>(my_q.size());
  const std::size_t bytes =
      sizeof(double) * (naux * my_columns.size() + (comm.size() > 1 ? my_q.size() * nbf2 : 0));
  if (bytes > memory_bytes)
    throw InputError("DF-SCF needs " + format_bytes(bytes) +
                     " for its three-index tensor, more than --memory " +
                     format_bytes(memory_bytes) + "; raise --memory");
  B_.resize(naux * my_columns.size());
  three_index_integrals(aux, 0, aux.size(), obs, pairs, B_.data(),
                        shell_block(obs, comm.rank(), comm.size()));
  CoulombFitting(coulomb_metric(aux)).apply(B_.data(), my_columns.size());
  if (comm.size() > 1)
    B_ = redistribute(
        comm, B_, [&](int rank) { return Block{{0, naux}, columns_of(rank)}; },
        [&](int rank) { return Block{q_of(rank), {0, nbf2}}; });
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
