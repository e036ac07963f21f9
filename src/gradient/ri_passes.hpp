// What the DF-MP2 gradient densities (mp2_relaxed_density.hpp) do in the RI set: passes over
// (P|μν), one batch of RI shells at a time, with its AO integrals computed anew in each pass, and
// the planning of those batches.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/compute_engine.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/row_store.hpp"
#include "src/common/stage_work.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/mp2/df_transform.hpp"

namespace dfmp2 {

// The RI metric (P|Q), its fit and V_PQ, held through the densities.
std::size_t ri_fit_bytes(std::size_t naux);

// What the densities hold at the peak of their passes over the RI batches, of their loop over the
// amplitudes and of their Z-vector (when it holds more than the Fock builder's own), for one batch
// size.
struct RiGradientPhases {
  StagePlan pass, amplitudes, z_vector;
  // The contraction with the derivative integrals: the JK set's separable term, then the RI set's
  // three-centre term.
  StagePlan separable_terms, three_centre_terms;
  // Both, beside `held` (Γ_ia^P's blocks, RHF's kept occupied products), as p plans them: its
  // jk_terms with its jk_layout, and the RI set's batch of Γ^P squares (squares_batch_bytes) for
  // sizes' nbf and naux.
  void add_contraction(const std::vector<PlannedBlock>& held, const Mp2GradientSizes& sizes, const Mp2GradientPlan& p);
  // The largest phase's blocks in memory, and the blocks on disk (with what is read back) of the
  // phase with most there.
  StagePlan peak() const;
};

// A pass's blocks: the fit, `held` (the three-index arrays kept through it), a batch's (P|μν) (all
// of them when keeps_ao: KeptRiIntegrals) and every set's (P|ia), every thread's buffers (the
// (P|ia) transform's or the Lagrangian's products', the larger). Only the sets' naux, nbf, nmo,
// nocc, nfrozen and stored count.
StagePlan ri_pass_plan(const std::vector<Mp2GradientSizes>& sets, std::size_t batch_functions,
                       const std::vector<PlannedBlock>& held, bool keeps_ao = false);
// What KeptRiIntegrals holds, as the plans name it.
inline constexpr const char* kKeptRiIntegrals = "the RI integrals (P|μν), kept from the first pass to the second";

// RI functions per batch: as many as fit in ram_bytes beside the rest of the pass (phases(n) is
// what a batch of n functions makes the densities hold), at least the largest shell, and never
// more than the amplitudes' phase holds anyway: larger batches only save calls (the integrals' and
// the transform's work is the same), and their pages would stay in the budget's pool beside the
// derivative terms' arrays; nor more than each of `ranks` MPI ranks' share of the naux, so that
// every rank has a batch.
std::size_t ri_batch_functions(const libint2::BasisSet& ri_aux, const std::vector<Mp2GradientSizes>& sets,
                               std::size_t ram_bytes, int ranks,
                               const std::function<RiGradientPhases(std::size_t batch_functions)>& phases,
                               bool keeps_ao = false);

// V_PQ = ½ (V + Vᵀ), V = Σ_ia c_ia^P Γ_ia^Q = Mᵀ V_inner M (c = Mᵀ B, Γ = Mᵀ Γ', Mᵀ M = J⁻¹
// the fit's), from each rank's share of V_inner = Σ B Γ'ᵀ (row-major, summed over the ranks
// here). Adds its flops to `work`.
Eigen::MatrixXd metric_lagrangian(const CoulombFitting& fit,
                                  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> V_inner,
                                  Communicator& comm, StageWork& work);

// B = M (P|ia) in place: at once when every row is in memory, else by blocks of columns of every
// row P, as wide as `buffer` holds.
void fit_in_place(const CoulombFitting& fit, RowStore& B, std::span<double> buffer);

// Each of the two buffers the rows on disk of B_ia^P (rows P of `row_elements`) are read into,
// elements: a whole number of rows, a quarter of the `disk_rows` but at most about 128 MiB (a
// block's rows are the inner dimension of the GEMMs that read it), and at least the fit's one
// column of every row P.
std::size_t ri_read_buffer_elements(std::size_t naux, std::size_t row_elements, std::size_t disk_rows);

// The JK set's layout in the room a plan leaves its contraction: as many rows of its arrays in
// memory as peak(layout) ≤ ram_bytes allows, then blocks as large as it allows (up to
// kLargestSeparableBlock, else the least).
SeparableTermLayout separable_layout_that_fits(std::size_t naux, std::size_t ram_bytes,
                                               const std::function<std::size_t(const SeparableTermLayout&)>& peak);

// The plan's note when some rows of B and Γ or of the JK set's c^P C are on disk: how many of each
// are in memory (empty when all are).
std::string rows_in_memory_note(const Mp2GradientPlan& p);

// The most rows P of B and Γ (of naux) that can stay in memory: the largest count whose phases'
// peak(rows) fits in ram_bytes (0 if none does; peak grows with the rows).
std::size_t most_ram_rows(std::size_t naux, std::size_t ram_bytes,
                          const std::function<std::size_t(std::size_t rows)>& peak);

// This rank's (P|μν), made by the first pass over the batches and read by the later ones instead of
// computed anew: sizes.ao_batch(its functions) doubles, held between the passes when the plan has
// room (an RI pass's integrals take about as long as its transforms).
struct KeptRiIntegrals {
  LargeArray<double> rows;  // row P: its stored μν, this rank's batches in order
  bool made = false;
};

// The passes over (P|pq) of one set of orbital and RI bases, with the batches of a plan, each rank
// its share of the batches.
struct RiPasses {
  const libint2::BasisSet& obs;
  const libint2::BasisSet& ri_aux;
  const ShellPairs& pairs;
  const Eigen::MatrixXd& metric;  // (P|Q), for the integrals' screening
  const Mp2GradientSizes& sizes;
  std::size_t batch_functions;
  MemoryBudget& budget;
  Communicator& comm;
  kernels::ComputeEngine& engine;             // of the Lagrangian's products, on host memory
  std::function<void(double done)> progress;  // optional: the share of this rank's batches done, after each
  KeptRiIntegrals* kept = nullptr;            // optional: the integrals kept between the passes

