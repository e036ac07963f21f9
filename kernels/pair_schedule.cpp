#include "kernels/pair_schedule.hpp"

#include <omp.h>

#include <algorithm>

namespace dfmp2::kernels::detail {

namespace {

// T_ij pairs the loop backend's budget holds, and the rows a triangular chunk may have: a
// triangular chunk's GEMM also forms the pairs j > i of its diagonal square, rows²/2 of them: at
// most 1/kMinChunks of the needed nrows²/2 pairs when chunks have ≤ nrows/kMinChunks rows.
std::size_t budget_pairs(std::size_t pair_bytes, std::size_t memory_bytes) {
  return std::max<std::size_t>(1, memory_bytes / std::max<std::size_t>(1, pair_bytes));
}
std::size_t max_chunk_rows(const PairShape& shape, std::size_t least_rows) {
  constexpr std::size_t kMinChunks = 16;
  return shape.triangular ? std::max<std::size_t>({1, shape.nrows / kMinChunks, least_rows}) : shape.nrows;
}

}  // namespace

std::vector<PairBlock> plan_loop_chunks(const PairShape& shape, std::size_t pair_bytes, std::size_t memory_bytes,
                                        std::size_t least_rows) {
  std::vector<PairBlock> chunks;
  const std::size_t budget = budget_pairs(pair_bytes, memory_bytes), max_rows = max_chunk_rows(shape, least_rows);
  for (std::size_t i0 = 0; i0 < shape.nrows;) {
    std::size_t rows = 1;  // largest row count whose pair blocks fit the budget
    while (i0 + rows < shape.nrows && rows < max_rows && (rows + 1) * shape.cols_below(i0 + rows + 1) <= budget)
      ++rows;
    const std::size_t i1 = i0 + rows, j1 = shape.cols_below(i1);
    if (rows * j1 <= budget) {
      chunks.push_back({i0, i1, 0, j1});
    } else {  // a single row i0 against all its columns is over budget: split j
      for (std::size_t j0 = 0; j0 < j1; j0 += budget) chunks.push_back({i0, i1, j0, std::min(j1, j0 + budget)});
    }
    i0 = i1;
  }
  return chunks;
}

std::size_t loop_chunk_pairs(const PairShape& shape, std::size_t pair_bytes, std::size_t memory_bytes,
                             std::size_t least_rows) {
  return std::min(budget_pairs(pair_bytes, memory_bytes),
                  max_chunk_rows(shape, least_rows) * std::max<std::size_t>(1, shape.ncols));
}

std::size_t pair_block_edge(const PairShape& shape, std::size_t nvir, int nthreads) {
  // OpenBLAS single-threaded DGEMM/SGEMM is near peak once M = N ≳ 384 with K = naux in the
  // hundreds or more; T for such a block is ~1–4 MiB (fp64), in this thread's L2/L3 share.
  constexpr std::size_t kTargetEdge = 384;
  const std::size_t longest = std::max<std::size_t>(1, std::max(shape.nrows, shape.ncols));
  std::size_t bs = std::clamp<std::size_t>((kTargetEdge + nvir - 1) / std::max<std::size_t>(1, nvir), 1, longest);
  const auto nblocks = [&](std::size_t b) {
    const std::size_t r = (shape.nrows + b - 1) / b, c = (shape.ncols + b - 1) / b;
    return shape.triangular ? r * (r + 1) / 2 : r * c;
  };
  while (bs > 1 && nblocks(bs) < 4 * std::size_t(std::max(1, nthreads))) --bs;
  return bs;
}

std::vector<PairBlock> plan_pair_blocks(const PairShape& shape, std::size_t nvir, int nthreads) {
  const std::size_t bs = pair_block_edge(shape, nvir, nthreads);
  std::vector<PairBlock> blocks;
  for (std::size_t i0 = 0; i0 < shape.nrows; i0 += bs)
    for (std::size_t j0 = 0; j0 < (shape.triangular ? i0 + 1 : shape.ncols); j0 += bs)
      blocks.push_back({i0, std::min(shape.nrows, i0 + bs), j0, std::min(shape.ncols, j0 + bs)});
  // Diagonal blocks hold about half the work of the others: schedule them last.
  if (shape.triangular)
    std::stable_partition(blocks.begin(), blocks.end(), [](const PairBlock& b) { return !b.touches_diagonal(); });
  return blocks;
}

ThreadScope::ThreadScope(int threads) : saved_(omp_get_max_threads()), threads_(threads > 0 ? threads : saved_) {
  if (threads_ != saved_) omp_set_num_threads(threads_);
}

ThreadScope::~ThreadScope() {
  if (threads_ != saved_) omp_set_num_threads(saved_);
}

ProgressCounter::ProgressCounter(const std::function<void(double)>& callback, std::size_t total)
    : callback_(callback), total_(std::max<std::size_t>(1, total)), last_(std::chrono::steady_clock::now()) {}

void ProgressCounter::add(std::size_t done) {
#pragma omp atomic
  done_ += done;
}

void ProgressCounter::report() {
  if (!callback_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  std::size_t done;
#pragma omp atomic read
  done = done_;
  callback_(std::min(1.0, double(done) / double(total_)));
}

void ProgressCounter::finish() {
  if (callback_) callback_(1.0);
}

}  // namespace dfmp2::kernels::detail
