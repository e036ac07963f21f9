// OffloadEngine's products against the CPU engine's, on any device: the host stand-in
// (tests/kernels/test_offload_engine.cpp) or the GPU (tests/gpu/test_gpu_offload.cpp).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "kernels/gpu/offload_engine.hpp"
#include "tests/kernels/random_matrix.hpp"

namespace dfmp2::test {

inline double largest_difference(const RandomMatrix<double>& a, const RandomMatrix<double>& b) {
  double largest = 0.0;
  for (std::size_t i = 0; i < a.data.size(); ++i) largest = std::max(largest, std::abs(a.data[i] - b.data[i]));
  return largest;
}

// C = 0.7 op(A) op(B) + beta C on an offload engine over make_device(bytes) and on the CPU engine,
// A in a resident range or not (then streamed, so pinned by the engine), B and C pinned
// (PinnedHost: a GPU's copies of them asynchronous) or not, for every transpose; the pad rows of C
// (RandomMatrix's) must stay as they were. Each product copies its tiles' parts of B, of A unless
// resident, and of C when beta reads it: all of them once when the staging buffer holds the whole
// product.
template <typename MakeDevice>
void check_offload_product(MakeDevice& make_device, std::size_t staging, bool a_resident, bool pinned, double beta,
                           double tolerance) {
  using Matrix = RandomMatrix<double>;
  namespace k = dfmp2::kernels;
  std::mt19937 rng(11);
  const std::size_t m = 23, n = 17, kk = 40;
  for (const k::Op op_a : {k::Op::none, k::Op::transpose})
    for (const k::Op op_b : {k::Op::none, k::Op::transpose}) {
      const Matrix A = op_a == k::Op::none ? Matrix(m, kk, rng, 3) : Matrix(kk, m, rng, 3);
      const Matrix B = op_b == k::Op::none ? Matrix(kk, n, rng) : Matrix(n, kk, rng);
      Matrix C(m, n, rng, 5);
      Matrix expected = C;
      k::cpu_engine().gemm(op_a, op_b, 0.7, A.view(), B.view(), beta, expected.view());
      const k::GpuOffloadPlan plan{a_resident, a_resident ? A.data.size() : 0, staging};
      const std::unique_ptr<k::JKDevice> device = make_device(plan.device_bytes());
      const std::vector<std::span<const double>> ranges{std::span<const double>(A.data)};
      k::OffloadEngine engine(plan, *device, k::cpu_engine(), ranges);
      const k::PinnedHost pins(engine, pinned ? std::vector<std::span<const double>>{B.data, C.data}
                                              : std::vector<std::span<const double>>{});
      const std::size_t uploaded_before = engine.uploaded_bytes();
      engine.gemm(op_a, op_b, 0.7, A.view(), B.view(), beta, C.view());
      INFO("staging " << staging << ", A resident " << a_resident << ", B and C pinned " << pinned << ", beta "
                      << beta << ", ops " << int(op_a) << int(op_b));
      CHECK(largest_difference(C, expected) < tolerance);
      CHECK(engine.products() == 1);
      const std::size_t uploaded = engine.uploaded_bytes() - uploaded_before;
      const std::size_t least = sizeof(double) * (kk * n + (a_resident ? 0 : m * kk) + (beta != 0.0 ? m * n : 0));
      CHECK(uploaded >= least);
      if (staging >= m * kk + kk * n + m * n) CHECK(uploaded == least);
      CHECK(engine.uploaded_bytes() >= (a_resident ? sizeof(double) * A.data.size() : 0));
    }
}

// Whole products and tiles of C and of the inner dimension down to single elements, A resident or
// copied, B and C pinned or not, beta zero or not.
template <typename MakeDevice>
void check_offload_products(MakeDevice make_device, double tolerance) {
  for (const std::size_t staging : {std::size_t(4000), std::size_t(300), std::size_t(40), std::size_t(3)})
    for (const bool a_resident : {false, true})
      for (const bool pinned : {false, true})
        for (const double beta : {0.0, -1.5})
          check_offload_product(make_device, staging, a_resident, pinned, beta, tolerance);
}

// B = alpha op(L)⁻¹ B (Side::left) or B op(L)⁻¹ (Side::right) on an offload engine against the CPU
// engine's, for both ops: with L held, on the device in tiles of what each solve keeps apart (five
// columns or rows per tile in a small staging buffer, or all at once); without, on the host engine.
template <typename MakeDevice>
void check_offload_solves(MakeDevice make_device, double tolerance) {
  using Matrix = RandomMatrix<double>;
  namespace k = dfmp2::kernels;
  std::mt19937 rng(17);
  const std::size_t n = 19;
  Matrix L(n, n, rng, 2);
  for (std::size_t j = 0; j < n; ++j) L.data[j * L.ld + j] += 4.0;  // well conditioned (the upper part unread)
  for (const std::size_t staging : {5 * n, std::size_t(4000)})
    for (const bool held : {true, false})
      for (const k::Side side : {k::Side::left, k::Side::right})
        for (const k::Op op : {k::Op::none, k::Op::transpose}) {
          INFO("staging " << staging << ", L held " << held << ", side " << int(side) << ", op " << int(op));
          const Matrix B0 = side == k::Side::left ? Matrix(n, 23, rng, 3) : Matrix(23, n, rng, 3);
          Matrix expected = B0, got = B0;
          k::cpu_engine().solve_lower(side, op, 0.5, L.view(), expected.view());
          const k::GpuOffloadPlan plan{false, 0, staging, L.data.size()};
          const std::unique_ptr<k::JKDevice> device = make_device(plan.device_bytes());
          k::OffloadEngine engine(plan, *device, k::cpu_engine(), {});
          if (held) engine.hold_operands(L.data);
          engine.solve_lower(side, op, 0.5, L.view(), got.view());
          CHECK(largest_difference(got, expected) < tolerance);  // the pad rows too: untouched
          CHECK(engine.products() == (held ? 1u : 0u));
        }
}

// Operands held (hold_operands) are copied once and read there by every product until released;
// one that does not fit what is left of the room is staged as before; after the release both are
// staged again. C = A B with beta 0 copies only what is not held.
template <typename MakeDevice>
void check_held_operands(MakeDevice make_device, double tolerance) {
  using Matrix = RandomMatrix<double>;
  namespace k = dfmp2::kernels;
  std::mt19937 rng(13);
  const std::size_t m = 23, n = 17, kk = 40;
  const Matrix A(m, kk, rng), B(kk, n, rng), initial(m, n, rng);
  Matrix expected = initial;
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 0.7, A.view(), B.view(), 0.0, expected.view());
  const k::GpuOffloadPlan plan{false, 0, 4000, A.data.size() + B.data.size()};
  const std::unique_ptr<k::JKDevice> device = make_device(plan.device_bytes());
  k::OffloadEngine engine(plan, *device, k::cpu_engine(), {});
  const auto product_copies = [&] {  // bytes one product copies, and its result checked
    Matrix C = initial;
    const std::size_t before = engine.uploaded_bytes();
    engine.gemm(k::Op::none, k::Op::none, 0.7, A.view(), B.view(), 0.0, C.view());
    CHECK(largest_difference(C, expected) < tolerance);
    return engine.uploaded_bytes() - before;
  };
  // Held: the arrays, pad rows too; staged: the views' elements.
  const std::size_t a_held = sizeof(double) * A.data.size(), b_held = sizeof(double) * B.data.size();
  const std::size_t a_staged = sizeof(double) * m * kk, b_staged = sizeof(double) * kk * n;
  engine.hold_operands(A.data);
  CHECK(engine.uploaded_bytes() == a_held);
  const std::vector<double> beyond(B.data.size() + 1, 1.0);
  engine.hold_operands(beyond);  // more than the room has left: not held
  CHECK(engine.uploaded_bytes() == a_held);
  CHECK(product_copies() == b_staged);
  engine.hold_operands(B.data);
  CHECK(engine.uploaded_bytes() == a_held + b_staged + b_held);
  CHECK(product_copies() == 0);
  CHECK(product_copies() == 0);
  engine.release_operands();
  CHECK(product_copies() == a_staged + b_staged);
}

