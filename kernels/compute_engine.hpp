// The compute seam: every dense BLAS-3 product of the kernels and of src/ (the energy step's T,
// the DF transform, J/K, the occupied response) is a call on a ComputeEngine, over matrix views
// that say which memory they are in. cpu_engine() (OpenBLAS) is the engine behind them today;
// kernels/gpu/cuda_compute_engine.hpp is the cuBLAS one for device memory, built with CUDA.
// Small products (the SCF's Fock-size matrices) stay Eigen's; see docs/backends.md.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace dfmp2::kernels {

// Where a view's elements are: this process's memory, or an accelerator's.
enum class Memory { host, device };
// op(A) = A, or Aᵀ.
enum class Op { none, transpose };
// Which side of B a triangular factor stands on.
enum class Side { left, right };

// A column-major matrix, as BLAS and cuBLAS take them: element (r, c) at data[r + c·ld]. A
// row-major r × c matrix with rows ld apart is the column-major c × r view of the same elements.
// Real is double or float, const for an operand that is only read.
template <typename Real>
struct MatrixView {
  Real* data = nullptr;
  std::size_t rows = 0, cols = 0, ld = 0;
  Memory memory = Memory::host;

  // A writable view is also a read-only one.
  template <typename Other>
    requires std::is_same_v<Other, const Real> && (!std::is_const_v<Real>)
  operator MatrixView<Other>() const {
    return {data, rows, cols, ld, memory};
  }
};

// The rows and columns of op(M).
template <typename Real>
std::size_t op_rows(Op op, const MatrixView<Real>& M) {
  return op == Op::none ? M.rows : M.cols;
}
template <typename Real>
std::size_t op_cols(Op op, const MatrixView<Real>& M) {
  return op == Op::none ? M.cols : M.rows;
}

template <typename Real>
MatrixView<Real> host_matrix(Real* data, std::size_t rows, std::size_t cols, std::size_t ld) {
  return {data, rows, cols, ld, Memory::host};
}
template <typename Real>
MatrixView<Real> device_matrix(Real* data, std::size_t rows, std::size_t cols, std::size_t ld) {
  return {data, rows, cols, ld, Memory::device};
}

// One engine: GEMM, SYRK, SYMM and TRSM in both precisions on views in its memory(). Each call checks
// its views (their memory, shapes that agree, ld ≥ rows, sizes within BLAS's 32-bit int) and
// throws std::invalid_argument naming the call and the problem before anything is computed; a
// product with an empty result does nothing. The checks and one virtual call are the whole
// overhead (no allocation), so the fused backend's many small GEMMs pay nothing for the seam.
class ComputeEngine {
 public:
  virtual ~ComputeEngine() = default;
  // The memory its operands must be in.
  virtual Memory memory() const = 0;
  // Whether threads may call it at once (the CPU engine's); an engine with a stream and buffers of
  // its own takes one call at a time.
  virtual bool shared_by_threads() const { return false; }

  // C = alpha op(A) op(B) + beta C: op(A) is C.rows × k, op(B) k × C.cols.
  void gemm(Op op_a, Op op_b, double alpha, MatrixView<const double> A, MatrixView<const double> B, double beta,
            MatrixView<double> C);
  void gemm(Op op_a, Op op_b, float alpha, MatrixView<const float> A, MatrixView<const float> B, float beta,
            MatrixView<float> C);
  // The lower triangle of C (n × n) = alpha op(X) op(X)ᵀ + beta C, op(X) n × k; the strict upper
  // triangle is not touched.
  void syrk_lower(Op op_x, double alpha, MatrixView<const double> X, double beta, MatrixView<double> C);
  void syrk_lower(Op op_x, float alpha, MatrixView<const float> X, float beta, MatrixView<float> C);
  // C (m × n) = alpha A B + beta C, A symmetric m × m of which only the upper triangle is read.
  void symm_upper_left(double alpha, MatrixView<const double> A, MatrixView<const double> B, double beta,
                       MatrixView<double> C);
  void symm_upper_left(float alpha, MatrixView<const float> A, MatrixView<const float> B, float beta,
                       MatrixView<float> C);
  // In place, B = alpha op(L)⁻¹ B (left: L is B.rows × B.rows) or alpha B op(L)⁻¹ (right: L is
  // B.cols × B.cols), L lower triangular with its diagonal; its strict upper triangle is not read.
  void solve_lower(Side side, Op op_l, double alpha, MatrixView<const double> L, MatrixView<double> B);
  void solve_lower(Side side, Op op_l, float alpha, MatrixView<const float> L, MatrixView<float> B);

