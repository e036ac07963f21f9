#include "src/integrals/density_fitting.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include <libint2.hpp>
#include <omp.h>

#include "kernels/cholesky.hpp"
#include "kernels/symmetric_eigen.hpp"
#include "src/common/matrix_view.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/shell_ranges.hpp"

namespace dfmp2 {

Eigen::MatrixXd coulomb_metric(const libint2::BasisSet& aux) {
  using libint2::BraKet;
  using libint2::Operator;
  const std::size_t nshell = aux.size();
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(aux.nbf(), aux.nbf());
  auto engines = engines_per_thread(coulomb_engine(aux.max_nprim(), aux.max_l(), BraKet::xs_xs));
  const libint2::Shell& unit = libint2::Shell::unit();
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    libint2::Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute2<Operator::coulomb, BraKet::xs_xs, 0>(aux[s1], unit, aux[s2], unit);
      if (buf[0] == nullptr) continue;
      const std::size_t n1 = aux[s1].size(), n2 = aux[s2].size();
      const std::size_t b1 = first_function(aux, s1), b2 = first_function(aux, s2);
      for (std::size_t f1 = 0; f1 < n1; ++f1)
        for (std::size_t f2 = 0; f2 < n2; ++f2) J(b1 + f1, b2 + f2) = J(b2 + f2, b1 + f1) = buf[0][f1 * n2 + f2];
    }
  }
  return J;
}

CoulombFitting::CoulombFitting(const Eigen::MatrixXd& metric, kernels::ComputeEngine& engine, double condition)
    : engine_(&engine) {
  // Cholesky, when it comes with a proof that no eigenvalue is below condition × λ_max:
  // λ_min = 1/‖L⁻¹‖₂² ≥ 1/‖L⁻¹‖_F² and λ_max ≤ ‖J‖_F. Far cheaper than the eigenvalues (dpotrf
  // and dtrtri run near the GEMM rate, dsyevd does not), and it settles every well-conditioned
  // metric; the others take the eigenvalue route below.
  Eigen::MatrixXd L = metric;
  if (kernels::cholesky_lower(L)) {
    Eigen::MatrixXd L_inverse = L;
    kernels::invert_lower(L_inverse);
    if (1.0 / L_inverse.squaredNorm() > condition * metric.norm()) {
      factor_ = std::move(L);
      return;
    }
  }
  const kernels::SymmetricEigen eig = kernels::symmetric_eigen(metric);
  const double cutoff = condition * eig.values.maxCoeff();
  cholesky_ = false;
  Eigen::VectorXd inv_sqrt(eig.values.size());
  for (Eigen::Index k = 0; k < eig.values.size(); ++k)
    inv_sqrt(k) = eig.values(k) > cutoff ? 1.0 / std::sqrt(eig.values(k)) : 0.0;
  factor_ = eig.vectors * inv_sqrt.asDiagonal() * eig.vectors.transpose();
}

namespace {

// fit_block(first, fitted) for blocks [first, first + block) of count columns: one after another
// (`in_turn`), or shared by the threads, each with its own `fitted` buffer.
template <typename FitBlock>
void fit_blocks(std::size_t count, std::size_t block, bool in_turn, const FitBlock& fit_block) {
  if (in_turn) {
    Eigen::MatrixXd fitted;
    for (std::size_t first = 0; first < count; first += block) fit_block(first, fitted);
    return;
  }
#pragma omp parallel
  {
    Eigen::MatrixXd fitted;
#pragma omp for schedule(dynamic)
    for (std::size_t first = 0; first < count; first += block) fit_block(first, fitted);
  }
}

}  // namespace

