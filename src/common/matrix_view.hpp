// Compute-engine views (kernels/compute_engine.hpp) of Eigen's matrices, maps and blocks in host
// memory: the large products of src/ go through the engine on Eigen's storage.
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

namespace detail {

template <typename Dense>
constexpr bool is_row_major = bool(std::remove_cvref_t<Dense>::IsRowMajor);

// The column-major view of M's elements: M's own, or Mᵀ's when M is row-major.
template <typename Dense>
auto stored_view(Dense&& M) {
  const auto rows = static_cast<std::size_t>(M.rows()), cols = static_cast<std::size_t>(M.cols());
  const auto ld = static_cast<std::size_t>(M.outerStride());
  if constexpr (is_row_major<Dense>)
    return kernels::host_matrix(M.data(), cols, rows, ld);
  else
    return kernels::host_matrix(M.data(), rows, cols, ld);
}

// op, of M, as an op of M's stored view: transposed once more when that view is Mᵀ.
template <typename Dense>
kernels::Op stored_op(kernels::Op op) {
  if constexpr (is_row_major<Dense>) return op == kernels::Op::none ? kernels::Op::transpose : kernels::Op::none;
  return op;
}
inline kernels::Op transposed(kernels::Op op) {
  return op == kernels::Op::none ? kernels::Op::transpose : kernels::Op::none;
}

}  // namespace detail

// C = alpha op_a(A) op_b(B) + beta C on `engine`, A, B and C Eigen's matrices, maps or blocks of
// either storage order: a row-major one is the column-major view of its transpose, and a row-major
// C is computed as Cᵀ = op_b(B)ᵀ op_a(A)ᵀ.
template <typename A, typename B, typename C>
void gemm(kernels::ComputeEngine& engine, kernels::Op op_a, kernels::Op op_b, double alpha, const A& a, const B& b,
          double beta, C&& c) {
  using detail::stored_op, detail::stored_view, detail::transposed;
  const kernels::MatrixView<const double> a_view = stored_view(a), b_view = stored_view(b);
  if constexpr (detail::is_row_major<C>)
    engine.gemm(stored_op<B>(transposed(op_b)), stored_op<A>(transposed(op_a)), alpha, b_view, a_view, beta,
                stored_view(c));
  else
    engine.gemm(stored_op<A>(op_a), stored_op<B>(op_b), alpha, a_view, b_view, beta, stored_view(c));
}

// alpha op_a(A) op_b(B) on `engine`, as gemm's, into a new column-major matrix.
template <typename A, typename B>
Eigen::MatrixXd product(kernels::ComputeEngine& engine, kernels::Op op_a, kernels::Op op_b, double alpha, const A& a,
                        const B& b) {
  Eigen::MatrixXd c(op_a == kernels::Op::none ? a.rows() : a.cols(), op_b == kernels::Op::none ? b.cols() : b.rows());
  gemm(engine, op_a, op_b, alpha, a, b, 0.0, c);
  return c;
}

}  // namespace dfmp2
