// Density-fitted two-electron Fock terms from the fitted factors B^Q_μν over the "jk" auxiliary
// basis (src/integrals/fitted_tensor_store: the significant shell pairs μ ≥ ν, this rank's Q, in memory
// or partly on disk). J and K come from one pass over B per build (kernels/packed_jk):
//   J_μν = Σ_Q B^Q_μν γ_Q,  γ_Q = Σ_λσ B^Q_λσ D_λσ;   K_μν = Σ_Q (B^Q L)(B^Q R)ᵀ_μν,  D = L Rᵀ
// UHF's α and β share the pass: J from D_α + D_β, K for each. Over MPI each rank holds the
// factors of its block of Q and G is summed over ranks.
#pragma once

#include <memory>
#include <optional>
#include <span>

#include <libint2/basis.h>

#include "kernels/gpu/gpu_jk.hpp"
#include "kernels/gpu/stacked_response.hpp"
#include "kernels/occupied_response.hpp"
#include "kernels/packed_jk.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/scratch.hpp"
#include "src/integrals/fitted_tensor_store.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/fock_builder.hpp"

namespace dfmp2 {

// The DF-SCF's part of the memory plan: the tensor's layout on this rank, and what the set-up
// (the integrals stage) and the iterations (the SCF stage) hold at their peaks; `builder` is what
// the Fock builder itself holds from its set-up until it is freed (the iterations' part of it),
// which later stages that keep it (the MP2 gradient's) count.
struct DensityFittedScfPlan {
  FittedTensorPlan tensor;
  StagePlan setup, iterations, builder;
  std::size_t workspace_bytes = 0;  // the J/K builds', in builder
  std::optional<kernels::GpuJKPlan> gpu;  // the J/K builds run on the GPU, its memory so planned
  double gpu_gflops = 0.0;                // there: cuBLAS's rate probed at start-up, the builds' floor
};

// The plan for `ram_bytes` of memory (what the budget leaves this stage): the whole tensor in
// memory when it fits, else as many of this rank's rows as fit beside the batches and buffers and
// the rest on disk. Its RAM exceeds ram_bytes only when even no row in memory does not fit.
// spins: the densities of one J/K build (1: RHF; 2: UHF); scf_blocks:
// what the SCF holds beside the Fock builder. Collective.
DensityFittedScfPlan plan_density_fitted_scf(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                             const ShellPairs& pairs, std::size_t spins,
                                             const std::vector<PlannedBlock>& scf_blocks, std::size_t ram_bytes,
                                             Communicator& comm);

class DensityFittedFock : public FockBuilder {
 public:
  // Computes and fits this rank's factors as planned; the builds' planned workspace is drawn by
  // set_aside_workspace() or the first build, after the set-up's fitting metric is gone. With a
  // GPU plan the GPU's memory is taken first (GpuError before any integral when it cannot be).
  // progress(fraction) during the set-up.
  DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                    const DensityFittedScfPlan& plan, MemoryBudget& budget, const ScratchDirectory* scratch,
                    Communicator& comm, const std::function<void(double)>& progress);
  bool has_fp32_build() const override { return true; }
  // An OccupiedFockResponse of these factors.
  std::unique_ptr<FockResponse> occupied_response(std::vector<Eigen::MatrixXd> C_occ, MemoryBudget& budget,
                                                  bool fp32, const ResponseOnGpu* gpu) override;
  void set_aside_workspace() override;
  void release_gpu() override { gpu_jk_.reset(); }
  // Work of making the factors (integrals and fitting), apart from the builds' work().
  const StageWork& setup_work() const { return store_.setup_work(); }
  // This rank's factors B^Q themselves (the DF gradients' coefficients come from them).
  FittedTensorStore* fitted_factors_for_derivatives() override { return &store_; }

 protected:
  std::vector<Eigen::MatrixXd> two_electron_fock(std::span<const FactorPair> densities,
                                                 kernels::Precision precision) override;
  std::size_t functions() const override { return nbf_; }

