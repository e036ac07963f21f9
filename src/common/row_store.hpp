// A row-major matrix held by one rank partly in memory and partly on disk: its first ram_rows rows
// in an array drawn from the memory budget, the others in a scratch file. It is written once, in
// blocks of rows and columns, and then read in row order in blocks — the file's blocks in large
// sequential reads, each block read while the previous one is used — or a range of rows at a time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/common/scratch.hpp"

namespace dfmp2 {

class RowStore {
 public:
  RowStore() = default;
  // scratch may be null when every row is in memory.
  RowStore(std::size_t rows, std::size_t cols, std::size_t ram_rows, MemoryBudget& budget,
           const ScratchDirectory* scratch, const std::string& what);

  std::size_t rows() const { return rows_; }
  std::size_t cols() const { return cols_; }
  std::size_t ram_rows() const { return ram_rows_; }
  std::size_t disk_rows() const { return rows_ - ram_rows_; }
  double* ram() { return ram_.data(); }
  const double* ram() const { return ram_.data(); }

  // Rows [row, row + nrows) × columns [col, col + ncols) from `data` (row-major, leading
  // dimension ld).
  void write(std::size_t row, std::size_t nrows, std::size_t col, std::size_t ncols, const double* data,
             std::size_t ld);
  // Whole rows [row, row + nrows) into `out`.
  void read(std::size_t row, std::size_t nrows, double* out) const;
  // Rows [row, row + nrows) × columns [col, col + ncols) into `out` (row-major, leading dimension ld).
  void read(std::size_t row, std::size_t nrows, std::size_t col, std::size_t ncols, double* out, std::size_t ld) const;
  // Row r: where it is in memory, else read into `buffer` (cols() elements). Safe from several
  // threads at once.
  const double* row(std::size_t r, double* buffer) const;
  // The same, `buffer` sized to a row when row r is on disk.
  const double* row(std::size_t r, std::vector<double>& buffer) const;

  using Visit = std::function<void(std::size_t first_row, std::size_t nrows, const double* rows)>;
  // Every row in order: the rows in memory as one block where they are, then the file's in blocks
  // of the buffers' size (two buffers of the same whole number of rows), each read while the
  // previous one is visited.
  void for_each_block(std::span<double> buffer, std::span<double> next_buffer, const Visit& visit) const;

 private:
  std::size_t rows_ = 0, cols_ = 0, ram_rows_ = 0;
  LargeArray<double> ram_;
  std::unique_ptr<ScratchFile> file_;
};

// Rows [first, first + count) of `store`, written on rank `owner`, copied into every other rank's
// store (each rank holds all rows in its own): in place where they are in memory, through
// `buffer` (at least one row) where they are on disk. Collective; every rank's store must have
// the same rows in memory and the same buffer.
void broadcast_rows(RowStore& store, std::size_t first, std::size_t count, int owner, std::span<double> buffer,
                    Communicator& comm);
// Columns [first, first + count) of every row, likewise, through `buffer` (rows() × count). Collective.
void broadcast_columns(RowStore& store, std::size_t first, std::size_t count, int owner, double* buffer,
                       Communicator& comm);

}  // namespace dfmp2
