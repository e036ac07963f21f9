// Compute-engine views (kernels/compute_engine.hpp) of Eigen's column-major matrices, maps and
// blocks in host memory: the large products of src/ go through the engine on Eigen's storage.
#pragma once

#include <cstddef>
#include <type_traits>

#include <Eigen/Core>

#include "kernels/compute_engine.hpp"

namespace dfmp2 {

// A view of M's elements: writable for a writable M, read-only for a const one.
template <typename Dense>
auto host_view(Dense&& M) {
  static_assert(!std::remove_cvref_t<Dense>::IsRowMajor, "compute-engine views are column-major");
  return kernels::host_matrix(M.data(), static_cast<std::size_t>(M.rows()), static_cast<std::size_t>(M.cols()),
                              static_cast<std::size_t>(M.outerStride()));
}

}  // namespace dfmp2
