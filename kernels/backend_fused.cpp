// fused: T is never materialised beyond one pair block per thread. Threads take (I ≥ J) pair
// blocks from a shared list (dynamic schedule), form T for the block with single-threaded GEMMs
// and reduce it at once, while it is still in cache, with the shared SIMD kernel. Each GEMM is
// large enough (edge ≳ 384) to run near peak, and the reduction overlaps other threads' GEMMs.
#include <omp.h>

#include <algorithm>

#include "kernels/backends.hpp"
#include "kernels/compute_engine.hpp"
#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels::detail {

template <typename Real>
EnergyResult fused_energy(const PairSpace<Real>& pairs, const EnergyOptions& options) {
  const std::size_t nvir_a = pairs.rows.nvir, nvir_b = pairs.cols.nvir, naux = pairs.rows.naux;
  const std::size_t ldb_rows = nvir_a * naux, ldb_cols = nvir_b * naux;
  const Real* B_rows = pairs.rows.data;
  const Real* B_cols = pairs.cols.data;
  ComputeEngine& engine = *options.engine;
  ThreadScope scope(options.threads);
  const auto blocks =
      plan_pair_blocks({pairs.rows.nocc, pairs.cols.nocc, pairs.triangular}, nvir_a, scope.threads());
  std::size_t tile_elems = 0;
  for (const auto& p : blocks) tile_elems = std::max(tile_elems, (p.i1 - p.i0) * (p.j1 - p.j0) * nvir_a * nvir_b);
  std::size_t total_pairs = 0;
  for (const auto& p : blocks) total_pairs += pairs.pairs_needed(p.i0, p.i1, p.j0, p.j1);
  ProgressCounter progress(options.progress, total_pairs);
  double e_os = 0.0, e_ss = 0.0;
  int team = 1;
  const Workspace<Real> tiles(options, std::size_t(scope.threads()) * tile_elems);

  // Inside the parallel region the CPU engine's OpenBLAS (OpenMP build) sees omp_in_parallel() and
  // runs each GEMM on the calling thread only: no oversubscription (checked by bench_energy's GEMM
  // probe).
#pragma omp parallel reduction(+ : e_os, e_ss)
  {
#pragma omp single
    team = omp_get_num_threads();
    Real* const tile = tiles.data() + std::size_t(omp_get_thread_num()) * tile_elems;
#pragma omp for schedule(dynamic, 1)
    for (std::size_t n = 0; n < blocks.size(); ++n) {
      const PairBlock& p = blocks[n];
      // tile[(i - i0)·nvir_a + a][(j - j0)·nvir_b + b] = T_ij,ab
      const std::size_t ldt = (p.j1 - p.j0) * nvir_b;
      if (!(pairs.triangular && p.touches_diagonal())) {  // every pair needed: one GEMM for the block
        gemm_abt_row_major<Real>(engine, Memory::host, (p.i1 - p.i0) * nvir_a, ldt, naux, B_rows + p.i0 * ldb_rows,
                                 naux, B_cols + p.j0 * ldb_cols, naux, tile, ldt);
      } else {  // diagonal block: row i against j0..i only (the trapezoid), skipping j > i
        for (std::size_t i = p.i0; i < p.i1; ++i)
          gemm_abt_row_major<Real>(engine, Memory::host, nvir_a, (std::min(p.j1, i + 1) - p.j0) * nvir_b, naux,
                                   B_rows + i * ldb_rows, naux, B_cols + p.j0 * ldb_cols, naux,
                                   tile + (i - p.i0) * nvir_a * ldt, ldt);
      }
      for (std::size_t i = p.i0; i < p.i1; ++i)
        for (std::size_t j = p.j0; j < std::min(p.j1, pairs.cols_needed(i)); ++j) {
          const PairEnergy e = pairs.energy(i, j, tile + (i - p.i0) * nvir_a * ldt + (j - p.j0) * nvir_b, ldt);
          e_os += e.os;
          e_ss += e.ss;
        }
      progress.add(pairs.pairs_needed(p.i0, p.i1, p.j0, p.j1));
      if (omp_get_thread_num() == 0) progress.report();
    }
  }
  progress.finish();

  EnergyResult r;
  r.e_os = e_os;
  r.e_ss = e_ss;
  r.backend = Backend::fused;
  r.workspace_bytes = std::size_t(team) * tile_elems * sizeof(Real);
  return r;
}

DFMP2_INSTANTIATE_BACKEND(fused_energy)

}  // namespace dfmp2::kernels::detail
