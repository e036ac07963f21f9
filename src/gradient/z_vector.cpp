#include "src/gradient/z_vector.hpp"

#include <algorithm>
#include <cstdio>

#include "src/common/errors.hpp"
#include "src/common/matrix_view.hpp"

namespace dfmp2 {
namespace {

using Sets = std::vector<Eigen::MatrixXd>;
using kernels::Op;
using kernels::Precision;

double dot(const Sets& x, const Sets& y) {
  double sum = 0.0;
  for (std::size_t s = 0; s < x.size(); ++s) sum += x[s].cwiseProduct(y[s]).sum();
  return sum;
}

// x_s += alpha y_s for every set s.
void add_scaled(Sets& x, double alpha, const Sets& y) {
  for (std::size_t s = 0; s < x.size(); ++s) x[s] += alpha * y[s];
}

class ZVectorSolver {
 public:
  ZVectorSolver(FockResponse& response, const ZVectorEquations& eq, double convergence,
                kernels::ComputeEngine& engine, Communicator& comm, const Progress& progress)
      : response_(response), eq_(eq), convergence_(convergence), engine_(engine), comm_(comm), progress_(progress) {}
  ZVector fp64();
  ZVector refined_from_fp32();

 private:
  static constexpr int kMaxIterations = 100;
  // (Δ + A) z, keeping each set's C_oᵀ F_s(Z) C_o in occupied_block_.
  Sets apply(const Sets& z, Precision precision);
  // Root's largest residual element, so that all ranks stop together even if their sums differ in
  // the last bits (a set may have no occupied orbital).
  double largest(const Sets& r) const;
  Sets preconditioned(const Sets& r) const;
  // From x with residual r, until every element of r is below `target`; `occupied` gathers the
  // products' occupied blocks as x gathers its steps.
  void conjugate_gradients(Sets& x, Sets& r, Sets& occupied, double target, Precision precision);
  Sets residual_of(const Sets& z);

  FockResponse& response_;
  const ZVectorEquations& eq_;
  const double convergence_;
  kernels::ComputeEngine& engine_;
  Communicator& comm_;
  const Progress& progress_;
  Sets occupied_block_;
  int iterations_ = 0;
};

Sets ZVectorSolver::apply(const Sets& z, Precision precision) {
  Sets L, Az(z.size());
  for (std::size_t s = 0; s < z.size(); ++s) L.push_back(product(engine_, Op::none, Op::none, 1.0, eq_.C_vir[s], z[s]));
  const Sets F_occ = response_.of_changes(L, precision);  // F_s(Z) C_o
  occupied_block_.resize(z.size());
  for (std::size_t s = 0; s < z.size(); ++s) {
    occupied_block_[s] = product(engine_, Op::transpose, Op::none, 1.0, eq_.C_occ[s], F_occ[s]);
    Az[s] = eq_.delta[s].cwiseProduct(z[s]);
    gemm(engine_, Op::transpose, Op::none, 1.0, eq_.C_vir[s], F_occ[s], 1.0, Az[s]);
  }
  return Az;
}

double ZVectorSolver::largest(const Sets& r) const {
  double residual = 0.0;
  for (const Eigen::MatrixXd& m : r)
    if (m.size() > 0) residual = std::max(residual, m.cwiseAbs().maxCoeff());
  comm_.broadcast(&residual, 1, 0);
  return residual;
}

Sets ZVectorSolver::preconditioned(const Sets& r) const {
  Sets out;
  for (std::size_t s = 0; s < r.size(); ++s) out.push_back(r[s].cwiseQuotient(eq_.delta[s]));
  return out;
}

Sets ZVectorSolver::residual_of(const Sets& z) {
  Sets r = apply(z, Precision::fp64);
  for (std::size_t s = 0; s < z.size(); ++s) r[s] = eq_.b[s] - r[s];
  return r;
}

void ZVectorSolver::conjugate_gradients(Sets& x, Sets& r, Sets& occupied, double target, Precision precision) {
  Sets p = preconditioned(r);
  double rs = dot(r, p);
  for (;; ++iterations_) {
    const double residual = largest(r);
    report_z_vector_iteration(progress_, iterations_, residual);
    if (residual < target) return;
    if (iterations_ == kMaxIterations) throw ConvergenceError("the MP2 gradient's Z-vector equations did not converge");
    const Sets Ap = apply(p, precision);
    const double alpha = rs / dot(p, Ap);
    add_scaled(x, alpha, p);
    add_scaled(occupied, alpha, occupied_block_);
    add_scaled(r, -alpha, Ap);
    const Sets s = preconditioned(r);
    const double rs_next = dot(r, s);
    for (std::size_t set = 0; set < p.size(); ++set) p[set] = s[set] + (rs_next / rs) * p[set];
    rs = rs_next;
  }
}

ZVector ZVectorSolver::fp64() {
  ZVector out;
  out.z = preconditioned(eq_.b);
  Sets r = residual_of(out.z);
  out.occupied_response = occupied_block_;
  conjugate_gradients(out.z, r, out.occupied_response, convergence_, Precision::fp64);
  out.iterations = iterations_;
  return out;
}

// fp32 products err by about 1e-6 of their size: each round gains some four decades.
ZVector ZVectorSolver::refined_from_fp32() {
  constexpr double kFp32Reduction = 1e-4;
  ZVector out;
  Sets r = eq_.b;  // z = 0's
  for (const Eigen::MatrixXd& b : eq_.b) out.z.push_back(Eigen::MatrixXd::Zero(b.rows(), b.cols()));
  for (double residual = largest(r);;) {
    Sets correction, unused;
    for (std::size_t s = 0; s < r.size(); ++s) {
      correction.push_back(Eigen::MatrixXd::Zero(r[s].rows(), r[s].cols()));
      unused.push_back(Eigen::MatrixXd::Zero(eq_.C_occ[s].cols(), eq_.C_occ[s].cols()));
    }
    Sets inner = r;
    conjugate_gradients(correction, inner, unused, std::max(kFp32Reduction * residual, 0.5 * convergence_),
                        Precision::fp32);
    add_scaled(out.z, 1.0, correction);
    r = residual_of(out.z);
    out.occupied_response = occupied_block_;
    const double previous = residual;
    residual = largest(r);
    if (residual < convergence_) {
      report_z_vector_iteration(progress_, iterations_, residual);
      out.iterations = iterations_;
      return out;
    }
    if (residual > 0.1 * previous) break;  // the next iterations report it first
  }
  conjugate_gradients(out.z, r, out.occupied_response, convergence_, Precision::fp64);
  out.iterations = iterations_;
  return out;
}

}  // namespace

ZVector solve_z_vector(FockResponse& response, const ZVectorEquations& equations, double convergence,
                       bool fp32, kernels::ComputeEngine& engine, Communicator& comm, const Progress& progress) {
  ZVectorSolver solver(response, equations, convergence, engine, comm, progress);
  return fp32 ? solver.refined_from_fp32() : solver.fp64();
}

void report_z_vector_iteration(const Progress& progress, int iteration, double residual) {
  char line[96];
  std::snprintf(line, sizeof line, "MP2 gradient: Z-vector iter %3d  max |residual| = %.3e", iteration, residual);
  progress.message(line);
}

}  // namespace dfmp2
