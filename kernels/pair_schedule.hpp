// Pair scheduling layer: which (i ≥ j) pairs go together, how many threads, progress.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "kernels/energy_reduction.hpp"

namespace dfmp2::kernels::detail {

// A rectangle of occupied pairs, rows I = [i0, i1) × columns J = [j0, j1); in a triangular pair
// space only pairs with j ≤ i are needed (T_ji = T_ijᵀ).
struct PairBlock {
  std::size_t i0 = 0, i1 = 0, j0 = 0, j1 = 0;
  bool touches_diagonal() const { return j1 > i0; }  // holds pairs with j ≥ i
};


// The pair space's shape: nrows × ncols occupied orbitals; triangular (ncols == nrows, j ≤ i only)
// or a full rectangle of two disjoint blocks.
struct PairShape {
  std::size_t nrows = 0, ncols = 0;
  bool triangular = true;
  std::size_t cols_below(std::size_t i1) const { return triangular ? i1 : ncols; }  // j < this
};

// Every pair (i, j) of `block` for which needed(i, j), over the threads of the team this starts
// (OpenMP, dynamic), summing pair(i, j)'s energy (each pair's from the shared reduction,
// reduce_pair): the loop backend's pass over its T_flat, and the DF-MP2 gradient's amplitude
// blocks (src/gradient/mp2_amplitudes.cpp), whose pair(i, j) also keeps the pair's amplitudes.
template <typename Needed, typename Pair>
PairEnergy sum_pairs(const PairBlock& block, Needed needed, Pair pair) {
  double os = 0.0, ss = 0.0;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) reduction(+ : os, ss)
  for (std::size_t i = block.i0; i < block.i1; ++i)
    for (std::size_t j = block.j0; j < block.j1; ++j) {
      if (!needed(i, j)) continue;
      const PairEnergy e = pair(i, j);
      os += e.os;
      ss += e.ss;
    }
  return {os, ss};
}

// Loop backend: occupied row chunks I and, against them, columns 0..j1 (triangular: the trapezoid
// j < i1), sized so that T_flat, |I|·|J| pair tiles T_ij of pair_bytes each, fits in memory_bytes,
// and, when triangular, with at most max(nrows/16, least_rows) rows so that little work above the
// diagonal is done (the GPU asks for more rows: its GEMMs need a few thousand rows to fill it).
// A chunk has at least one row; if one row against all its columns still does not fit, its j range
// is split.
std::vector<PairBlock> plan_loop_chunks(const PairShape& shape, std::size_t pair_bytes, std::size_t memory_bytes,
                                        std::size_t least_rows = 1);
// The most pairs one of those chunks holds (its T_flat is that many T_ij tiles), without listing
// the chunks.
std::size_t loop_chunk_pairs(const PairShape& shape, std::size_t pair_bytes, std::size_t memory_bytes,
                             std::size_t least_rows = 1);

// Fused backend: square pair blocks of bs × bs occupied orbitals, bs chosen so that each GEMM has
// an edge of a few hundred (near-peak single-threaded BLAS) while leaving enough blocks for
// dynamic load balance over nthreads. Ordered most expensive first.
std::vector<PairBlock> plan_pair_blocks(const PairShape& shape, std::size_t nvir, int nthreads);
// Their edge bs (occupied orbitals per side).
std::size_t pair_block_edge(const PairShape& shape, std::size_t nvir, int nthreads);

// options.threads (0: OpenMP default) made current for the lifetime of the scope; OpenBLAS's
// OpenMP build follows omp_get_max_threads(), so this also sets the BLAS thread count.
class ThreadScope {
 public:
  explicit ThreadScope(int threads);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  int threads() const { return threads_; }

 private:
  int saved_, threads_;
};

// Rate-limited progress callback. Any thread may add finished work; only the thread that calls
// report() (the backends use OpenMP thread 0 or the serial caller) invokes the callback.
class ProgressCounter {
 public:
  ProgressCounter(const std::function<void(double)>& callback, std::size_t total);
  void add(std::size_t done);  // thread-safe
  void report();               // call from one thread only
  void finish();               // serial: reports 1.0

 private:
  const std::function<void(double)>& callback_;
  std::size_t total_, done_ = 0;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace dfmp2::kernels::detail
