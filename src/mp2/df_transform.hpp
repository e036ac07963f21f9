// The DF-MP2 tensor B_ia^P = Σ_Q M_PQ (Q|ia), (Q|ia) = Σ_μν C_μi (Q|μν) C_νa, for one spin or
// UHF's two in one pass over the integrals.
//
// Pass over the integrals: this rank's auxiliary shells in batches of block-packed (Q|μν) sized
// from the memory plan; threads transform a few Q at a time (one unpack, one SYMM with every
// spin's occupied orbitals, one GEMM per spin). Then the fit, which mixes Q for each ia:
// - in memory: (Q|ia) is written straight into B's layout [i][a][Q] (over MPI into an exchange
//   array [ia][this rank's Q], traded so that each rank holds every Q for its i), and fitted in
//   place;
// - through disk: (Q|ia) rows are written to a scratch file, then read back in blocks of occupied
//   orbitals (over MPI, each round trading every rank's block), fitted, and written to B — in
//   memory, or on disk for an energy step that reads it in blocks.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/block_packed.hpp"
#include "kernels/compute_engine.hpp"
#include "kernels/gpu/offload_engine.hpp"
#include "kernels/gpu/stacked_transform.hpp"

#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/scratch.hpp"
#include "src/common/stage_work.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/mp2/bia_tensor.hpp"

namespace dfmp2 {

// One spin's active orbitals: all ranks' occupied ones.
struct TransformSpin {
  Eigen::MatrixXd C_occ;  // nbf × nocc
  Eigen::MatrixXd C_vir;  // nbf × nvir
  Eigen::VectorXd eps_occ, eps_vir;
};

struct TransformSizes {
  std::size_t nocc = 0, nvir = 0;  // active occupied (all ranks), virtual
};

// What the memory plan decided for the transform on this rank.
struct DFTransformPlan {
  int ranks = 1, rank = 0;
  std::size_t nbf = 0, naux = 0, stored = 0;
  std::vector<TransformSizes> spins;
  ShellRange shells;                // this rank's auxiliary shells
  Range q;                          // their functions
  std::size_t batch_functions = 0;  // the most (Q|μν) rows computed at once
  std::size_t chunk_rows = 0;       // (Q|ia) rows transformed into one buffer before they are placed
  bool through_disk = false;        // (Q|ia) via a scratch file, fitted in blocks of occupied orbitals
  bool b_in_memory = true;          // else B_ia^P is written to disk for the energy step
  std::size_t fit_occ = 0;          // through disk: occupied orbitals per fitted block
  std::optional<kernels::GpuTransformPlan> gpu;  // the pass's products on the GPU, its memory so planned
  std::optional<kernels::GpuOffloadPlan> gpu_fit;  // the fit on the GPU after the pass (plan_fit_on_gpu in
                                                   // src/integrals/density_fitting.hpp)
  double gpu_gflops = 0.0;                       // there: cuBLAS's rate probed at start-up, the floor's
  StagePlan stage;

  Range occ_of(std::size_t spin, int rank) const { return share_of(spins[spin].nocc, rank, ranks); }
};

// The plan for `ram_bytes` of memory: in memory when (Q|ia) and B fit, else through disk; B in
// memory when b_in_memory. Collective.
DFTransformPlan plan_df_transform(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                  const ShellPairs& pairs, const std::vector<TransformSizes>& spins,
                                  bool b_in_memory, std::size_t ram_bytes, Communicator& comm);

// (Q|ia) = Σ_μν C_μi (Q|μν) C_νa of every spin at once, for rows Q of block-packed (Q|μν): per Q
// one unpack, one SYMM with every spin's occupied orbitals side by side, one GEMM per spin. A row
// holds row_elements(), spin s's row-major [i][a] from offset(s). Threads take the rows, each with
// its own buffers (thread_buffer_bytes, for the caller to reserve). The DF transform's pass and the
// MP2 gradient's (P|ia) (src/gradient/ri_passes.hpp) both run it; only C_occ and C_vir are read.
// The products run on `engine`, one on host memory; given a GPU plan, on the GPU instead
// (kernels/gpu/stacked_transform.hpp), its memory taken at construction (GpuError when it cannot
// be), the rows copied there and back.
class OccupiedVirtualTransform {
 public:
  OccupiedVirtualTransform(const kernels::BlockPackedLayout& layout, const std::vector<TransformSpin>& spins,
                           kernels::ComputeEngine& engine = kernels::cpu_engine(),
                           const kernels::GpuTransformPlan* gpu = nullptr);
  // Rows [nq][row_elements()] of `out` from nq rows of (Q|μν) at `ao` (layout.size() each).
  void operator()(const double* ao, std::size_t nq, double* out);
  std::size_t row_elements() const { return nov_all_; }
  std::size_t offset(std::size_t spin) const { return ov_offset_[spin]; }
  double flops_per_row() const;
  // Every thread's buffers: a square for one unpacked (Q|μν) and X = (Q|μν) C_occ of every spin.
  static std::size_t thread_buffer_bytes(std::size_t nbf, std::size_t nocc_all);

 private:
  const kernels::BlockPackedLayout& layout_;
  const std::vector<TransformSpin>& spins_;
  kernels::ComputeEngine& engine_;
  Eigen::MatrixXd C_occ_all_;  // every spin's occupied orbitals side by side
  std::vector<std::size_t> occ_offset_, ov_offset_;
  std::size_t nov_all_ = 0;
  std::vector<std::vector<double>> square_, X_;  // per thread (on the CPU)
  std::unique_ptr<kernels::JKDevice> device_;    // on the GPU
  std::unique_ptr<kernels::StackedTransform> gpu_;
};

struct DFTransformInput {
  const libint2::BasisSet& obs;
  const libint2::BasisSet& aux;
  const ShellPairs& pairs;
  const std::vector<TransformSpin>& spins;
};

// Each spin's B in the layout the energy kernels take, row-major [i][a][P], for this rank's share
// of i (collective). progress(fraction of the work) as it goes; may be empty.
std::vector<BiaTensor> build_bia_tensors(const DFTransformInput& in, const DFTransformPlan& plan, MemoryBudget& budget,
                                       const ScratchDirectory* scratch, const std::function<void(double)>& progress,
                                       Communicator& comm, StageWork& work);

}  // namespace dfmp2
