#include "src/scf/exact_fock.hpp"

#include <omp.h>

#include <cstdio>
#include <stdexcept>

#include "src/integrals/four_index.hpp"

namespace dfmp2 {
namespace {

constexpr int kFullBuildEvery = 8;
// A product L Rᵀ counts as symmetric when it differs from its transpose by no more than rounding
// (of its sums of 2k products) would make it, relative to its largest element.
constexpr double kSymmetryTolerance = 1e-12;

// D = L Rᵀ, symmetrised; refused when it is not symmetric.
Eigen::MatrixXd symmetric_density(const FactorPair& d) {
  if (d.is_symmetric()) return d.left * d.left.transpose();
  const Eigen::MatrixXd D = d.left * d.right.transpose();
  const double asymmetry = (D - D.transpose()).cwiseAbs().maxCoeff();
  if (asymmetry > kSymmetryTolerance * D.cwiseAbs().maxCoeff()) {
    char why[256];
    std::snprintf(why, sizeof why,
                  "exact-integral Fock builds take symmetric densities only (this L Rᵀ differs from its transpose by "
                  "%.1e): their quartet loop uses D_λσ = D_σλ; a non-symmetric density needs the density-fitted "
                  "builder", asymmetry);
    throw std::invalid_argument(why);
  }
  return 0.5 * (D + D.transpose());
}

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

std::vector<Eigen::MatrixXd> ExactFock::two_electron_fock(std::span<const FactorPair> densities,
                                                          kernels::Precision) {
  std::vector<Eigen::MatrixXd> D;
  for (const FactorPair& d : densities) D.push_back(symmetric_density(d));
  return build_spins(D);
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