  // A hint for an engine that copies host operands to where it multiplies (OffloadEngine): the
  // products until release_operands() read `operands` several times and nothing writes them, so
  // they may be copied once and read there. Each call adds to those held; the other engines
  // ignore both.
  virtual void hold_operands(std::span<const double> operands) { (void)operands; }
  virtual void release_operands() {}
  // A hint for the same engines: `host` is copied to and from where they multiply again and again
  // until unpin_host, so it may be page-locked for faster copies (PinnedHost pins and unpins).
  virtual void pin_host(std::span<const double> host) { (void)host; }
  virtual void unpin_host(std::span<const double> host) { (void)host; }

 protected:
  // The calls after their checks: shapes agree, every view is in memory(), C is not empty, and
  // every ld is at least 1.
  virtual void run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A,
                        const MatrixView<const double>& B, double beta, const MatrixView<double>& C) = 0;
  virtual void run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A,
                        const MatrixView<const float>& B, float beta, const MatrixView<float>& C) = 0;
  virtual void run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                              const MatrixView<double>& C) = 0;
  virtual void run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                              const MatrixView<float>& C) = 0;
  virtual void run_symm_upper_left(double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                                   double beta, const MatrixView<double>& C) = 0;
  virtual void run_symm_upper_left(float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B,
                                   float beta, const MatrixView<float>& C) = 0;
  virtual void run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                               const MatrixView<double>& B) = 0;
  virtual void run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                               const MatrixView<float>& B) = 0;
};

// Releases an engine's held operands (hold_operands) when its scope ends, by an exception too.
class OperandRelease {
 public:
  explicit OperandRelease(ComputeEngine& engine) : engine_(engine) {}
  OperandRelease(const OperandRelease&) = delete;
  OperandRelease& operator=(const OperandRelease&) = delete;
  ~OperandRelease() { engine_.release_operands(); }

 private:
  ComputeEngine& engine_;
};

// Host arrays pinned on an engine (pin_host) while it lives, unpinned when it goes, by an exception
// too: declared after the arrays it names, it goes before they are freed.
class PinnedHost {
 public:
  PinnedHost(ComputeEngine& engine, std::vector<std::span<const double>> arrays)
      : engine_(engine), arrays_(std::move(arrays)) {
    for (const std::span<const double> array : arrays_) engine_.pin_host(array);
  }
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  ~PinnedHost() {
    for (const std::span<const double> array : arrays_) engine_.unpin_host(array);
  }

 private:
  ComputeEngine& engine_;
  std::vector<std::span<const double>> arrays_;
};

// The CPU engine: OpenBLAS on host memory, shared by every thread (it holds no state).
// Multithreaded when called outside an OpenMP parallel region (the OpenMP build of OpenBLAS
// follows omp_get_max_threads()), single-threaded inside one (it checks omp_in_parallel()).
ComputeEngine& cpu_engine();

// Row-major C (m × n, rows ldc apart) = A Bᵀ, A m × k and B n × k row-major (rows lda and ldb
// apart), all three in `memory`: B_I B_Jᵀ of the energy step. It is the column-major
// Cᵀ = (Bᵀ)ᵀ Aᵀ, the call BLAS itself makes of a row-major one.
template <typename Real>
void gemm_abt_row_major(ComputeEngine& engine, Memory memory, std::size_t m, std::size_t n, std::size_t k,
                        const Real* A, std::size_t lda, const Real* B, std::size_t ldb, Real* C, std::size_t ldc) {
  engine.gemm(Op::transpose, Op::none, Real(1), MatrixView<const Real>{B, k, n, ldb, memory},
              MatrixView<const Real>{A, k, m, lda, memory}, Real(0), MatrixView<Real>{C, n, m, ldc, memory});
}

// Level 1 on host vectors, n elements each: Σ_i x_i y_i, and y += alpha x. Memory-bound and
// called per row inside the threads' loops, so plain OpenBLAS calls rather than an engine's.
double dot(std::size_t n, const double* x, const double* y);
float dot(std::size_t n, const float* x, const float* y);
void axpy(std::size_t n, double alpha, const double* x, double* y);
void axpy(std::size_t n, float alpha, const float* x, float* y);

}  // namespace dfmp2::kernels
