#include "src/scf/exact_fock.hpp"

#include <omp.h>

#include "src/integrals/four_index.hpp"

namespace dfmp2 {
namespace {
constexpr int kFullBuildEvery = 8;
}  // namespace

ExactFock::ExactFock(const libint2::BasisSet& obs, const ShellPairs& pairs, Communicator& comm)
    : obs_(obs), pairs_(pairs), comm_(comm) {}

std::size_t ExactFock::peak_bytes(std::size_t nbf) {
  return sizeof(double) * nbf * nbf * static_cast<std::size_t>(omp_get_max_threads() + 4);
}

Eigen::MatrixXd ExactFock::build(const Eigen::MatrixXd& density_factor, kernels::Precision) {
  const Eigen::MatrixXd D = density_factor * density_factor.transpose();
  const bool incremental = builds_++ % kFullBuildEvery != 0;
  const Eigen::MatrixXd change = incremental ? Eigen::MatrixXd(D - D_) : D;
  Eigen::MatrixXd G = exact_two_electron_fock(obs_, pairs_, change, comm_.rank(), comm_.size());
  work_.libint_seconds += exact_fock_libint_seconds(obs_, pairs_, change, comm_.rank(), comm_.size());
  comm_.allreduce_sum(G.data(), static_cast<std::size_t>(G.size()));
  if (incremental) G += G_;
  D_ = D;
  G_ = G;
  return G;
}

}  // namespace dfmp2
