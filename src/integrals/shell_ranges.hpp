// Ranges of a basis' shells and the functions they hold: how work and data are cut into
// batches (by function count) and into per-rank parts.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include <libint2/basis.h>

#include "kernels/block_packed.hpp"

namespace dfmp2 {

struct ShellRange {
  std::size_t first = 0, last = 0;  // shells [first, last)
  std::size_t size() const { return last - first; }
};

// First function of shell `shell` (nbf for shell == size()).
std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell);
// Functions of the shells [range.first, range.last).
std::size_t function_count(const libint2::BasisSet& basis, ShellRange range);
// The most functions any shell of `range` (default: every shell) has, at least 1: the least batch
// of whole shells.
std::size_t largest_shell(const libint2::BasisSet& basis, ShellRange range);
std::size_t largest_shell(const libint2::BasisSet& basis);

// Consecutive batches within `range` of at most max_functions functions each (at least one
// shell per batch).
std::vector<ShellRange> shell_batches(const libint2::BasisSet& basis, ShellRange range,
                                      std::size_t max_functions);
// The same by any weight of a shell (summed over a batch's shells).
std::vector<ShellRange> shell_batches(ShellRange range, std::size_t max_weight,
                                      const std::function<std::size_t(std::size_t shell)>& weight);

// Part `part` of `parts` contiguous shell ranges with about equal function counts.
ShellRange shell_part(const libint2::BasisSet& basis, int part, int parts);
// The same for the rows of a block-packed symmetric index (kernels/block_packed.hpp) whose row
// blocks are the shells, where row μ holds its stored columns (μ + 1 when all are stored): parts
// with about equal stored element counts, so parts of longer rows have fewer of them.
ShellRange shell_part_of_rows(const libint2::BasisSet& basis, const kernels::BlockPackedLayout& layout, int part,
                              int parts);

}  // namespace dfmp2
