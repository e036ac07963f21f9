#include "src/scf/exact_fock.hpp"

#include <omp.h>

#include "src/integrals/four_index.hpp"

namespace dfmp2 {
namespace {
constexpr int kFullBuildEvery = 8;
}  // namespace

ExactFock::ExactFock(const libint2::BasisSet& obs, const ShellPairs& pairs, Communicator& comm,
                     MemoryBudget& budget, std::size_t spins, bool store_quartets)
    : obs_(obs),
      pairs_(pairs),
      comm_(comm),
      budget_(budget),
      store_(store_quartets),
      builds_memory_(budget.reserve(peak_bytes(obs.nbf(), spins), "the exact Fock builds")) {}

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

void ExactFock::store_quartets() {
  const std::size_t bytes = StoredQuartets::bytes(obs_, pairs_, comm_.rank(), comm_.size());
  stored_memory_ = budget_.reserve(bytes, "the stored four-index integrals");
  stored_.emplace(obs_, pairs_, comm_.rank(), comm_.size());
  const auto nbf = static_cast<Eigen::Index>(obs_.nbf());
  work_.libint_seconds += exact_fock_libint_seconds(obs_, pairs_, {Eigen::MatrixXd::Ones(nbf, nbf)}, comm_.rank(),
                                                    comm_.size());
}

std::vector<Eigen::MatrixXd> ExactFock::summed_over_ranks(std::vector<Eigen::MatrixXd> G) {
  for (Eigen::MatrixXd& G_s : G) comm_.allreduce_sum(G_s.data(), static_cast<std::size_t>(G_s.size()));
  return G;
}

std::vector<Eigen::MatrixXd> ExactFock::build_spins(const std::vector<Eigen::MatrixXd>& D) {
  // From the second build on: a single build (E_SCF of given orbitals) would gain nothing.
  if (builds_ == 1 && store_) store_quartets();
  if (stored_) {
    ++builds_;
    return summed_over_ranks(stored_->fock(D));
  }
  // Densities of another spin count than the last build (RHF, then UHF) start afresh.
  const bool incremental = builds_++ % kFullBuildEvery != 0 && D_.size() == D.size();
  std::vector<Eigen::MatrixXd> change = D;
  if (incremental)
    for (std::size_t s = 0; s < D.size(); ++s) change[s] -= D_[s];
  std::vector<Eigen::MatrixXd> G =
      summed_over_ranks(exact_two_electron_fock(obs_, pairs_, change, comm_.rank(), comm_.size()));
  work_.libint_seconds += exact_fock_libint_seconds(obs_, pairs_, change, comm_.rank(), comm_.size());
  if (incremental)
    for (std::size_t s = 0; s < G.size(); ++s) G[s] += G_[s];
  D_ = D;
  G_ = G;
  return G;
}

}  // namespace dfmp2
