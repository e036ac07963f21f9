#include "src/integrals/shell_ranges.hpp"

#include <algorithm>

namespace dfmp2 {

std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell) {
  return shell < basis.size() ? basis.shell2bf()[shell] : basis.nbf();
}

std::size_t function_count(const libint2::BasisSet& basis, ShellRange range) {
  return first_function(basis, range.last) - first_function(basis, range.first);
}

std::size_t largest_shell(const libint2::BasisSet& basis, ShellRange range) {
  std::size_t largest = 1;
  for (std::size_t s = range.first; s < range.last; ++s) largest = std::max(largest, basis[s].size());
  return largest;
}

std::size_t largest_shell(const libint2::BasisSet& basis) { return largest_shell(basis, {0, basis.size()}); }

std::vector<ShellRange> shell_batches(const libint2::BasisSet& basis, ShellRange range,
                                      std::size_t max_functions) {
  return shell_batches(range, max_functions, [&basis](std::size_t shell) { return basis[shell].size(); });
}

std::vector<ShellRange> shell_batches(ShellRange range, std::size_t max_weight,
                                      const std::function<std::size_t(std::size_t shell)>& weight) {
  std::vector<ShellRange> batches;
  std::size_t first = range.first, sum = 0;
  for (std::size_t s = range.first; s < range.last; ++s) {
    const std::size_t w = weight(s);
    if (s > first && sum + w > max_weight) {
      batches.push_back({first, s});
      first = s;
      sum = 0;
    }
    sum += w;
  }
  if (range.last > first) batches.push_back({first, range.last});
  return batches;
}

namespace {

// Part k starts at the first shell whose first function's position reaches k/parts of total.
template <typename Position>
ShellRange part_by(const libint2::BasisSet& basis, int part, int parts, std::size_t total, Position position) {
  auto start = [&](int k) {
    const std::size_t target = total * static_cast<std::size_t>(k) / static_cast<std::size_t>(parts);
    std::size_t shell = 0;
    while (shell < basis.size() && position(first_function(basis, shell)) < target) ++shell;
    return shell;
  };
  return {start(part), part + 1 == parts ? basis.size() : start(part + 1)};
}

}  // namespace

ShellRange shell_part(const libint2::BasisSet& basis, int part, int parts) {
  return part_by(basis, part, parts, basis.nbf(), [](std::size_t function) { return function; });
}

ShellRange shell_part_of_rows(const libint2::BasisSet& basis, const kernels::BlockPackedLayout& layout, int part,
                              int parts) {
  return part_by(basis, part, parts, layout.size(), [&layout](std::size_t row) { return layout.row_offset(row); });
}

}  // namespace dfmp2
