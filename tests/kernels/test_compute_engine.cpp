// The compute seam's CPU engine against the products written out element by element (every
// transpose, alpha and beta, strided views, both precisions), and its refusals: views in the
// wrong memory, shapes that do not agree, leading dimensions below the rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/compute_engine.hpp"
#include "kernels/mp2_energy.hpp"
#include "tests/kernels/random_matrix.hpp"

namespace k = dfmp2::kernels;

namespace {

template <typename Real>
using Matrix = dfmp2::test::RandomMatrix<Real>;
template <typename Real>
constexpr double kTolerance = dfmp2::test::kEngineTolerance<Real>;

template <typename Real>
Real op_at(k::Op op, const Matrix<Real>& M, std::size_t r, std::size_t c) {
  return op == k::Op::none ? M(r, c) : M(c, r);
}

template <typename Real>
void check_gemm(k::Op op_a, k::Op op_b) {
  std::mt19937 rng(7);
  const std::size_t m = 5, n = 4, kk = 7;
  const Matrix<Real> A = op_a == k::Op::none ? Matrix<Real>(m, kk, rng) : Matrix<Real>(kk, m, rng);
  const Matrix<Real> B = op_b == k::Op::none ? Matrix<Real>(kk, n, rng) : Matrix<Real>(n, kk, rng);
  Matrix<Real> C(m, n, rng);
  const Matrix<Real> C0 = C;
  k::cpu_engine().gemm(op_a, op_b, Real(0.5), A.view(), B.view(), Real(-2), C.view());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::size_t p = 0; p < kk; ++p) sum += double(op_at(op_a, A, i, p)) * double(op_at(op_b, B, p, j));
      CHECK(std::abs(double(C(i, j)) - (0.5 * sum - 2.0 * double(C0(i, j)))) <= kTolerance<Real>);
    }
  for (std::size_t x = 0; x < C.data.size(); ++x)
    if (x % C.ld >= m) CHECK(C.data[x] == C0.data[x]);  // the pad rows
}

template <typename Real>
void check_syrk(k::Op op_x) {
  std::mt19937 rng(11);
  const std::size_t n = 6, kk = 3;
  const Matrix<Real> X = op_x == k::Op::none ? Matrix<Real>(n, kk, rng) : Matrix<Real>(kk, n, rng);
  Matrix<Real> C(n, n, rng);
  const Matrix<Real> C0 = C;
  k::cpu_engine().syrk_lower(op_x, Real(2), X.view(), Real(1), C.view());
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (j > i) {
        CHECK(C(i, j) == C0(i, j));  // the strict upper triangle is not touched
        continue;
      }
      double sum = 0.0;
      for (std::size_t p = 0; p < kk; ++p) sum += double(op_at(op_x, X, i, p)) * double(op_at(op_x, X, j, p));
      CHECK(std::abs(double(C(i, j)) - (2.0 * sum + double(C0(i, j)))) <= kTolerance<Real>);
    }
}

template <typename Real>
void check_symm() {
  std::mt19937 rng(13);
  const std::size_t m = 5, n = 3;
  const Matrix<Real> A(m, m, rng), B(m, n, rng);  // A's lower triangle is not symmetric: never read
  Matrix<Real> C(m, n, rng);
  k::cpu_engine().symm_upper_left(Real(1), A.view(), B.view(), Real(0), C.view());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::size_t p = 0; p < m; ++p) sum += double(i <= p ? A(i, p) : A(p, i)) * double(B(p, j));
      CHECK(std::abs(double(C(i, j)) - sum) <= kTolerance<Real>);
    }
}

