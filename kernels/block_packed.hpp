// Symmetric matrices stored by their significant blocks: the three-index factors B^Q_μν keep only
// the shell pairs μν that Schwarz screening leaves (as Psi4's DiskDFJK and PySCF's cderi keep
// only significant pairs), so an elongated molecule stores a fraction of the packed triangle.
//
// The n × n matrix is cut into row blocks (the orbital shells: consecutive function ranges); a
// block (R, C), C ≤ R, is stored or is zero. The stored elements of the lower triangle are kept
// by rows: row m of row block R holds, in column order, the columns of each stored C < R and,
// when (R, R) is stored, its columns up to m. With every block stored this is the plain packed
// triangle (element (m, k), k ≤ m, at m(m+1)/2 + k). The rows of a range of row blocks are one
// contiguous range of the stored elements.
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace dfmp2::kernels {

constexpr std::size_t packed_size(std::size_t n) { return n * (n + 1) / 2; }

// A stored block (R, C): its rows and columns, and where its columns sit within each of its rows.
struct StoredBlock {
  std::size_t row_block = 0, col_block = 0;  // R and C
  std::size_t row = 0, rows = 0;             // first function and count of R
  std::size_t col = 0, cols = 0;             // of C
  std::size_t position = 0;                  // of column `col` within each stored row of R
  bool diagonal() const { return row_block == col_block; }
};

class BlockPackedLayout {
 public:
  BlockPackedLayout() = default;
  // row_block_starts: the first function of each row block, ascending from 0 (the matrix has n);
  // blocks: the stored (row block, column block) pairs, column ≤ row, ordered by row block, then
  // column block.
  BlockPackedLayout(std::span<const std::size_t> row_block_starts, std::size_t n,
                    std::span<const std::pair<std::size_t, std::size_t>> blocks);

  std::size_t n() const { return n_; }
  std::size_t size() const { return row_offset_.back(); }  // stored elements
  std::size_t row_blocks() const { return row_block_start_.size() - 1; }
  // First function of row block b (b = row_blocks(): n).
  std::size_t row_block_start(std::size_t b) const { return row_block_start_[b]; }
  // Stored blocks, in the order they were given.
  const std::vector<StoredBlock>& blocks() const { return blocks_; }
  // First stored element of row m (m = n: size()).
  std::size_t row_offset(std::size_t m) const { return row_offset_[m]; }
  // First stored element of the rows of row block b (b = row_blocks(): size()).
  std::size_t row_block_offset(std::size_t b) const { return row_offset_[row_block_start_[b]]; }

  // Where element (m, k), k ≤ m, is stored; npos when its block is not stored.
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t find(std::size_t m, std::size_t k) const;

  // Runs of consecutive stored columns of row m, each at consecutive stored positions: the unit of
  // every copy between the stored rows and a square.
  struct Run {
    std::size_t col, count, position;
  };
  template <typename Visit>
  void for_each_run(std::size_t m, Visit visit) const {
    const RowBlock& block = row_block_of_[m];
    for (const Run& run : runs_[block.index]) visit(run);
    if (block.diagonal_stored) visit(Run{block.start, m - block.start + 1, block.diagonal_position});
  }

 private:
  struct RowBlock {
    std::size_t index, start, diagonal_position;
    bool diagonal_stored;
  };
  std::size_t n_ = 0;
  std::vector<std::size_t> row_block_start_;  // per row block, and n after the last
  std::vector<std::size_t> row_offset_;       // per row, and size() after the last
  std::vector<StoredBlock> blocks_;
  std::vector<std::vector<Run>> runs_;        // per row block: the columns of its off-diagonal blocks
  std::vector<RowBlock> row_block_of_;        // per row
};

// square[m·n + k] = element (m, k) for every stored element with k ≤ m, converted to Real: read
// column-major, the upper triangle, all that SYMM reads. Elements of blocks not stored are not
// written: the caller zeroes the square once, and rows of one layout then overwrite the same
// positions.
template <typename Real>
void unpack_upper(const BlockPackedLayout& layout, const double* stored, Real* square);

// Both triangles of the n × n square, the blocks not stored as zeros.
void unpack_symmetric(const BlockPackedLayout& layout, const double* stored, double* square);

// The stored elements of A_mk + A_km (k < m) and A_mm from the square A (n × n, any symmetry):
// Σ_mk A_mk B_mk of a symmetric B in this layout is then the dot product of the stored vectors.
std::vector<double> pack_weighted(const BlockPackedLayout& layout, const double* square);

}  // namespace dfmp2::kernels
