#include "src/common/row_store.hpp"

#include <algorithm>
#include <future>
#include <stdexcept>

namespace dfmp2 {

RowStore::RowStore(std::size_t rows, std::size_t cols, std::size_t ram_rows, MemoryBudget& budget,
                   const ScratchDirectory* scratch, const std::string& what)
    : rows_(rows), cols_(cols), ram_rows_(std::min(ram_rows, rows)) {
  ram_ = budget.allocate<double>(ram_rows_ * cols_, what);
  if (disk_rows() > 0) {
    if (scratch == nullptr) throw std::logic_error("RowStore: rows on disk need a scratch directory");
    file_ = std::make_unique<ScratchFile>(*scratch, what);
  }
}

void RowStore::write(std::size_t row, std::size_t nrows, std::size_t col, std::size_t ncols, const double* data,
                     std::size_t ld) {
  for (std::size_t r = row; r < row + nrows; ++r) {
    const double* from = data + (r - row) * ld;
    if (r < ram_rows_) {
      std::copy(from, from + ncols, ram_.data() + r * cols_ + col);
    } else if (ncols == cols_ && ld == cols_) {  // whole rows: the rest in one write
      file_->write(sizeof(double) * (r - ram_rows_) * cols_, from, sizeof(double) * (row + nrows - r) * cols_);
      return;
    } else {
      file_->write(sizeof(double) * ((r - ram_rows_) * cols_ + col), from, sizeof(double) * ncols);
    }
  }
}

void RowStore::read(std::size_t row, std::size_t nrows, double* out) const {
  const std::size_t in_ram = row < ram_rows_ ? std::min(nrows, ram_rows_ - row) : 0;
  std::copy(ram_.data() + row * cols_, ram_.data() + (row + in_ram) * cols_, out);
  if (in_ram < nrows)
    file_->read(sizeof(double) * (row + in_ram - ram_rows_) * cols_, out + in_ram * cols_,
                sizeof(double) * (nrows - in_ram) * cols_);
}

void RowStore::read(std::size_t row, std::size_t nrows, std::size_t col, std::size_t ncols, double* out,
                    std::size_t ld) const {
  for (std::size_t r = row; r < row + nrows; ++r) {
    double* to = out + (r - row) * ld;
    if (r < ram_rows_)
      std::copy(ram_.data() + r * cols_ + col, ram_.data() + r * cols_ + col + ncols, to);
    else
      file_->read(sizeof(double) * ((r - ram_rows_) * cols_ + col), to, sizeof(double) * ncols);
  }
}

const double* RowStore::row(std::size_t r, double* buffer) const {
  if (r < ram_rows_) return ram_.data() + r * cols_;
  read(r, 1, buffer);
  return buffer;
}

const double* RowStore::row(std::size_t r, std::vector<double>& buffer) const {
  if (r >= ram_rows_) buffer.resize(cols_);
  return row(r, buffer.data());
}

void RowStore::for_each_block(std::span<double> buffer, std::span<double> next_buffer, const Visit& visit) const {
  if (ram_rows_ > 0) visit(0, ram_rows_, ram_.data());
  if (disk_rows() == 0) return;
  const std::size_t block = std::min(buffer.size(), next_buffer.size()) / std::max<std::size_t>(cols_, 1);
  if (block == 0) throw std::logic_error("RowStore: a read buffer must hold a row");
  double* current = buffer.data();
  double* next = next_buffer.data();
  const auto read_block = [this, block](std::size_t first, double* to) {
    return std::async(std::launch::async, [this, first, to, block] {
      read(first, std::min(block, rows_ - first), to);
    });
  };
  std::future<void> pending = read_block(ram_rows_, current);
  for (std::size_t first = ram_rows_; first < rows_; first += block) {
    pending.get();
    if (first + block < rows_) pending = read_block(first + block, next);
    visit(first, std::min(block, rows_ - first), current);
    std::swap(current, next);
  }
}

void broadcast_rows(RowStore& store, std::size_t first, std::size_t count, int owner, std::span<double> buffer,
                    Communicator& comm) {
  if (comm.size() == 1) return;
  const std::size_t cols = store.cols(), end = first + count, in_ram_end = std::min(end, store.ram_rows());
  if (first < in_ram_end) comm.broadcast(store.ram() + first * cols, (in_ram_end - first) * cols, owner);
  const std::size_t per_piece = buffer.size() / std::max<std::size_t>(cols, 1);
  if (per_piece == 0 && in_ram_end < end) throw std::logic_error("broadcast_rows: the buffer must hold a row");
  for (std::size_t row = std::max(first, store.ram_rows()); row < end; row += per_piece) {
    const std::size_t rows = std::min(per_piece, end - row);
    if (comm.rank() == owner) store.read(row, rows, buffer.data());
    comm.broadcast(buffer.data(), rows * cols, owner);
    if (comm.rank() != owner) store.write(row, rows, 0, cols, buffer.data(), cols);
  }
}

void broadcast_columns(RowStore& store, std::size_t first, std::size_t count, int owner, double* buffer,
                       Communicator& comm) {
  if (comm.size() == 1) return;
  if (comm.rank() == owner) store.read(0, store.rows(), first, count, buffer, count);
  comm.broadcast(buffer, store.rows() * count, owner);
  if (comm.rank() != owner) store.write(0, store.rows(), first, count, buffer, count);
}

}  // namespace dfmp2