// op(L) X = alpha B (left) or X op(L) = alpha B (right): the solution times op(L) gives alpha B back.
template <typename Real>
void check_solve(k::Side side, k::Op op_l) {
  std::mt19937 rng(17);
  const std::size_t m = 4, n = 5, nl = side == k::Side::left ? m : n;
  Matrix<Real> L(nl, nl, rng);
  for (std::size_t i = 0; i < nl; ++i) L(i, i) = Real(3) + L(i, i);  // well conditioned
  const auto lower_op = [&](std::size_t r, std::size_t c) {
    const std::size_t rr = op_l == k::Op::none ? r : c, cc = op_l == k::Op::none ? c : r;
    return rr >= cc ? double(L(rr, cc)) : 0.0;  // the strict upper triangle is not read
  };
  const Matrix<Real> B0(m, n, rng);
  Matrix<Real> X = B0;
  k::cpu_engine().solve_lower(side, op_l, Real(2), L.view(), X.view());
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::size_t p = 0; p < nl; ++p)
        sum += side == k::Side::left ? lower_op(i, p) * double(X(p, j)) : double(X(i, p)) * lower_op(p, j);
      CHECK(std::abs(sum - 2.0 * double(B0(i, j))) <= 10 * kTolerance<Real>);
    }
}

template <typename Real>
void check_every_product() {
  for (const k::Op a : {k::Op::none, k::Op::transpose})
    for (const k::Op b : {k::Op::none, k::Op::transpose}) check_gemm<Real>(a, b);
  for (const k::Op x : {k::Op::none, k::Op::transpose}) check_syrk<Real>(x);
  check_symm<Real>();
  for (const k::Side side : {k::Side::left, k::Side::right})
    for (const k::Op op : {k::Op::none, k::Op::transpose}) check_solve<Real>(side, op);
}

// An engine on device memory that must never be called: the CPU backends need a host engine.
class DeviceEngineNeverCalled final : public k::ComputeEngine {
 public:
  k::Memory memory() const override { return k::Memory::device; }

 protected:
  [[noreturn]] static void called() { throw std::logic_error("a CPU backend called an engine on device memory"); }
  void run_gemm(k::Op, k::Op, double, const k::MatrixView<const double>&, const k::MatrixView<const double>&, double,
                const k::MatrixView<double>&) override { called(); }
  void run_gemm(k::Op, k::Op, float, const k::MatrixView<const float>&, const k::MatrixView<const float>&, float,
                const k::MatrixView<float>&) override { called(); }
  void run_syrk_lower(k::Op, double, const k::MatrixView<const double>&, double,
                      const k::MatrixView<double>&) override { called(); }
  void run_syrk_lower(k::Op, float, const k::MatrixView<const float>&, float, const k::MatrixView<float>&) override {
    called();
  }
  void run_symm_upper_left(double, const k::MatrixView<const double>&, const k::MatrixView<const double>&, double,
                           const k::MatrixView<double>&) override { called(); }
  void run_symm_upper_left(float, const k::MatrixView<const float>&, const k::MatrixView<const float>&, float,
                           const k::MatrixView<float>&) override { called(); }
  void run_solve_lower(k::Side, k::Op, double, const k::MatrixView<const double>&,
                       const k::MatrixView<double>&) override { called(); }
  void run_solve_lower(k::Side, k::Op, float, const k::MatrixView<const float>&,
                       const k::MatrixView<float>&) override { called(); }
};

}  // namespace

TEST_CASE("the CPU engine's GEMM, SYRK, SYMM and TRSM equal their definitions, fp64 and fp32", "[compute_engine]") {
  check_every_product<double>();
  check_every_product<float>();
}

TEST_CASE("row-major A Bᵀ through the engine is the energy step's T = B_I B_Jᵀ", "[compute_engine]") {
  const std::size_t m = 3, n = 2, kk = 4, lda = 5, ldb = 6, ldc = 3;
  std::vector<double> A(m * lda), B(n * ldb), C(m * ldc, -7.0);
  for (std::size_t x = 0; x < A.size(); ++x) A[x] = 0.25 * double(x % 7) - 0.5;
  for (std::size_t x = 0; x < B.size(); ++x) B[x] = 0.5 * double(x % 5) - 1.0;
  k::gemm_abt_row_major(k::cpu_engine(), k::Memory::host, m, n, kk, A.data(), lda, B.data(), ldb, C.data(), ldc);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::size_t p = 0; p < kk; ++p) sum += A[i * lda + p] * B[j * ldb + p];
      CHECK(std::abs(C[i * ldc + j] - sum) <= 1e-14);  // sums of 4 exact products: rounding only
    }
    CHECK(C[i * ldc + 2] == -7.0);  // beyond the n columns
  }
}

