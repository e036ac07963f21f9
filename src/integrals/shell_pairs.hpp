// The orbital basis' significant shell pairs: Schwarz bounds sqrt(max|(μν|μν)|), libint2's
// shell-pair data for each pair that can matter, and the block-packed layout (kernels/
// block_packed.hpp) that stores only those pairs of a symmetric μν index: the three-index
// tensors' columns. Found in time that grows with the number of pairs near enough to matter:
// an analytic bound from the shells' exponents and distance (and a grid of cells over the shell
// centres, so far pairs are never visited) leaves (μν|μν) to compute for those pairs only. The
// nshell × nshell tables below are still filled (memset-fast; the run's refusal from its sizes
// counts them before they are made).
#pragma once

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/block_packed.hpp"

namespace dfmp2 {

struct ShellPairs {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;  // (s1, s2), s1 ≥ s2
  std::vector<libint2::ShellPair> data;                     // one per pair
  Eigen::MatrixXd schwarz;  // nshell × nshell, symmetric; 0 for pairs the analytic bound dismissed
  std::vector<long> index;  // [s1 * nshell + s2] (s1 ≥ s2) → position in pairs, or −1
  kernels::BlockPackedLayout layout;  // block p is pairs[p]
  std::size_t bytes() const;  // memory held, mostly libint2's primitive-pair data
  // The nshell × nshell tables (schwarz, index): what any basis of nshell shells holds at least.
  static std::size_t table_bytes(std::size_t nshell);
  long find(std::size_t s1, std::size_t s2) const {
    return index[s1 * static_cast<std::size_t>(schwarz.rows()) + s2];
  }
};

// Pairs whose bound times the largest bound reaches `threshold` (Psi4's DF-SCF cutoff: what an
// integral (μν|λσ) ≤ sqrt((μν|μν)) sqrt((λσ|λσ)) can reach). `progress` hears the share of
// the (μν|μν) computed.
constexpr double kSchwarzThreshold = 1e-12;
ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold = kSchwarzThreshold,
                                   const std::function<void(double)>& progress = {});

}  // namespace dfmp2
