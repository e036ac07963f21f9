#include "kernels/compute_engine.hpp"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dfmp2::kernels {
namespace {

// ---- the checks every engine's calls go through -------------------------------------------------

constexpr std::size_t kIntMax = 0x7fffffff;  // BLAS's and cuBLAS's sizes are int

[[noreturn]] void refuse(const char* call, const std::string& problem) {
  throw std::invalid_argument(std::string("ComputeEngine::") + call + ": " + problem);
}

const char* memory_name(Memory memory) { return memory == Memory::host ? "host" : "device"; }

std::string shape(std::size_t rows, std::size_t cols) { return std::to_string(rows) + " × " + std::to_string(cols); }

// The view in the engine's memory, within int, ld ≥ rows; its ld raised to 1 when it has no rows
// (BLAS refuses ld = 0 even where no element is read).
template <typename Real>
void check_view(const char* call, const char* name, MatrixView<Real>& view, Memory engine) {
  if (view.memory != engine)
    refuse(call, std::string(name) + " is in " + memory_name(view.memory) + " memory but this engine computes in " +
                     memory_name(engine) + " memory");
  if (view.rows > kIntMax || view.cols > kIntMax || view.ld > kIntMax)
    refuse(call, std::string(name) + " (" + shape(view.rows, view.cols) + ", ld " + std::to_string(view.ld) +
                     ") exceeds BLAS's 32-bit sizes");
  if (view.ld < view.rows)
    refuse(call, std::string(name) + " has " + std::to_string(view.rows) + " rows but ld " + std::to_string(view.ld));
  if (view.data == nullptr && view.rows * view.cols > 0) refuse(call, std::string(name) + " has no data");
  view.ld = std::max<std::size_t>(view.ld, 1);
}

// shapes() builds the message only when they do not agree: the checks run on every product, and the
// fused backend's many small GEMMs must not allocate.
template <typename Shapes>
void check_agree(const char* call, bool agree, const Shapes& shapes) {
  if (!agree) refuse(call, "the shapes do not agree: " + shapes());
}

// Each returns whether there is anything to compute (C not empty).
template <typename Real>
bool check_gemm(Memory engine, Op op_a, Op op_b, MatrixView<const Real>& A, MatrixView<const Real>& B,
                MatrixView<Real>& C) {
  check_view("gemm", "A", A, engine);
  check_view("gemm", "B", B, engine);
  check_view("gemm", "C", C, engine);
  check_agree("gemm",
              op_rows(op_a, A) == C.rows && op_cols(op_b, B) == C.cols && op_cols(op_a, A) == op_rows(op_b, B),
              [&] {
                return "op(A) " + shape(op_rows(op_a, A), op_cols(op_a, A)) + ", op(B) " +
                       shape(op_rows(op_b, B), op_cols(op_b, B)) + ", C " + shape(C.rows, C.cols);
              });
  return C.rows > 0 && C.cols > 0;
}

template <typename Real>
bool check_syrk(Memory engine, Op op_x, MatrixView<const Real>& X, MatrixView<Real>& C) {
  check_view("syrk_lower", "X", X, engine);
  check_view("syrk_lower", "C", C, engine);
  check_agree("syrk_lower", C.rows == C.cols && op_rows(op_x, X) == C.rows,
              [&] { return "op(X) " + shape(op_rows(op_x, X), op_cols(op_x, X)) + ", C " + shape(C.rows, C.cols); });
  return C.rows > 0;
}

template <typename Real>
bool check_symm(Memory engine, MatrixView<const Real>& A, MatrixView<const Real>& B, MatrixView<Real>& C) {
  check_view("symm_upper_left", "A", A, engine);
  check_view("symm_upper_left", "B", B, engine);
  check_view("symm_upper_left", "C", C, engine);
  check_agree("symm_upper_left", A.rows == A.cols && A.rows == C.rows && B.rows == C.rows && B.cols == C.cols,
              [&] { return "A " + shape(A.rows, A.cols) + ", B " + shape(B.rows, B.cols) + ", C " + shape(C.rows, C.cols); });
  return C.rows > 0 && C.cols > 0;
}

template <typename Real>
bool check_solve(Memory engine, Side side, MatrixView<const Real>& L, MatrixView<Real>& B) {
  check_view("solve_lower", "L", L, engine);
  check_view("solve_lower", "B", B, engine);
  const std::size_t n = side == Side::left ? B.rows : B.cols;
  check_agree("solve_lower", L.rows == n && L.cols == n,
              [&] {
                return "L " + shape(L.rows, L.cols) + (side == Side::left ? " on the left of B " : " on the right of B ") +
                       shape(B.rows, B.cols);
              });
  return B.rows > 0 && B.cols > 0;
}

// ---- the CPU engine: CBLAS, column-major --------------------------------------------------------

CBLAS_TRANSPOSE cblas_op(Op op) { return op == Op::transpose ? CblasTrans : CblasNoTrans; }

void cblas_gemm(CBLAS_TRANSPOSE a, CBLAS_TRANSPOSE b, int m, int n, int k, double alpha, const double* A, int lda,
                const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasColMajor, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
void cblas_gemm(CBLAS_TRANSPOSE a, CBLAS_TRANSPOSE b, int m, int n, int k, float alpha, const float* A, int lda,
                const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasColMajor, a, b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
void cblas_syrk(CBLAS_TRANSPOSE t, int n, int k, double alpha, const double* X, int ldx, double beta, double* C,
                int ldc) {
  cblas_dsyrk(CblasColMajor, CblasLower, t, n, k, alpha, X, ldx, beta, C, ldc);
}
void cblas_syrk(CBLAS_TRANSPOSE t, int n, int k, float alpha, const float* X, int ldx, float beta, float* C, int ldc) {
  cblas_ssyrk(CblasColMajor, CblasLower, t, n, k, alpha, X, ldx, beta, C, ldc);
}
void cblas_symm(int m, int n, double alpha, const double* A, int lda, const double* B, int ldb, double beta,
                double* C, int ldc) {
  cblas_dsymm(CblasColMajor, CblasLeft, CblasUpper, m, n, alpha, A, lda, B, ldb, beta, C, ldc);
}
void cblas_symm(int m, int n, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
                int ldc) {
  cblas_ssymm(CblasColMajor, CblasLeft, CblasUpper, m, n, alpha, A, lda, B, ldb, beta, C, ldc);
}

void cblas_trsm(CBLAS_SIDE side, CBLAS_TRANSPOSE t, int m, int n, double alpha, const double* L, int ldl, double* B,
                int ldb) {
  cblas_dtrsm(CblasColMajor, side, CblasLower, t, CblasNonUnit, m, n, alpha, L, ldl, B, ldb);
}
void cblas_trsm(CBLAS_SIDE side, CBLAS_TRANSPOSE t, int m, int n, float alpha, const float* L, int ldl, float* B,
                int ldb) {
  cblas_strsm(CblasColMajor, side, CblasLower, t, CblasNonUnit, m, n, alpha, L, ldl, B, ldb);
}

template <typename Real>
void host_gemm(Op op_a, Op op_b, Real alpha, const MatrixView<const Real>& A, const MatrixView<const Real>& B,
               Real beta, const MatrixView<Real>& C) {
  cblas_gemm(cblas_op(op_a), cblas_op(op_b), int(C.rows), int(C.cols), int(op_cols(op_a, A)), alpha, A.data,
             int(A.ld), B.data, int(B.ld), beta, C.data, int(C.ld));
}
template <typename Real>
void host_syrk_lower(Op op_x, Real alpha, const MatrixView<const Real>& X, Real beta, const MatrixView<Real>& C) {
  cblas_syrk(cblas_op(op_x), int(C.rows), int(op_cols(op_x, X)), alpha, X.data, int(X.ld), beta, C.data, int(C.ld));
}
template <typename Real>
void host_symm_upper_left(Real alpha, const MatrixView<const Real>& A, const MatrixView<const Real>& B, Real beta,
                          const MatrixView<Real>& C) {
  cblas_symm(int(C.rows), int(C.cols), alpha, A.data, int(A.ld), B.data, int(B.ld), beta, C.data, int(C.ld));
}

template <typename Real>
void host_solve_lower(Side side, Op op_l, Real alpha, const MatrixView<const Real>& L, const MatrixView<Real>& B) {
  cblas_trsm(side == Side::left ? CblasLeft : CblasRight, cblas_op(op_l), int(B.rows), int(B.cols), alpha, L.data,
             int(L.ld), B.data, int(B.ld));
}

class CpuEngine final : public ComputeEngine {
 public:
  Memory memory() const override { return Memory::host; }
  bool shared_by_threads() const override { return true; }

 protected:
  void run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                double beta, const MatrixView<double>& C) override {
    host_gemm(op_a, op_b, alpha, A, B, beta, C);
  }
  void run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B,
                float beta, const MatrixView<float>& C) override {
    host_gemm(op_a, op_b, alpha, A, B, beta, C);
  }
  void run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                      const MatrixView<double>& C) override {
    host_syrk_lower(op_x, alpha, X, beta, C);
  }
  void run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                      const MatrixView<float>& C) override {
    host_syrk_lower(op_x, alpha, X, beta, C);
  }
  void run_symm_upper_left(double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                           double beta, const MatrixView<double>& C) override {
    host_symm_upper_left(alpha, A, B, beta, C);
  }
  void run_symm_upper_left(float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B, float beta,
                           const MatrixView<float>& C) override {
    host_symm_upper_left(alpha, A, B, beta, C);
  }
  void run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                       const MatrixView<double>& B) override {
    host_solve_lower(side, op_l, alpha, L, B);
  }
  void run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                       const MatrixView<float>& B) override {
    host_solve_lower(side, op_l, alpha, L, B);
  }
};

}  // namespace

