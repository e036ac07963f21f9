// Ranges of a basis' shells and the functions they hold: how work and data are cut into
// batches (by function count) and into per-rank parts.
#pragma once

#include <cstddef>
#include <vector>

#include <libint2/basis.h>

namespace dfmp2 {

struct ShellRange {
  std::size_t first = 0, last = 0;  // shells [first, last)
  std::size_t size() const { return last - first; }
};

// First function of shell `shell` (nbf for shell == size()).
std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell);
// Functions of the shells [range.first, range.last).
std::size_t function_count(const libint2::BasisSet& basis, ShellRange range);

// Consecutive batches within `range` of at most max_functions functions each (at least one
// shell per batch).
std::vector<ShellRange> shell_batches(const libint2::BasisSet& basis, ShellRange range,
                                      std::size_t max_functions);

// Part `part` of `parts` contiguous shell ranges with about equal function counts.
ShellRange shell_part(const libint2::BasisSet& basis, int part, int parts);
// The same for rows of a packed lower triangle (kernels/packed.hpp), where row μ holds μ + 1
// elements: parts with about equal element counts, so later parts have fewer rows.
ShellRange shell_part_of_triangle(const libint2::BasisSet& basis, int part, int parts);

}  // namespace dfmp2
