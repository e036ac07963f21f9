#include "src/scf/exact_fock.hpp"

#include <omp.h>

#include "src/integrals/four_index.hpp"

namespace dfmp2 {
namespace {
constexpr int kFullBuildEvery = 8;
}  // namespace

ExactFock::ExactFock(const libint2::BasisSet& obs, const ShellPairs& pairs, Communicator& comm)
    : obs_(obs), pairs_(pairs), comm_(comm) {}

std::size_t ExactFock::peak_bytes(std::size_t nbf, std::size_t spins) {
  return sizeof(double) * nbf * nbf * spins * static_cast<std::size_t>(omp_get_max_threads() + 4);
}

Eigen::MatrixXd ExactFock::build(const Eigen::MatrixXd& density_factor, kernels::Precision) {
  return build_spins({density_factor * density_factor.transpose()})[0];
}

std::array<Eigen::MatrixXd, 2> ExactFock::build_unrestricted(const Eigen::MatrixXd& alpha_factor,
                                                             const Eigen::MatrixXd& beta_factor, kernels::Precision) {
  std::vector<Eigen::MatrixXd> G =
      build_spins({alpha_factor * alpha_factor.transpose(), beta_factor * beta_factor.transpose()});
  return {std::move(G[0]), std::move(G[1])};
}

std::vector<Eigen::MatrixXd> ExactFock::build_spins(const std::vector<Eigen::MatrixXd>& D) {
  // Densities of another spin count than the last build (RHF, then UHF) start afresh.
  const bool incremental = builds_++ % kFullBuildEvery != 0 && D_.size() == D.size();
  std::vector<Eigen::MatrixXd> change = D;
  if (incremental)
    for (std::size_t s = 0; s < D.size(); ++s) change[s] -= D_[s];
  std::vector<Eigen::MatrixXd> G = exact_two_electron_fock(obs_, pairs_, change, comm_.rank(), comm_.size());
  work_.libint_seconds += exact_fock_libint_seconds(obs_, pairs_, change, comm_.rank(), comm_.size());
  for (std::size_t s = 0; s < G.size(); ++s) {
    comm_.allreduce_sum(G[s].data(), static_cast<std::size_t>(G[s].size()));
    if (incremental) G[s] += G_[s];
  }
  D_ = D;
  G_ = G;
  return G;
}

}  // namespace dfmp2
