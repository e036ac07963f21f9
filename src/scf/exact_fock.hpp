// G = 2J − K from exact four-index integrals, built incrementally: G(D_n) = G(D_{n−1}) +
// G(D_n − D_{n−1}), where the density change screens most quartets away as the SCF converges;
// every kFullBuildEvery-th build starts afresh so screening errors cannot pile up. Over MPI each
// rank computes its share of the quartets and G is summed.
#pragma once

#include <libint2/basis.h>

#include "src/common/parallel.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/fock_builder.hpp"

namespace dfmp2 {

class ExactFock : public FockBuilder {
 public:
  ExactFock(const libint2::BasisSet& obs, const ShellPairs& pairs, Communicator& comm);
  Eigen::MatrixXd build(const Eigen::MatrixXd& density_factor, kernels::Precision precision) override;
  // What a build holds (per-thread G, the last D and G), for the run's up-front memory check.
  static std::size_t peak_bytes(std::size_t nbf);

 private:
  const libint2::BasisSet& obs_;
  const ShellPairs& pairs_;
  Communicator& comm_;
  Eigen::MatrixXd D_, G_;  // the last build's density and G
  int builds_ = 0;
};

}  // namespace dfmp2
