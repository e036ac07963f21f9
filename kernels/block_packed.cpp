#include "kernels/block_packed.hpp"

#include <algorithm>
#include <stdexcept>

namespace dfmp2::kernels {

BlockPackedLayout::BlockPackedLayout(std::span<const std::size_t> row_block_starts, std::size_t n,
                                     std::span<const std::pair<std::size_t, std::size_t>> blocks)
    : n_(n), row_block_start_(row_block_starts.begin(), row_block_starts.end()), runs_(row_block_starts.size()) {
  row_block_start_.push_back(n);
  const std::size_t nblocks = row_blocks();
  std::vector<std::size_t> width(nblocks, 0);  // of each row block's off-diagonal columns
  std::vector<bool> diagonal(nblocks, false);
  std::size_t previous = 0;
  for (const auto& [r, c] : blocks) {
    if (c > r || r >= nblocks || r < previous || (r == previous && !blocks_.empty() && c <= blocks_.back().col_block))
      throw std::invalid_argument("BlockPackedLayout: blocks must be in the lower triangle, by row then column block");
    previous = r;
    const std::size_t row = row_block_start_[r], col = row_block_start_[c];
    const std::size_t cols = row_block_start_[c + 1] - col;
    StoredBlock block{r, c, row, row_block_start_[r + 1] - row, col, cols, 0};
    if (c == r) {
      diagonal[r] = true;
    } else {
      block.position = width[r];
      width[r] += cols;
      std::vector<Run>& runs = runs_[r];
      if (!runs.empty() && runs.back().col + runs.back().count == col)
        runs.back().count += cols;
      else
        runs.push_back({col, cols, block.position});
    }
    blocks_.push_back(block);
  }
  row_offset_.assign(n + 1, 0);
  for (std::size_t r = 0; r < nblocks; ++r)
    for (std::size_t m = row_block_start_[r]; m < row_block_start_[r + 1]; ++m) {
      row_block_of_.push_back({r, row_block_start_[r], width[r], diagonal[r]});
      row_offset_[m + 1] = row_offset_[m] + width[r] + (diagonal[r] ? m - row_block_start_[r] + 1 : 0);
    }
  for (StoredBlock& block : blocks_)
    if (block.diagonal()) block.position = width[block.col_block];
}

std::size_t BlockPackedLayout::find(std::size_t m, std::size_t k) const {
  std::size_t found = npos;
  for_each_run(m, [&](const Run& run) {
    if (k >= run.col && k < run.col + run.count) found = row_offset(m) + run.position + (k - run.col);
  });
  return found;
}

template <typename Real>
void unpack_upper(const BlockPackedLayout& layout, const double* stored, Real* square) {
  const std::size_t n = layout.n();
  for (std::size_t m = 0; m < n; ++m) {
    const double* row = stored + layout.row_offset(m);
    layout.for_each_run(m, [&](const BlockPackedLayout::Run& run) {
      std::transform(row + run.position, row + run.position + run.count, square + m * n + run.col,
                     [](double x) { return static_cast<Real>(x); });
    });
  }
}

void unpack_symmetric(const BlockPackedLayout& layout, const double* stored, double* square) {
  const std::size_t n = layout.n();
  std::fill(square, square + n * n, 0.0);
  for (std::size_t m = 0; m < n; ++m) {
    const double* row = stored + layout.row_offset(m);
    layout.for_each_run(m, [&](const BlockPackedLayout::Run& run) {
      for (std::size_t c = 0; c < run.count; ++c)
        square[m * n + run.col + c] = square[(run.col + c) * n + m] = row[run.position + c];
    });
  }
}

std::vector<double> pack_weighted(const BlockPackedLayout& layout, const double* square) {
  const std::size_t n = layout.n();
  std::vector<double> packed(layout.size());
  for (std::size_t m = 0; m < n; ++m) {
    double* row = packed.data() + layout.row_offset(m);
    layout.for_each_run(m, [&](const BlockPackedLayout::Run& run) {
      for (std::size_t c = 0; c < run.count; ++c) {
        const std::size_t k = run.col + c;
        row[run.position + c] = k == m ? square[m * n + m] : square[m * n + k] + square[k * n + m];
      }
    });
  }
  return packed;
}

template void unpack_upper<double>(const BlockPackedLayout&, const double*, double*);
template void unpack_upper<float>(const BlockPackedLayout&, const double*, float*);

}  // namespace dfmp2::kernels
