// The processes of one run: MPI ranks when built with MPI (OpenMPI), else one process.
// Everything the chemistry needs from MPI goes through Communicator, which also counts the
// bytes this rank sends and the time it spends in MPI calls.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace dfmp2 {

class Communicator {
 public:
  // The world of this process; one rank when MPI is absent or not started.
  static Communicator& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  std::size_t bytes_sent() const { return bytes_sent_; }
  // Wall time inside MPI calls: transfers plus waiting for slower ranks.
  double mpi_seconds() const { return mpi_seconds_; }

  void allreduce_sum(double* data, std::size_t count);
  // Root's data to every rank.
  void broadcast(double* data, std::size_t count, int root);
  // Every rank's value, in rank order.
  std::vector<double> allgather(double value);
  // Sends `send` to `destination` while receiving into `receive` from `source`.
  void sendrecv(const void* send, std::size_t send_bytes, int destination, void* receive,
                std::size_t receive_bytes, int source);
  // Ends every rank at once; for errors that only some ranks may see.
  [[noreturn]] void abort(int exit_code);

 private:
  friend class MpiSession;
  int rank_ = 0, size_ = 1;
  std::size_t bytes_sent_ = 0;
  double mpi_seconds_ = 0.0;
};

// Starts MPI for the process's lifetime when built with it and started by an MPI launcher
// (mpirun, srun). A plain run is a single rank without MPI: OpenMPI's singleton start forks an
// orted daemon, which costs every serial run about half a second.
class MpiSession {
 public:
  MpiSession(int& argc, char**& argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

 private:
  bool started_ = false;
};

// [begin, end) of `count` items given to `rank` of `size`: contiguous, sizes differ by ≤ 1.
struct Range {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};
Range share_of(std::size_t count, int rank, int size);

// Items rank, rank + size, rank + 2·size, … of `items`: a share of work items of uneven cost
// (batches of shells) that evens out better than a contiguous one. round_robin_owner: the rank
// whose share holds item i.
inline int round_robin_owner(std::size_t item, int size) {
  return static_cast<int>(item % static_cast<std::size_t>(size));
}
template <typename Item>
std::vector<Item> round_robin_share(const std::vector<Item>& items, int rank, int size) {
  std::vector<Item> mine;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (round_robin_owner(i, size) == rank) mine.push_back(items[i]);
  return mine;
}

// The rows × columns of a row-major matrix that one rank holds.
struct MatrixPart {
  Range rows, cols;
  std::size_t size() const { return rows.size() * cols.size(); }
};

// Moves a matrix spread over the ranks in parts from one layout to another: rank r holds
// `mine` = from(r) (row-major) and writes to(r) into `result` (row-major, to(r).size()
// elements). Each element is held by one rank in each layout. Pairwise exchanges in row slabs
// of at most slab_bytes (at least one row), so that beside the two layouts little is held;
// each rank sends only what leaves it. Collective.
constexpr std::size_t kRedistributeSlabBytes = std::size_t(32) << 20;
// What redistribute holds beside the two layouts: one outgoing and one incoming slab, each at
// least one row (widest_row_bytes: the widest row it moves) and at most this rank's larger part
// (largest_part_bytes: of `mine` or of `result`).
std::size_t redistribute_buffer_bytes(std::size_t widest_row_bytes, std::size_t largest_part_bytes,
                                      std::size_t slab_bytes = kRedistributeSlabBytes);
void redistribute(Communicator& comm, const double* mine, const std::function<MatrixPart(int)>& from,
                  const std::function<MatrixPart(int)>& to, double* result,
                  std::size_t slab_bytes = kRedistributeSlabBytes);

}  // namespace dfmp2
