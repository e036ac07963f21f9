// Density fitting in the Coulomb metric: turns three-index integrals (P|x) into fitted factors
// B^Q_x = Σ_P M_QP (P|x) with Mᵀ M = J⁻¹, J_PQ = (P|Q), so that (x|y) ≈ Σ_Q B^Q_x B^Q_y.
// M = J^-1/2 with eigenvalues below `condition` × λ_max dropped, as Psi4 does (its default
// fitting condition is 1e-10); when none can be below, the cheaper M = L⁻¹ (J = L Lᵀ) gives the
// same fit.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/offload_engine.hpp"

namespace dfmp2 {

// (P|Q) over auxiliary functions.
Eigen::MatrixXd coulomb_metric(const libint2::BasisSet& aux);

class CoulombFitting {
 public:
  // engine: of the fit's products (on host memory, where the data it fits is). One that threads
  // may not share (an OffloadEngine: the DF transform's fit on a GPU) gets one call at a time,
  // with the factor held on it while a fit runs (its held operands released after).
  explicit CoulombFitting(const Eigen::MatrixXd& metric, kernels::ComputeEngine& engine = kernels::cpu_engine(),
                          double condition = 1e-10);

  // In place on row-major [naux][ncols] data, rows `stride` apart (0: ncols): row P becomes B^P.
  void apply(double* data, std::size_t ncols, std::size_t stride = 0) const {
    fit_columns(data, ncols, stride > 0 ? stride : ncols, true, false);
  }
  // The same, row P becoming Σ_Q (Mᵀ M)_PQ (Q|x): J⁻¹ (P|x) with the fit's own inverse (its
  // dropped eigenvalues dropped), the coefficients the DF gradients contract.
  void apply_inverse(double* data, std::size_t ncols) const { fit_columns(data, ncols, ncols, true, true); }
  // The same, row P becoming Σ_Q M_QP x_Q: from fitted rows B^Q, those coefficients, Mᵀ B = J⁻¹ (P|x).
  void apply_transpose(double* data, std::size_t ncols) const { fit_columns(data, ncols, ncols, false, true); }
  // In place on row-major [nrows][naux] data: row x becomes B^Q_x for every Q.
  void apply_to_rows(double* data, std::size_t nrows) const;
  // Columns x of the data (apply's, apply_to_rows' rows) one call of an engine threads may not
  // share takes.
  static constexpr std::size_t kOneCallRows = 2048;
  // The fit's products from now on on `engine` (as the constructor's).
  void use_engine(kernels::ComputeEngine& engine) { engine_ = &engine; }
  // Floating-point work of apply.
  double flops(std::size_t ncols) const;
  // What making and holding the fit takes for naux functions: the metric, its eigenvectors and
  // LAPACK's workspace, the factor (bytes).
  static std::size_t peak_bytes(std::size_t naux);

 private:
  // On the column-major ncols × naux A the row-major data is: A Mᵀ when `fit`, then times M when
  // `transpose`.
  void fit_columns(double* data, std::size_t ncols, std::size_t stride, bool fit, bool transpose) const;
  // On an engine threads may not share: the factor held there until the release goes.
  std::optional<kernels::OperandRelease> hold_factor() const;

  kernels::ComputeEngine* engine_;
  Eigen::MatrixXd factor_;  // lower Cholesky factor L, or J^-1/2
  bool cholesky_ = true;
};

// A fit of naux functions on a GPU of `device_bytes` (a CoulombFitting on an OffloadEngine): the
// factor held there while a fit runs, CoulombFitting::kOneCallRows columns of the data a call,
// copied through the staging buffer (in tiles of as few as 64 when the memory is short), solved
// (or multiplied) there and copied back. None where the factor and 64 columns do not fit: the fit
// stays on the CPU threads.
std::optional<kernels::GpuOffloadPlan> plan_fit_on_gpu(std::size_t naux, std::size_t device_bytes);

// The GPU memory and engine of such a fit while it lives (GpuError when the memory cannot be had).
class GpuFit {
 public:
  GpuFit(const kernels::GpuOffloadPlan& plan, const std::string& purpose);
  kernels::ComputeEngine& engine() { return *engine_; }

 private:
  std::unique_ptr<kernels::JKDevice> device_;
  std::unique_ptr<kernels::OffloadEngine> engine_;
};

}  // namespace dfmp2
