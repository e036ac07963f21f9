// The orbital basis' significant shell pairs: Schwarz bounds sqrt(max|(μν|μν)|) and libint2's
// shell-pair data for each pair that can matter.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

namespace dfmp2 {

struct ShellPairs {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (s1, s2), s1 ≥ s2
  std::vector<libint2::ShellPair> data;                     // one per pair
  Eigen::MatrixXd schwarz;                                  // nshell × nshell, symmetric
  std::vector<long> index;  // [s1 * nshell + s2] (s1 ≥ s2) → position in pairs, or −1
  std::size_t bytes() const;  // memory held, mostly libint2's primitive-pair data
  long find(std::size_t s1, std::size_t s2) const {
    return index[s1 * static_cast<std::size_t>(schwarz.rows()) + s2];
  }
};

// Pairs whose bound times the largest bound reaches `threshold`.
ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold = 1e-12);

}  // namespace dfmp2
