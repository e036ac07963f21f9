#include "src/scf/df_fock.hpp"

#include <omp.h>

#include "kernels/packed.hpp"
#include "kernels/packed_jk.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, MemoryBudget& budget, Communicator& comm,
                                     std::size_t spins)
    : comm_(comm), nbf_(obs.nbf()) {
  const std::size_t naux = aux.nbf(), npacked = kernels::packed_size(nbf_);
  // Each rank computes (P|μν) for every P and its rows μ and fits them (the metric mixes only
  // P); then the ranks trade columns so that each holds every μν of its block of Q.
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  const ThreeIndexIntegrals integrals(aux, obs, pairs, metric);
  auto columns_of = [&](int rank) {
    const ShellRange rows = shell_part(obs, rank, comm.size());
    const std::size_t first = kernels::packed_index(first_function(obs, rows.first), 0);
    return Range{first, first + integrals.columns(rows)};
  };
  auto q_of = [&](int rank) { return share_of(naux, rank, comm.size()); };
  const ShellRange my_rows = shell_part(obs, comm.rank(), comm.size());
  const Range my_columns = columns_of(comm.rank()), my_q = q_of(comm.rank());
  naux_ = my_q.size();

  LargeArray<double> by_columns = budget.allocate<double>(naux * my_columns.size(), "the DF-SCF three-index tensor");
  integrals.compute({0, aux.size()}, my_rows, by_columns.data());
  setup_work_.libint_seconds = integrals.libint_seconds({0, aux.size()}, my_rows);
  const CoulombFitting fitting(metric);
  fitting.apply(by_columns.data(), my_columns.size());
  setup_work_.flops_fp64 = fitting.flops(my_columns.size());
  if (comm.size() == 1) {
    B_ = std::move(by_columns);
  } else {
    B_ = budget.allocate<double>(naux_ * npacked, "the DF-SCF three-index tensor (exchange between ranks)");
    redistribute(
        comm, by_columns.data(), [&](int rank) { return MatrixPart{{0, naux}, columns_of(rank)}; },
        [&](int rank) { return MatrixPart{q_of(rank), {0, npacked}}; }, B_.data());
  }
  workspace_ = budget.reserve(kernels::packed_jk_workspace_bytes(nbf_, nbf_ / 2, omp_get_max_threads(), spins),
                              "the DF-SCF Fock builds' workspace");
  jk_ = std::make_unique<kernels::PackedJK>(kernels::PackedFactors{B_.data(), naux_, nbf_});
}

Eigen::MatrixXd DensityFittedFock::build(const Eigen::MatrixXd& density_factor, kernels::Precision precision) {
  const auto n = static_cast<Eigen::Index>(nbf_);
  Eigen::MatrixXd J(n, n), K(n, n);
  const std::size_t nf = static_cast<std::size_t>(density_factor.cols());
  double* K_data = K.data();
  coulomb_exchange(density_factor, {&nf, 1}, J.data(), {&K_data, 1}, precision);
  Eigen::MatrixXd G = 2.0 * J - K;
  comm_.allreduce_sum(G.data(), static_cast<std::size_t>(G.size()));
  return G;
}

std::array<Eigen::MatrixXd, 2> DensityFittedFock::build_unrestricted(const Eigen::MatrixXd& alpha_factor,
                                                                     const Eigen::MatrixXd& beta_factor,
                                                                     kernels::Precision precision) {
  const auto n = static_cast<Eigen::Index>(nbf_);
  Eigen::MatrixXd F(n, alpha_factor.cols() + beta_factor.cols());
  F.leftCols(alpha_factor.cols()) = alpha_factor;
  F.rightCols(beta_factor.cols()) = beta_factor;
  const std::size_t nf[2] = {static_cast<std::size_t>(alpha_factor.cols()),
                             static_cast<std::size_t>(beta_factor.cols())};
  Eigen::MatrixXd J(n, n);
  std::array<Eigen::MatrixXd, 2> G{Eigen::MatrixXd(n, n), Eigen::MatrixXd(n, n)};
  double* K[2] = {G[0].data(), G[1].data()};
  coulomb_exchange(F, nf, J.data(), K, precision);
  for (Eigen::MatrixXd& G_spin : G) {
    G_spin = J - G_spin;
    comm_.allreduce_sum(G_spin.data(), static_cast<std::size_t>(G_spin.size()));
  }
  return G;
}

void DensityFittedFock::coulomb_exchange(const Eigen::MatrixXd& F, std::span<const std::size_t> nf_per_spin,
                                         double* J, std::span<double* const> K, kernels::Precision precision) {
  const std::size_t nf = static_cast<std::size_t>(F.cols());
  if (precision == kernels::Precision::fp32) {
    jk_->build<float>(F.data(), nf_per_spin, J, K);
    work_.flops_fp32 += kernels::packed_jk_flops(naux_, nbf_, nf);
  } else {
    jk_->build<double>(F.data(), nf_per_spin, J, K);
    work_.flops_fp64 += kernels::packed_jk_flops(naux_, nbf_, nf);
  }
}

}  // namespace dfmp2
