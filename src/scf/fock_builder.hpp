// The SCF's two-electron Fock terms: G = 2J − K of a closed-shell density D = F Fᵀ (F: C_occ, or
// a factor of a guess density with fractional occupations), or UHF's G_α = J(D_α + D_β) − K(D_α)
// and G_β = J(D_α + D_β) − K(D_β) with D_σ = F_σ F_σᵀ: density-fitted (DensityFittedFock,
// df_fock.hpp) or from exact four-index integrals (ExactFock, exact_fock.hpp). Each builder
// counts its work for the SCF stage's floor.
#pragma once

#include <array>
#include <functional>

#include <Eigen/Core>

#include "kernels/mp2_energy.hpp"
#include "src/common/stage_work.hpp"

namespace dfmp2 {

class FittedTensorStore;

class FockBuilder {
 public:
  virtual ~FockBuilder() = default;
  // Collective over the ranks. fp32 asks for a cheaper build good to about 1e-7 relative (the
  // density-fitted exchange in single precision), for early SCF iterations, from builders that
  // have one (has_fp32_build()); the others build exactly.
  virtual Eigen::MatrixXd build(const Eigen::MatrixXd& density_factor, kernels::Precision precision) = 0;
  // UHF: {G_α, G_β} from the α and β density factors (either may have no columns), both spins
  // from one pass over the integrals. Collective; precision as for build.
  virtual std::array<Eigen::MatrixXd, 2> build_unrestricted(const Eigen::MatrixXd& alpha_factor,
                                                            const Eigen::MatrixXd& beta_factor,
                                                            kernels::Precision precision) = 0;
  virtual bool has_fp32_build() const { return false; }
  // Draws the builds' working memory from the budget (at the SCF stage's start, where the plans
  // count it); the first build draws it otherwise. Builders that hold theirs from the start: no-op.
  virtual void set_aside_workspace() {}
  // Work of the builds so far.
  const StageWork& work() const { return work_; }
  // The density-fitted factors B^Q its builds read (this rank's rows), for the gradients and the
  // Z-vector's products; null for builders without them (exact integrals).
  virtual FittedTensorStore* fitted_factors() { return nullptr; }
  // Told the share of each build done as it goes, from 0 at its start to 1 (builders whose builds
  // can take long: the DF-SCF's, streaming its tensor from disk).
  void set_progress(std::function<void(double)> progress) { progress_ = std::move(progress); }

 protected:
  StageWork work_;
  std::function<void(double)> progress_;
};

}  // namespace dfmp2