// Arrays placed on the device (place) stand for their host ranges without a copy: a product whose
// C lies in one writes it there (the host range untouched, nothing copied back), a later product
// reads it there, and the device copy holds the product.
template <typename MakeDevice>
void check_placed_arrays(MakeDevice make_device, double tolerance) {
  using Matrix = RandomMatrix<double>;
  namespace k = dfmp2::kernels;
  std::mt19937 rng(17);
  const std::size_t m = 23, n = 17, kk = 40;
  const Matrix A(m, kk, rng), B(kk, n, rng), D(n, 9, rng);
  Matrix C(m, n, rng), E(m, 9, rng), expected_C = C, expected_E = E;
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 0.7, A.view(), B.view(), 0.0, expected_C.view());
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 1.0, expected_C.view(), D.view(), 0.0, expected_E.view());
  const k::GpuOffloadPlan plan{false, 0, 4000, C.data.size()};
  const std::unique_ptr<k::JKDevice> device = make_device(plan.device_bytes());
  k::OffloadEngine engine(plan, *device, k::cpu_engine(), {});
  const Matrix C_before = C;
  const double* placed = engine.place(C.data);
  REQUIRE(placed != nullptr);
  CHECK(engine.place(C.data) == nullptr);  // the room is full
  engine.gemm(k::Op::none, k::Op::none, 0.7, A.view(), B.view(), 0.0, C.view());
  CHECK(C.data == C_before.data);  // not copied back
  const std::size_t before = engine.uploaded_bytes();
  engine.gemm(k::Op::none, k::Op::none, 1.0, C.view(), D.view(), 0.0, E.view());
  CHECK(engine.uploaded_bytes() - before == sizeof(double) * D.rows * D.cols);  // C read where it is
  CHECK(largest_difference(E, expected_E) < tolerance);
  Matrix on_device = C;  // the placed C, pad rows included
  device->copy_from(on_device.data.data(), placed, sizeof(double) * on_device.data.size());
  device->synchronise();
  for (std::size_t col = 0; col < n; ++col)
    for (std::size_t row = 0; row < m; ++row)
      CHECK(std::abs(on_device.data[row + col * C.ld] - expected_C.data[row + col * C.ld]) < tolerance);
  engine.release_operands();
  CHECK(engine.place(C.data) != nullptr);
}

}  // namespace dfmp2::test