  // Row P of each set's `ia` = (P|ia) (row-major [i][a]) for every RI function P of this rank's
  // batches, by the DF transform's OccupiedVirtualTransform, one batch of RI shells at a time: each
  // batch's integrals serve every set, computed anew in each pass unless `kept` holds them. Adds
  // the integrals' libint2 time and the transform's flops to `work`.
  void occupied_virtual(const std::vector<TransformSpin>& sets, std::vector<RowStore>& ia, StageWork& work) const;

  // Every rank's batches of RI shells, in order: batch b is rank round_robin_owner(b)'s.
  std::vector<ShellRange> batches() const;
  // Each batch's rows of `store` (rows P, written by the rank that made the batch) to every other
  // rank's store (broadcast_rows). Collective.
  void share_rows(RowStore& store, std::span<double> buffer) const;

  // S_s = Σ_P (P|μν) R_s(P) (nbf × columns[s]) over the RI functions P of this rank's batches (not
  // summed over the ranks), likewise: right(s, P, R) writes R_s(P) into R (nbf × columns[s],
  // column-major; called from several threads at once) in right_flops[s] flops. The Lagrangian's
  // terms with Γ back-transformed into R: 2 nbf²·columns per P, where transforming (P|pq) first
  // costs 2 nbf²·q + 2 nbf·p·q. Every columns[s] at most sizes.transformed().
  std::vector<Eigen::MatrixXd> sum_of_products(const std::vector<Eigen::Index>& columns,
                                               const std::function<void(std::size_t s, Eigen::Index P, double* R)>& right,
                                               const std::vector<double>& right_flops, StageWork& work) const;

 private:
  // use(first, count, ao) for each of this rank's batches, ao its (P|μν) block-packed row by row
  // (from `kept` once made); progress after each.
  void for_each_batch(const std::function<void(std::size_t first, std::size_t count, const double* ao)>& use,
                      StageWork& work) const;
};

}  // namespace dfmp2