void ComputeEngine::gemm(Op op_a, Op op_b, double alpha, MatrixView<const double> A, MatrixView<const double> B,
                         double beta, MatrixView<double> C) {
  if (check_gemm(memory(), op_a, op_b, A, B, C)) run_gemm(op_a, op_b, alpha, A, B, beta, C);
}
void ComputeEngine::gemm(Op op_a, Op op_b, float alpha, MatrixView<const float> A, MatrixView<const float> B,
                         float beta, MatrixView<float> C) {
  if (check_gemm(memory(), op_a, op_b, A, B, C)) run_gemm(op_a, op_b, alpha, A, B, beta, C);
}
void ComputeEngine::syrk_lower(Op op_x, double alpha, MatrixView<const double> X, double beta, MatrixView<double> C) {
  if (check_syrk(memory(), op_x, X, C)) run_syrk_lower(op_x, alpha, X, beta, C);
}
void ComputeEngine::syrk_lower(Op op_x, float alpha, MatrixView<const float> X, float beta, MatrixView<float> C) {
  if (check_syrk(memory(), op_x, X, C)) run_syrk_lower(op_x, alpha, X, beta, C);
}
void ComputeEngine::symm_upper_left(double alpha, MatrixView<const double> A, MatrixView<const double> B, double beta,
                                    MatrixView<double> C) {
  if (check_symm(memory(), A, B, C)) run_symm_upper_left(alpha, A, B, beta, C);
}
void ComputeEngine::symm_upper_left(float alpha, MatrixView<const float> A, MatrixView<const float> B, float beta,
                                    MatrixView<float> C) {
  if (check_symm(memory(), A, B, C)) run_symm_upper_left(alpha, A, B, beta, C);
}

void ComputeEngine::solve_lower(Side side, Op op_l, double alpha, MatrixView<const double> L, MatrixView<double> B) {
  if (check_solve(memory(), side, L, B)) run_solve_lower(side, op_l, alpha, L, B);
}
void ComputeEngine::solve_lower(Side side, Op op_l, float alpha, MatrixView<const float> L, MatrixView<float> B) {
  if (check_solve(memory(), side, L, B)) run_solve_lower(side, op_l, alpha, L, B);
}

ComputeEngine& cpu_engine() {
  static CpuEngine engine;
  return engine;
}

double dot(std::size_t n, const double* x, const double* y) { return cblas_ddot(int(n), x, 1, y, 1); }
float dot(std::size_t n, const float* x, const float* y) { return cblas_sdot(int(n), x, 1, y, 1); }
void axpy(std::size_t n, double alpha, const double* x, double* y) { cblas_daxpy(int(n), alpha, x, 1, y, 1); }
void axpy(std::size_t n, float alpha, const float* x, float* y) { cblas_saxpy(int(n), alpha, x, 1, y, 1); }

}  // namespace dfmp2::kernels
