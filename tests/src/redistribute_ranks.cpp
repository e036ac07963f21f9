// Run under mpirun by test_mpi: moves a matrix whose elements name their own position from row
// parts to column parts and back, in slabs of a few rows, and checks every element arrives.
// Exits non-zero, naming the first wrong element, if not.
#include <cstdio>
#include <vector>

#include "src/common/parallel.hpp"

using namespace dfmp2;

namespace {

double element(std::size_t i, std::size_t j, std::size_t cols) { return double(i * cols + j); }

// Whether `data` holds exactly `part` of the rows × cols matrix; reports the first wrong element.
bool holds(const std::vector<double>& data, const MatrixPart& part, std::size_t cols, int rank) {
  for (std::size_t i = part.rows.begin; i < part.rows.end; ++i)
    for (std::size_t j = part.cols.begin; j < part.cols.end; ++j) {
      const double got = data[(i - part.rows.begin) * part.cols.size() + (j - part.cols.begin)];
      if (got != element(i, j, cols)) {
        std::fprintf(stderr, "rank %d: element (%zu, %zu) is %g\n", rank, i, j, got);
        return false;
      }
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(argc, argv);
  Communicator& comm = Communicator::world();
  bool ok = true;
  // Shapes with rows not divisible by the ranks, and fewer rows than ranks.
  for (const auto& [rows, cols] : {std::pair<std::size_t, std::size_t>{23, 17}, {2, 9}}) {
    const auto by_rows = [&](int r) { return MatrixPart{share_of(rows, r, comm.size()), {0, cols}}; };
    const auto by_cols = [&](int r) { return MatrixPart{{0, rows}, share_of(cols, r, comm.size())}; };
    const MatrixPart mine = by_rows(comm.rank());
    std::vector<double> data;
    for (std::size_t i = mine.rows.begin; i < mine.rows.end; ++i)
      for (std::size_t j = 0; j < cols; ++j) data.push_back(element(i, j, cols));
    const std::size_t slab_bytes = 3 * sizeof(double) * cols;  // a few rows per slab
    std::vector<double> columns(by_cols(comm.rank()).size()), back(mine.size());
    redistribute(comm, data.data(), by_rows, by_cols, columns.data(), slab_bytes);
    ok = holds(columns, by_cols(comm.rank()), cols, comm.rank()) && ok;
    redistribute(comm, columns.data(), by_cols, by_rows, back.data(), sizeof(double));
    ok = holds(back, mine, cols, comm.rank()) && ok;
  }
  if (!ok) comm.abort(1);
  return 0;
}