void CoulombFitting::fit_columns(double* data, std::size_t ncols, std::size_t stride, bool fit,
                                 bool transpose) const {
  // Blocks of x, with no temporary the size of A: each thread fits whole blocks with single-threaded
  // BLAS when there are blocks for every thread; else the blocks go one after another through the
  // threaded BLAS (a few orbitals' columns, one block, would keep one thread busy and the rest idle),
  // or through an engine that takes one call at a time.
  constexpr std::size_t kBlock = kOneCallRows;
  const Eigen::Index naux = factor_.rows();
  using Strided = Eigen::Map<Eigen::MatrixXd, 0, Eigen::OuterStride<>>;
  using kernels::Op;
  using kernels::Side;
  kernels::ComputeEngine& engine = *engine_;
  const auto fit_block = [&](std::size_t first, Eigen::MatrixXd& fitted) {
    const auto rows = static_cast<Eigen::Index>(std::min(kBlock, ncols - first));
    Strided A(data + first, rows, naux, Eigen::OuterStride<>(static_cast<Eigen::Index>(stride)));
    if (cholesky_) {  // M = L⁻¹
      if (fit) engine.solve_lower(Side::right, Op::transpose, 1.0, host_view(factor_), host_view(A));
      if (transpose) engine.solve_lower(Side::right, Op::none, 1.0, host_view(factor_), host_view(A));
    } else {  // M = J^-1/2, symmetric: A M once or twice
      fitted.resize(rows, naux);
      for (int times = int(fit) + int(transpose); times > 0; --times) {
        engine.gemm(Op::none, Op::none, 1.0, host_view(A), host_view(factor_), 0.0, host_view(fitted));
        A = fitted;
      }
    }
  };
  const std::size_t blocks = (ncols + kBlock - 1) / kBlock;
  const std::optional<kernels::OperandRelease> held = hold_factor();
  fit_blocks(ncols, kBlock,
             !engine.shared_by_threads() || blocks < static_cast<std::size_t>(omp_get_max_threads()), fit_block);
}

void CoulombFitting::apply_to_rows(double* data, std::size_t nrows) const {
  // Row-major [x][naux] is the column-major naux × nrows matrix A(P, x); B = M A. Threads fit
  // blocks of x, each with single-threaded BLAS; an engine that takes one call at a time fits
  // larger blocks one after another.
  const std::size_t block = engine_->shared_by_threads() ? 256 : kOneCallRows;
  const Eigen::Index naux = factor_.rows();
  kernels::ComputeEngine& engine = *engine_;
  const auto fit_block = [&](std::size_t first, Eigen::MatrixXd& fitted) {
    const auto cols = static_cast<Eigen::Index>(std::min(block, nrows - first));
    Eigen::Map<Eigen::MatrixXd> A(data + first * static_cast<std::size_t>(naux), naux, cols);
    if (cholesky_) {
      engine.solve_lower(kernels::Side::left, kernels::Op::none, 1.0, host_view(factor_), host_view(A));
    } else {
      fitted.resize(naux, cols);
      engine.gemm(kernels::Op::none, kernels::Op::none, 1.0, host_view(factor_), host_view(A), 0.0,
                  host_view(fitted));
      A = fitted;
    }
  };
  const std::optional<kernels::OperandRelease> held = hold_factor();
  fit_blocks(nrows, block, !engine.shared_by_threads(), fit_block);
}

std::optional<kernels::OperandRelease> CoulombFitting::hold_factor() const {
  if (engine_->shared_by_threads()) return std::nullopt;
  engine_->hold_operands({factor_.data(), static_cast<std::size_t>(factor_.size())});
  return std::optional<kernels::OperandRelease>(std::in_place, *engine_);
}

// A staging buffer for a call's columns, or fewer (the solves then go in tiles), beside the factor.
std::optional<kernels::GpuOffloadPlan> plan_fit_on_gpu(std::size_t naux, std::size_t device_bytes) {
  for (std::size_t columns = CoulombFitting::kOneCallRows; columns >= 64; columns /= 2) {
    try {
      const kernels::GpuOffloadPlan plan =
          kernels::plan_gpu_offload({}, naux * columns, naux * naux, device_bytes, "the fit");
      if (plan.held_elements > 0) return plan;
    } catch (const kernels::GpuError&) {  // too little GPU memory: the fit stays on the CPU threads
      break;
    }
  }
  return std::nullopt;
}

GpuFit::GpuFit(const kernels::GpuOffloadPlan& plan, const std::string& purpose)
    : device_(kernels::make_cuda_device(plan.device_bytes(), purpose)),
      engine_(std::make_unique<kernels::OffloadEngine>(plan, *device_, kernels::cpu_engine(),
                                                       std::span<const std::span<const double>>{})) {}

std::size_t CoulombFitting::peak_bytes(std::size_t naux) { return 5 * sizeof(double) * naux * naux; }

double CoulombFitting::flops(std::size_t ncols) const {
  const double n = static_cast<double>(factor_.rows());
  return (cholesky_ ? 1.0 : 2.0) * n * n * static_cast<double>(ncols);
}

}  // namespace dfmp2
