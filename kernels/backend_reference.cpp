// reference: one GEMM per needed pair (i ≥ j, or every pair of a rectangular pair space), reduced
// by a plain scalar loop straight from the formula.
// The correctness reference and the Amdahl baseline; deliberately simple.
#include <omp.h>

#include <chrono>

#include "kernels/backends.hpp"
#include "kernels/compute_engine.hpp"
#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels::detail {

template <typename Real>
EnergyResult reference_energy(const PairSpace<Real>& pairs, const EnergyOptions& options) {
  const std::size_t nrows = pairs.rows.nocc, nvir_a = pairs.rows.nvir, nvir_b = pairs.cols.nvir;
  const std::size_t naux = pairs.rows.naux;
  // B_i starts at rows.data + i * ldb_rows, B_j at cols.data + j * ldb_cols.
  const std::size_t ldb_rows = nvir_a * naux, ldb_cols = nvir_b * naux;
  ThreadScope scope(options.threads);
  std::size_t npairs = 0;
  for (std::size_t i = 0; i < nrows; ++i) npairs += pairs.cols_needed(i);
  ProgressCounter progress(options.progress, npairs);
  double e_os = 0.0, e_ss = 0.0;
  // Thread-seconds in GEMMs and in the loop, to split the wall time between them (Amdahl).
  double gemm_thread_seconds = 0.0, reduce_thread_seconds = 0.0;
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();

  const Workspace<Real> tiles(options, std::size_t(scope.threads()) * nvir_a * nvir_b);
#pragma omp parallel reduction(+ : e_os, e_ss, gemm_thread_seconds, reduce_thread_seconds)
  {
    Real* const T = tiles.data() + std::size_t(omp_get_thread_num()) * nvir_a * nvir_b;  // T_ij, a × b
#pragma omp for schedule(dynamic, 1)
    for (std::size_t i = 0; i < nrows; ++i) {
      for (std::size_t j = 0; j < pairs.cols_needed(i); ++j) {
        const auto t0 = clock::now();
        gemm_abt_row_major<Real>(*options.engine, Memory::host, nvir_a, nvir_b, naux, pairs.rows.data + i * ldb_rows,
                                 naux, pairs.cols.data + j * ldb_cols, naux, T, nvir_b);
        const auto t1 = clock::now();
        double os = 0.0, ss = 0.0;
        for (std::size_t a = 0; a < nvir_a; ++a)
          for (std::size_t b = 0; b < nvir_b; ++b) {
            const double t_ab = T[a * nvir_b + b];
            const double delta = pairs.eps_rows[i] + pairs.eps_cols[j] - pairs.eps_vir_rows[a] - pairs.eps_vir_cols[b];
            os += t_ab * t_ab / delta;
            if (pairs.same_spin) ss += t_ab * (t_ab - T[b * nvir_b + a]) / delta;  // T_ba: one set of virtuals
          }
        e_os += pairs.weight(i, j) * os;
        e_ss += pairs.weight(i, j) * ss;
        gemm_thread_seconds += std::chrono::duration<double>(t1 - t0).count();
        reduce_thread_seconds += std::chrono::duration<double>(clock::now() - t1).count();
      }
      progress.add(pairs.cols_needed(i));
      if (omp_get_thread_num() == 0) progress.report();
    }
  }
  progress.finish();
  const double wall = std::chrono::duration<double>(clock::now() - start).count();
  const double busy = gemm_thread_seconds + reduce_thread_seconds;

  EnergyResult r;
  if (busy > 0.0) {
    r.gemm_seconds = wall * gemm_thread_seconds / busy;
    r.reduce_seconds = wall * reduce_thread_seconds / busy;
  }
  r.e_os = e_os;
  r.e_ss = e_ss;
  r.backend = Backend::reference;
  r.workspace_bytes = std::size_t(scope.threads()) * nvir_a * nvir_b * sizeof(Real);
  return r;
}

DFMP2_INSTANTIATE_BACKEND(reference_energy)

}  // namespace dfmp2::kernels::detail
