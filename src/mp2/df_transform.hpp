// The DF-MP2 tensor B_ia^P = Σ_Q M_PQ (Q|ia), (Q|ia) = Σ_μν C_μi (Q|μν) C_νa, from packed
// (Q|μν) (unique pairs μ ≥ ν) in batches of auxiliary shells sized from the memory budget.
// Threads transform a few Q at a time each (unpack, then two GEMMs), so the stage scales with
// threads like its GEMMs.
#pragma once

#include <functional>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/common/stage_work.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/mp2/df_tensor.hpp"

namespace dfmp2 {

struct DFTransformInput {
  const libint2::BasisSet& obs;
  const libint2::BasisSet& aux;
  const ShellPairs& pairs;
  const Eigen::MatrixXd& C_occ;  // active occupied orbitals, nbf × nocc
  const Eigen::MatrixXd& C_vir;  // nbf × nvir
  const Eigen::VectorXd& eps_occ;
  const Eigen::VectorXd& eps_vir;
};

struct DFTransformStats {
  StageWork work;
  std::size_t batches = 0;  // of auxiliary shells: 1 unless the memory budget binds
};

// B in the layout the energy kernels take, row-major [i][a][P]; over MPI, B for this rank's
// share of i (collective). progress(fraction) after each batch; may be empty. Throws InputError
// when even one auxiliary shell at a time does not fit.
DFTensor build_df_tensor(const DFTransformInput& in, MemoryBudget& budget,
                         const std::function<void(double)>& progress, Communicator& comm, DFTransformStats& stats);

// The least this rank must hold at once (one auxiliary shell's batch at a time), from the sizes
// alone: for the run's up-front memory check. nocc: active occupied orbitals.
std::size_t df_transform_peak_bytes(const libint2::BasisSet& obs, const libint2::BasisSet& aux, std::size_t nocc,
                                    std::size_t nvir, const Communicator& comm);

}  // namespace dfmp2
