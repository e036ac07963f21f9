// The DF-SCF's three-index tensor and its one owner: B^Q_μν = Σ_P M_QP (P|μν) over the
// significant shell pairs (src/integrals/shell_pairs), computed and fitted once in batches of
// orbital shell rows, and held for this rank's fitting functions Q in a RowStore — in memory
// what the memory plan allows, the rest in a scratch file — then read back in order, in large
// blocks with the next one read ahead, by every J/K build (as Psi4's DiskDFJK and PySCF's
// with_df keep their (Q|μν)).
//
// The metric mixes only P, so a batch of rows μ is fitted for every P at once. One process
// stores its batch's columns into its rows; over MPI, rank r computes batches of its own rows μ
// (parts of equal stored counts) and the ranks trade each round's batches so that every rank
// gets its block of Q for all of them.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include <libint2/basis.h>

#include "kernels/gpu/offload_engine.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/common/row_store.hpp"
#include "src/common/scratch.hpp"
#include "src/common/stage_work.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"

namespace dfmp2 {

// How the tensor is laid out and made on this rank: what the SCF's memory plan decided.
struct FittedTensorPlan {
  int ranks = 1;
  std::size_t naux = 0;           // fitting functions, all ranks
  Range q;                        // this rank's Q
  std::size_t stored = 0;         // stored elements of the pair layout: a row's length
  std::size_t ram_rows = 0;       // of this rank's rows, those in memory
  std::size_t batch_columns = 0;  // the most columns of (P|μν) one rank computes and fits at once
  std::size_t exchange_columns = 0;  // over MPI: the most columns one round trades (all ranks')
  std::size_t read_rows = 0;      // rows per read buffer (two of them), when some are on disk
  std::optional<kernels::GpuOffloadPlan> gpu_fit;  // the fit on a GPU (plan_fit_on_gpu), else on the CPU
  double gpu_gflops = 0.0;                         // there: cuBLAS's rate probed at start-up, the floor's
  // Whether the set-up makes the rows straight where they are kept: one process, every row in
  // memory, one batch — the tensor is computed and fitted in place.
  bool in_place() const;
  std::size_t disk_rows() const { return q.size() - ram_rows; }
};

// Over MPI, what the set-up's exchange holds beside its two layouts (bytes).
std::size_t setup_exchange_bytes(const FittedTensorPlan& plan);

// This rank's batches of shell rows: consecutive, each with at most batch_columns stored
// columns (at least one shell row).
std::vector<ShellRange> fitted_tensor_batches(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                              const FittedTensorPlan& plan, int rank, int ranks);

class FittedTensorStore {
 public:
  // Computes and fits this rank's rows (collective). progress(fraction) after each round.
  FittedTensorStore(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                    const FittedTensorPlan& plan, MemoryBudget& budget, const ScratchDirectory* scratch,
                    Communicator& comm, const std::function<void(double)>& progress);

  std::size_t rows() const { return store_.rows(); }
  Range q() const { return q_; }  // this rank's rows' fitting functions Q
  // This rank's rows B^Q in order, in blocks (see RowStore::for_each_block; first_row counts from
  // q().begin).
  void for_each_block(const RowStore::Visit& visit);
  // The integrals' and the fitting's work.
  const StageWork& setup_work() const { return work_; }

 private:
  // Computes and fits the rows into store_, the metric's memory held only meanwhile.
  void fill(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
            const FittedTensorPlan& plan, MemoryBudget& budget, Communicator& comm,
            const std::function<void(double)>& progress);

  Range q_;
  RowStore store_;
  LargeArray<double> read_buffers_;
  StageWork work_;
};

}  // namespace dfmp2