TEST_CASE("an empty product does nothing, and k = 0 scales C by beta", "[compute_engine]") {
  std::vector<double> C(4, 3.0);
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 1.0, k::host_matrix<const double>(nullptr, 2, 0, 2),
                       k::host_matrix<const double>(nullptr, 0, 2, 0), 0.5, k::host_matrix(C.data(), 2, 2, 2));
  for (const double c : C) CHECK(c == 1.5);
  k::cpu_engine().gemm(k::Op::none, k::Op::none, 1.0, k::host_matrix<const double>(nullptr, 0, 3, 0),
                       k::host_matrix<const double>(nullptr, 3, 0, 3), 0.0, k::host_matrix(C.data(), 0, 0, 0));
  for (const double c : C) CHECK(c == 1.5);
}

TEST_CASE("the engine refuses views in the wrong memory, shapes that do not agree and short leading dimensions",
          "[compute_engine]") {
  std::vector<double> a(16, 1.0), b(16, 1.0), c(16, 0.0);
  k::ComputeEngine& cpu = k::cpu_engine();
  CHECK(cpu.memory() == k::Memory::host);
  const auto A = k::host_matrix<const double>(a.data(), 4, 4, 4), B = k::host_matrix<const double>(b.data(), 4, 4, 4);
  CHECK_THROWS_WITH(cpu.gemm(k::Op::none, k::Op::none, 1.0, k::device_matrix<const double>(a.data(), 4, 4, 4), B,
                             0.0, k::host_matrix(c.data(), 4, 4, 4)),
                    "ComputeEngine::gemm: A is in device memory but this engine computes in host memory");
  CHECK_THROWS_WITH(cpu.gemm(k::Op::none, k::Op::none, 1.0, A, k::host_matrix<const double>(b.data(), 3, 4, 4), 0.0,
                             k::host_matrix(c.data(), 4, 4, 4)),
                    "ComputeEngine::gemm: the shapes do not agree: op(A) 4 × 4, op(B) 3 × 4, C 4 × 4");
  CHECK_THROWS_WITH(cpu.syrk_lower(k::Op::none, 1.0, A, 0.0, k::host_matrix(c.data(), 4, 4, 3)),
                    "ComputeEngine::syrk_lower: C has 4 rows but ld 3");
  CHECK_THROWS_AS(cpu.symm_upper_left(1.0, k::host_matrix<const double>(a.data(), 4, 3, 4), B, 0.0,
                                      k::host_matrix(c.data(), 4, 4, 4)),
                  std::invalid_argument);
  CHECK_THROWS_AS(cpu.solve_lower(k::Side::right, k::Op::none, 1.0, k::host_matrix<const double>(a.data(), 3, 3, 4),
                                  k::host_matrix(c.data(), 4, 4, 4)),
                  std::invalid_argument);
  for (const double x : c) CHECK(x == 0.0);  // nothing computed by a refused call
}

TEST_CASE("the energy step refuses a compute engine that is not on host memory, before any backend runs",
          "[compute_engine]") {
  const std::vector<double> B(2 * 3 * 4, 0.1), eps_occ{-1.0, -0.5}, eps_vir{0.5, 1.0, 1.5};
  const k::BiaView<double> view{B.data(), 2, 3, 4};
  DeviceEngineNeverCalled device;
  k::EnergyOptions options;
  CHECK(options.engine == &k::cpu_engine());
  options.engine = &device;
  for (const k::Backend backend : {k::Backend::reference, k::Backend::loop, k::Backend::fused})
    CHECK_THROWS_WITH(k::mp2_energy(backend, view, eps_occ, eps_vir, options),
                      "mp2_energy: the CPU backends need a compute engine on host memory");
  options.engine = nullptr;
  CHECK_THROWS_AS(k::mp2_energy(k::Backend::fused, view, eps_occ, eps_vir, options), std::invalid_argument);
}
