#include "src/integrals/shell_ranges.hpp"

namespace dfmp2 {

std::size_t first_function(const libint2::BasisSet& basis, std::size_t shell) {
  return shell < basis.size() ? basis.shell2bf()[shell] : basis.nbf();
}

std::size_t function_count(const libint2::BasisSet& basis, ShellRange range) {
  return first_function(basis, range.last) - first_function(basis, range.first);
}

std::vector<ShellRange> shell_batches(const libint2::BasisSet& basis, ShellRange range,
                                      std::size_t max_functions) {
  std::vector<ShellRange> batches;
  std::size_t first = range.first, functions = 0;
  for (std::size_t s = range.first; s < range.last; ++s) {
    if (s > first && functions + basis[s].size() > max_functions) {
      batches.push_back({first, s});
      first = s;
      functions = 0;
    }
    functions += basis[s].size();
  }
  if (range.last > first) batches.push_back({first, range.last});
  return batches;
}

ShellRange shell_part(const libint2::BasisSet& basis, int part, int parts) {
  // Part k starts at the first shell whose first function reaches k/parts of all functions.
  auto start = [&](int k) {
    const std::size_t target = basis.nbf() * static_cast<std::size_t>(k) / static_cast<std::size_t>(parts);
    std::size_t shell = 0;
    while (shell < basis.size() && first_function(basis, shell) < target) ++shell;
    return shell;
  };
  return {start(part), part + 1 == parts ? basis.size() : start(part + 1)};
}

}  // namespace dfmp2
