// The orbital basis' significant shell pairs: Schwarz bounds sqrt(max|(μν|μν)|), libint2's
// shell-pair data for each pair that can matter, and the block-packed layout (kernels/
// block_packed.hpp) that stores only those pairs of a symmetric μν index: the three-index
// tensors' columns.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/block_packed.hpp"

namespace dfmp2 {

struct ShellPairs {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (s1, s2), s1 ≥ s2
  std::vector<libint2::ShellPair> data;                     // one per pair
  Eigen::MatrixXd schwarz;                                  // nshell × nshell, symmetric
  std::vector<long> index;  // [s1 * nshell + s2] (s1 ≥ s2) → position in pairs, or −1
  kernels::BlockPackedLayout layout;  // block p is pairs[p]
  std::size_t bytes() const;  // memory held, mostly libint2's primitive-pair data
  long find(std::size_t s1, std::size_t s2) const {
    return index[s1 * static_cast<std::size_t>(schwarz.rows()) + s2];
  }
};

// Pairs whose bound times the largest bound reaches `threshold` (Psi4's DF-SCF cutoff: what an
// integral (μν|λσ) ≤ sqrt((μν|μν)) sqrt((λσ|λσ)) can reach).
constexpr double kSchwarzThreshold = 1e-12;
ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold = kSchwarzThreshold);

}  // namespace dfmp2
