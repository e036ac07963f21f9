// Three-index Coulomb integrals (P|μν) over an auxiliary basis and the orbital basis'
// significant shell pairs μ ≥ ν, written block-packed (the pairs' layout, kernels/block_packed.hpp)
// straight into their place: every stored element is written exactly once, the integral or the
// zero of a screened triplet, so no tensor is ever zero-filled first. Screened by Schwarz,
// |(P|μν)| ≤ sqrt((P|P)) sqrt((μν|μν)), per shell triplet.
#pragma once

#include <cstddef>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"

namespace dfmp2 {

class ThreeIndexIntegrals {
 public:
  // metric: (P|Q) over aux, whose diagonal gives the auxiliary bounds.
  ThreeIndexIntegrals(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                      const ShellPairs& pairs, const Eigen::MatrixXd& metric,
                      double threshold = 1e-12);

  // Stored columns of the rows μ in the orbital shells `rows` (their stored ν ≤ μ).
  std::size_t columns(ShellRange rows) const;
  // (P|μν) for the auxiliary shells aux_shells and μ in rows, row-major: row P − P_first, the
  // stored elements of rows μ from the first of `rows`, rows `stride` apart (0: columns(rows)).
  // OpenMP over auxiliary shells.
  void compute(ShellRange aux_shells, ShellRange rows, double* out, std::size_t stride = 0) const;
  // libint2's own time for compute(aux_shells, rows) spread over this run's threads: a sample
  // of its shell triplets timed on one thread, scaled to all of them.
  double libint_seconds(ShellRange aux_shells, ShellRange rows) const;

 private:
  bool significant(std::size_t aux_shell, long pair) const;

  const libint2::BasisSet& aux_;
  const libint2::BasisSet& obs_;
  const ShellPairs& pairs_;
  double threshold_;
  std::vector<double> aux_bound_;               // sqrt(max (P|P)) per auxiliary shell
  std::vector<libint2::ShellPair> aux_data_;    // shell-pair data of (P, unit)
};

}  // namespace dfmp2
