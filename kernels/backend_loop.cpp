// loop: per occupied chunk I, T_flat = B_I · B_{0..i1}ᵀ as one multithreaded GEMM over only the
// pair blocks j < i1 (the trapezoid; about half of the full nocc² GEMM is skipped), then the
// SIMD strip-tiled reduction over T_flat in parallel. GEMM and reduction are timed apart, which
// makes the Amdahl split visible.
#include <omp.h>

#include <algorithm>
#include <chrono>

#include "kernels/backends.hpp"
#include "kernels/compute_engine.hpp"
#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels::detail {

template <typename Real>
EnergyResult loop_energy(const PairSpace<Real>& pairs, const EnergyOptions& options) {
  using clock = std::chrono::steady_clock;
  const std::size_t nvir_a = pairs.rows.nvir, nvir_b = pairs.cols.nvir, naux = pairs.rows.naux;
  const std::size_t ldb_rows = nvir_a * naux, ldb_cols = nvir_b * naux;
  ThreadScope scope(options.threads);
  const auto chunks = plan_loop_chunks({pairs.rows.nocc, pairs.cols.nocc, pairs.triangular},
                                       nvir_a * nvir_b * sizeof(Real), options.memory_bytes);
  std::size_t total_pairs = 0;
  for (const auto& c : chunks) total_pairs += pairs.pairs_needed(c.i0, c.i1, c.j0, c.j1);
  ProgressCounter progress(options.progress, total_pairs);

  std::size_t t_flat_elems = 0;
  for (const auto& c : chunks) t_flat_elems = std::max(t_flat_elems, (c.i1 - c.i0) * (c.j1 - c.j0) * nvir_a * nvir_b);
  const Workspace<Real> T_flat(options, t_flat_elems);

  EnergyResult r;
  double e_os = 0.0, e_ss = 0.0;
  for (const auto& c : chunks) {
    const std::size_t rows = c.i1 - c.i0, cols = c.j1 - c.j0;
    const std::size_t ldt = cols * nvir_b;  // T_flat[(i - i0)·nvir_a + a][(j - j0)·nvir_b + b] = T_ij,ab
    const auto t0 = clock::now();
    gemm_abt_row_major<Real>(*options.engine, Memory::host, rows * nvir_a, cols * nvir_b, naux,
                             pairs.rows.data + c.i0 * ldb_rows, naux, pairs.cols.data + c.j0 * ldb_cols, naux,
                             T_flat.data(), ldt);
    const auto t1 = clock::now();
    const Real* T = T_flat.data();
    const PairEnergy e = sum_pairs(
        c, [&](std::size_t i, std::size_t j) { return pairs.needed(i, j); },  // above the diagonal: T_ji = T_ijᵀ
        [&](std::size_t i, std::size_t j) {
          return pairs.energy(i, j, T + (i - c.i0) * nvir_a * ldt + (j - c.j0) * nvir_b, ldt);
        });
    e_os += e.os;
    e_ss += e.ss;
    const auto t2 = clock::now();
    r.gemm_seconds += std::chrono::duration<double>(t1 - t0).count();
    r.reduce_seconds += std::chrono::duration<double>(t2 - t1).count();
    progress.add(pairs.pairs_needed(c.i0, c.i1, c.j0, c.j1));
    progress.report();
  }
  progress.finish();

  r.e_os = e_os;
  r.e_ss = e_ss;
  r.backend = Backend::loop;
  r.workspace_bytes = t_flat_elems * sizeof(Real);
  return r;
}

DFMP2_INSTANTIATE_BACKEND(loop_energy)

}  // namespace dfmp2::kernels::detail
