#include "src/scf/df_fock.hpp"

#include <omp.h>

#include <algorithm>

#include "kernels/packed.hpp"
#include "kernels/packed_jk.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {
namespace {

// Which part of the factors a rank holds: every P for its packed columns (rows μ) while they are
// computed and fitted (the metric mixes only P), then its block of Q for every column.
struct Layout {
  const libint2::BasisSet& obs;
  std::size_t naux, npacked;
  int ranks;

  ShellRange rows_of(int rank) const { return shell_part_of_triangle(obs, rank, ranks); }
  Range columns_of(int rank) const {
    const ShellRange rows = rows_of(rank);
    return {kernels::packed_index(first_function(obs, rows.first), 0),
            kernels::packed_index(first_function(obs, rows.last), 0)};
  }
  Range q_of(int rank) const { return share_of(naux, rank, ranks); }
};

std::size_t workspace_bytes(std::size_t nbf, std::size_t spins) {
  return kernels::packed_jk_workspace_bytes(nbf, nbf / 2, omp_get_max_threads(), spins);
}

}  // namespace

DensityFittedFock::DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                     const ShellPairs& pairs, MemoryBudget& budget, Communicator& comm,
                                     std::size_t spins)
    : comm_(comm), nbf_(obs.nbf()) {
  const Layout layout{obs, static_cast<std::size_t>(aux.nbf()), kernels::packed_size(nbf_), comm.size()};
  const Range my_columns = layout.columns_of(comm.rank());
  naux_ = layout.q_of(comm.rank()).size();
  const auto fit_memory = budget.reserve(CoulombFitting::peak_bytes(layout.naux), "the DF-SCF fitting metric");
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  const ThreeIndexIntegrals integrals(aux, obs, pairs, metric);
  const ShellRange all_aux{0, aux.size()}, my_rows = layout.rows_of(comm.rank());

  LargeArray<double> by_columns =
      budget.allocate<double>(layout.naux * my_columns.size(), "the DF-SCF three-index tensor");
  integrals.compute(all_aux, my_rows, by_columns.data());
  setup_work_.libint_seconds = integrals.libint_seconds(all_aux, my_rows);
  const CoulombFitting fitting(metric);
  fitting.apply(by_columns.data(), my_columns.size());
  setup_work_.flops_fp64 = fitting.flops(my_columns.size());
  if (comm.size() == 1) {
    B_ = std::move(by_columns);
  } else {
    B_ = budget.allocate<double>(naux_ * layout.npacked, "the DF-SCF three-index tensor (exchange between ranks)");
    redistribute(
        comm, by_columns.data(),
        [&](int rank) { return MatrixPart{{0, layout.naux}, layout.columns_of(rank)}; },
        [&](int rank) { return MatrixPart{layout.q_of(rank), {0, layout.npacked}}; }, B_.data());
  }
  workspace_ = budget.reserve(workspace_bytes(nbf_, spins), "the DF-SCF Fock builds' workspace");
  jk_ = std::make_unique<kernels::PackedJK>(kernels::PackedFactors{B_.data(), naux_, nbf_});
}

std::size_t DensityFittedFock::peak_bytes(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                          const Communicator& comm, std::size_t spins) {
  const Layout layout{obs, static_cast<std::size_t>(aux.nbf()), kernels::packed_size(obs.nbf()), comm.size()};
  const std::size_t by_columns = layout.naux * layout.columns_of(comm.rank()).size();
  const std::size_t mine = comm.size() == 1 ? by_columns : layout.q_of(comm.rank()).size() * layout.npacked;
  const std::size_t exchange = comm.size() == 1 ? by_columns : by_columns + mine;
  return std::max(sizeof(double) * exchange + CoulombFitting::peak_bytes(layout.naux),
                  sizeof(double) * mine + workspace_bytes(obs.nbf(), spins));
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