 private:
  // J_s and K_s (this rank's Q; not summed over ranks) of the densities given by factors, counting
  // the work.
  void coulomb_exchange(std::span<const kernels::DensityFactors> densities, std::span<double* const> J,
                        std::span<double* const> K, kernels::Precision precision);
  Communicator& comm_;
  const kernels::BlockPackedLayout& layout_;
  std::size_t nbf_;
  // Made first: its fit on the GPU (when planned) has that GPU memory before the builder takes it.
  FittedTensorStore store_;
  std::unique_ptr<kernels::GpuJK> gpu_jk_;  // the builds on the GPU (else jk_'s on the CPU threads)
  double gpu_gflops_;
  kernels::PackedJK jk_;
  MemoryBudget& budget_;
  std::size_t workspace_bytes_;
  std::optional<MemoryBudget::Reservation> workspace_;
};

// FockResponse of a DensityFittedFock's factors (kernels/occupied_response: RHF's (4J − 2K)(½ Z) C_o
// of its one set, UHF's [J(Z_α + Z_β) − K(Z_s)] C_s of each spin's) for many changes L_s and fixed
// occupied orbitals C_s (a third of a general J/K build's work): B^Q C_s and C_sᵀ B^Q C_s of this
// rank's Q made once, in one pass over the tensor, into memory drawn from the budget; each product
// is summed over the ranks. With a GPU (kernels/gpu/stacked_response) the products run there in
// fp64, the kept products resident on it and copied into memory once.
class OccupiedFockResponse : public FockResponse {
 public:
  // factors: a DensityFittedFock's, stored in `layout` (its shell pairs'). C_occ: each set's
  // occupied orbitals, RHF's one or UHF's α and β. fp32: the kept products also in fp32, for fp32
  // products (not with a GPU). gpu: the products on it (or null: on the CPU threads).
  OccupiedFockResponse(FittedTensorStore& factors, const kernels::BlockPackedLayout& layout,
                       std::vector<Eigen::MatrixXd> C_occ, MemoryBudget& budget, bool fp32, const ResponseOnGpu* gpu,
                       Communicator& comm);
  // What it draws for `rows` rows Q and sets of `nocc` orbitals: the kept products and the
  // threads' buffers (with the products on a GPU: the kept products only).
  static std::size_t bytes(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t rows, bool fp32, bool gpu);
  // What one set's kept products alone draw (release_fitted_occupied_products), of them.
  static std::size_t kept_products_bytes(std::size_t nbf, std::size_t nocc, std::size_t rows);
  std::vector<Eigen::MatrixXd> of_changes(const std::vector<Eigen::MatrixXd>& L,
                                          kernels::Precision precision) override;
  std::vector<Eigen::MatrixXd> of_symmetric(const std::vector<Eigen::MatrixXd>& D) override;
  // The first set's kept B^Q C_o and C_oᵀ B^Q C_o: per row Q of this rank, nbf·nocc then nocc² doubles.
  LargeArray<double> release_fitted_occupied_products() override { return std::move(cache_.front()); }
  std::size_t gpu_uploaded_bytes() const override { return gpu_ ? gpu_->uploaded_bytes() : 0; }

 private:
  // The begun product over every row of the store, summed over the ranks, counting its flops (on
  // a GPU: its time at cuBLAS's rate).
  std::vector<Eigen::MatrixXd> product(double flops_fp64, double flops_fp32);
  std::vector<std::size_t> nocc() const;
  // Each set's C_s and caches, for the kernel.
  std::vector<kernels::OccupiedResponse::Set> response_sets();

  FittedTensorStore& factors_;
  const kernels::BlockPackedLayout& layout_;
  Communicator& comm_;
  std::vector<Eigen::MatrixXd> C_occ_;
  std::vector<LargeArray<double>> cache_;
  std::vector<LargeArray<float>> cache_fp32_;
  MemoryBudget::Reservation workspace_;
  std::optional<kernels::OccupiedResponse> cpu_;
  std::unique_ptr<kernels::StackedResponse> gpu_;
  double gpu_gflops_ = 0.0;
};

}  // namespace dfmp2
