// The two-electron Fock terms of densities given by factor pairs, D_s = L_s R_sᵀ (as Psi4's JK takes
// C_left and C_right), one density per set of orbitals s:
//   G_s = w Σ_t J(D_t) − K(D_s),   w = 2 / sets, the electrons an orbital of a set holds,
// a closed shell's one set (D = F Fᵀ of C_occ or of a guess density's factor: G = 2J − K) or UHF's α
// and β (G_s = J(D_α + D_β) − K(D_s)). The SCF's densities are the symmetric case (right is left);
// the MP2 gradient's Z-vector (CPHF) asks for G_s(Z) C_s of changes Z_s = L_s C_sᵀ + C_s L_sᵀ, the
// pair ([L_s C_s], [C_s L_s]), with the occupied orbitals C_s fixed over many products: the
// builder's occupied_response() prepares that fixed side once (FockResponse). Density-fitted
// (DensityFittedFock, df_fock.hpp) or from exact four-index integrals (ExactFock, exact_fock.hpp).
// Each builder counts its work for the SCF stage's floor.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "kernels/precision.hpp"
#include "src/common/memory.hpp"
#include "src/common/stage_work.hpp"

namespace dfmp2 {

namespace kernels {
class JKDevice;
struct GpuResponsePlan;
}  // namespace kernels

class FittedTensorStore;

// A GPU for an occupied response's products: its device (memory as the plan lays out) and
// cuBLAS's rate probed at start-up, for the floor.
struct ResponseOnGpu {
  const kernels::GpuResponsePlan& plan;
  kernels::JKDevice& device;
  double gflops;
};

// D = L Rᵀ, L and R nbf × k; symmetric when right is the same matrix as left.
struct FactorPair {
  const Eigen::MatrixXd& left;
  const Eigen::MatrixXd& right;
  static FactorPair symmetric(const Eigen::MatrixXd& factor) { return {factor, factor}; }
  bool is_symmetric() const { return &left == &right; }
};

// Fock responses with each set's occupied orbitals C_s fixed (the MP2 gradient's Lagrangian and
// Z-vector), G_s as FockBuilder::fock combines J and K, projected on C_s: only F's occupied columns
// are ever used. Every product is collective and summed over the ranks.
class FockResponse {
 public:
  virtual ~FockResponse() = default;
  // G_s(Z) C_s of each set's change L_s (nbf × nocc_s), Z_s = L_s C_sᵀ + C_s L_sᵀ: RHF's
  // (4J − 2K)(½ Z) C_o, UHF's [J(Z_α + Z_β) − K(Z_s)] C_s. fp32 only from a response made with it.
  virtual std::vector<Eigen::MatrixXd> of_changes(const std::vector<Eigen::MatrixXd>& L,
                                                  kernels::Precision precision) = 0;
  // 2 G_s(D) C_s of each set's symmetric D_s (nbf × nbf): RHF's (4J − 2K)(D) C_o, UHF's
  // 2 [J(D_α + D_β) − K(D_s)] C_s.
  virtual std::vector<Eigen::MatrixXd> of_symmetric(const std::vector<Eigen::MatrixXd>& D) = 0;
  // The first set's B^Q C_o, each row Q followed by C_oᵀ B^Q C_o, of a density-fitted builder's
  // factors (this rank's rows), made for the products and handed over for the DF gradient's
  // three-index terms once the products are done (no product after); empty from other builders.
  virtual LargeArray<double> release_fitted_occupied_products() { return {}; }
  // Bytes its products copied to a GPU (0: none ran there).
  virtual std::size_t gpu_uploaded_bytes() const { return 0; }
  // Work of the products so far (with any preparation of the fixed side).
  const StageWork& work() const { return work_; }

 protected:
  StageWork work_;
};

class FockBuilder {
 public:
  virtual ~FockBuilder() = default;
  // Each set's G_s of `densities` (one or two pairs, nbf rows, a pair's factors as many columns;
  // either may have none). Collective: summed over the ranks. fp32 asks for a cheaper build good to
  // about 1e-7 relative (the density-fitted exchange in single precision), for early SCF
  // iterations, from builders that have one (has_fp32_build()); the others build exactly.
  std::vector<Eigen::MatrixXd> fock(std::span<const FactorPair> densities, kernels::Precision precision);
  virtual bool has_fp32_build() const { return false; }
  // Repeated products with these occupied orbitals C_s fixed (one set or two, as fock's densities),
  // drawing what it keeps from `budget`; fp32: fp32 products allowed; gpu (or null): a GPU the
  // products may run on (in fp64). This default makes each product a build of the pairs
  // ([L_s C_s], [C_s L_s]) (or (D_s, 1)) and ignores the GPU; builders with a cheaper way override
  // it. The builder must outlive it.
  virtual std::unique_ptr<FockResponse> occupied_response(std::vector<Eigen::MatrixXd> C_occ, MemoryBudget& budget,
                                                          bool fp32, const ResponseOnGpu* gpu);
  // Draws the builds' working memory from the budget (at the SCF stage's start, where the plans
  // count it); the first build draws it otherwise. Builders that hold theirs from the start: no-op.
  virtual void set_aside_workspace() {}
  // Gives back the GPU memory its builds hold (after the SCF, for the stages after it); later
  // builds run on the CPU threads. Builders without a GPU: no-op.
  virtual void release_gpu() {}
  // Work of the builds so far.
  const StageWork& work() const { return work_; }
  // The density-fitted factors B^Q its builds read (this rank's rows), for the DF gradients'
  // three-index derivative terms; null for builders without them (exact integrals).
  virtual FittedTensorStore* fitted_factors_for_derivatives() { return nullptr; }
  // Told the share of each build done as it goes, from 0 at its start to 1 (builders whose builds
  // can take long: the DF-SCF's, streaming its tensor from disk).
  void set_progress(std::function<void(double)> progress) { progress_ = std::move(progress); }

 protected:
  // fock() of densities already checked.
  virtual std::vector<Eigen::MatrixXd> two_electron_fock(std::span<const FactorPair> densities,
                                                         kernels::Precision precision) = 0;
  // The functions the builds are over.
  virtual std::size_t functions() const = 0;
  StageWork work_;
  std::function<void(double)> progress_;
};

}  // namespace dfmp2
