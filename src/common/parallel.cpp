#include "src/common/parallel.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#ifdef DFMP2_HAVE_MPI
#include <mpi.h>
#endif

namespace dfmp2 {

Communicator& Communicator::world() {
  static Communicator world;
  return world;
}

Range share_of(std::size_t count, int rank, int size) {
  const std::size_t n = static_cast<std::size_t>(size), r = static_cast<std::size_t>(rank);
  const std::size_t base = count / n, extra = count % n;
  Range range;
  range.begin = r * base + std::min(r, extra);
  range.end = range.begin + base + (r < extra ? 1 : 0);
  return range;
}

namespace {

Range intersect(Range a, Range b) {
  const std::size_t begin = std::max(a.begin, b.begin);
  return {begin, std::max(begin, std::min(a.end, b.end))};
}

}  // namespace

std::size_t redistribute_buffer_bytes(std::size_t widest_row_bytes, std::size_t largest_part_bytes,
                                      std::size_t slab_bytes) {
  return 2 * std::min(largest_part_bytes, std::max(widest_row_bytes, slab_bytes));
}

void redistribute(Communicator& comm, const double* mine, const std::function<MatrixPart(int)>& from,
                  const std::function<MatrixPart(int)>& to, double* result, std::size_t slab_bytes) {
  // Slabs keep the buffers in flight small beside the two layouts, so the per-rank peak is
  // about 2/N of the whole matrix.
  const int N = comm.size(), r = comm.rank();
  const MatrixPart have = from(r), want = to(r);
  // Slab s of `region`: its rows; sender and receiver compute the same region, so they agree.
  const auto slab_of = [slab_bytes](const MatrixPart& region, std::size_t s) {
    const std::size_t step =
        std::max<std::size_t>(1, slab_bytes / (sizeof(double) * std::max<std::size_t>(1, region.cols.size())));
    const std::size_t first = std::min(region.rows.end, region.rows.begin + s * step);
    return Range{first, std::min(region.rows.end, first + step)};
  };
  // Rows `slab` of `region`: packed from `mine` (out) or unpacked into `result` (in).
  const auto pack = [&](const MatrixPart& region, Range slab, double* buffer) {
    for (std::size_t i = slab.begin; i < slab.end; ++i) {
      const double* row = mine + (i - have.rows.begin) * have.cols.size() + (region.cols.begin - have.cols.begin);
      std::copy(row, row + region.cols.size(), buffer + (i - slab.begin) * region.cols.size());
    }
  };
  const auto unpack = [&](const MatrixPart& region, Range slab, const double* buffer) {
    for (std::size_t i = slab.begin; i < slab.end; ++i)
      std::copy(buffer + (i - slab.begin) * region.cols.size(), buffer + (i - slab.begin + 1) * region.cols.size(),
                result + (i - want.rows.begin) * want.cols.size() + (region.cols.begin - want.cols.begin));
  };
  std::vector<double> outgoing, incoming;
  for (int k = 0; k < N; ++k) {
    const int destination = (r + k) % N, source = (r - k + N) % N;
    const MatrixPart to_destination = to(destination), from_source = from(source);
    const MatrixPart out{intersect(have.rows, to_destination.rows), intersect(have.cols, to_destination.cols)};
    const MatrixPart in{intersect(from_source.rows, want.rows), intersect(from_source.cols, want.cols)};
    for (std::size_t s = 0;; ++s) {
      const Range out_slab = slab_of(out, s), in_slab = slab_of(in, s);
      if (out_slab.size() == 0 && in_slab.size() == 0) break;
      outgoing.resize(out_slab.size() * out.cols.size());
      pack(out, out_slab, outgoing.data());
      if (k == 0) {  // this rank's own share: out and in are the same region
        unpack(in, in_slab, outgoing.data());
        continue;
      }
      incoming.resize(in_slab.size() * in.cols.size());
      comm.sendrecv(outgoing.data(), sizeof(double) * outgoing.size(), destination, incoming.data(),
                    sizeof(double) * incoming.size(), source);
      unpack(in, in_slab, incoming.data());
    }
  }
}

#ifdef DFMP2_HAVE_MPI

namespace {
// MPI counts are int: move large buffers in pieces.
constexpr std::size_t kMaxPiece = std::size_t(1) << 27;

// Adds the wall time of its scope to `seconds`.
class ScopeClock {
 public:
  explicit ScopeClock(double& seconds) : seconds_(seconds), begin_(std::chrono::steady_clock::now()) {}
  ~ScopeClock() {
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }
  ScopeClock(const ScopeClock&) = delete;
  ScopeClock& operator=(const ScopeClock&) = delete;

 private:
  double& seconds_;
  std::chrono::steady_clock::time_point begin_;
};
// What OpenMPI's mpirun, a PMIx launcher or a PMI-1/2 one (Slurm's srun) set in each rank.
bool started_by_mpi_launcher() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(variable) != nullptr) return true;
  return false;
}

}  // namespace

MpiSession::MpiSession(int& argc, char**& argv) : started_(started_by_mpi_launcher()) {
  if (!started_) return;
  MPI_Init(&argc, &argv);
  Communicator& world = Communicator::world();
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size_);
}

MpiSession::~MpiSession() {
  if (started_) MPI_Finalize();
}

void Communicator::allreduce_sum(double* data, std::size_t count) {
  if (size_ == 1) return;
  const ScopeClock clock(mpi_seconds_);
  for (std::size_t done = 0; done < count; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min(kMaxPiece, count - done));
    MPI_Allreduce(MPI_IN_PLACE, data + done, piece, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    bytes_sent_ += sizeof(double) * static_cast<std::size_t>(piece);
  }
}

void Communicator::broadcast(double* data, std::size_t count, int root) {
  if (size_ == 1) return;
  const ScopeClock clock(mpi_seconds_);
  for (std::size_t done = 0; done < count; done += kMaxPiece) {
    const int piece = static_cast<int>(std::min(kMaxPiece, count - done));
    MPI_Bcast(data + done, piece, MPI_DOUBLE, root, MPI_COMM_WORLD);
    if (rank_ == root) bytes_sent_ += sizeof(double) * static_cast<std::size_t>(piece);
  }
}

std::vector<double> Communicator::allgather(double value) {
  std::vector<double> values(static_cast<std::size_t>(size_), value);
  if (size_ == 1) return values;
  const ScopeClock clock(mpi_seconds_);
  MPI_Allgather(&value, 1, MPI_DOUBLE, values.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  bytes_sent_ += sizeof(double) * static_cast<std::size_t>(size_ - 1);
  return values;
}

void Communicator::sendrecv(const void* send, std::size_t send_bytes, int destination,
                            void* receive, std::size_t receive_bytes, int source) {
  if (size_ == 1) {  // to itself, and MPI may not be started
    if (receive_bytes > 0) std::memcpy(receive, send, receive_bytes);
    return;
  }
  const ScopeClock clock(mpi_seconds_);
  // Receives and sends are posted separately, so an empty side posts nothing and the two
  // partners of a message agree on its pieces whatever else each of them moves.
  std::vector<MPI_Request> requests;
  char* in = static_cast<char*>(receive);
  for (std::size_t done = 0; done < receive_bytes; done += kMaxPiece) {
    requests.emplace_back();
    MPI_Irecv(in + done, static_cast<int>(std::min(kMaxPiece, receive_bytes - done)), MPI_BYTE,
              source, 0, MPI_COMM_WORLD, &requests.back());
  }
  const char* out = static_cast<const char*>(send);
  for (std::size_t done = 0; done < send_bytes; done += kMaxPiece) {
    const std::size_t piece = std::min(kMaxPiece, send_bytes - done);
    requests.emplace_back();
    MPI_Isend(out + done, static_cast<int>(piece), MPI_BYTE, destination, 0, MPI_COMM_WORLD,
              &requests.back());
    bytes_sent_ += piece;
  }
  MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

void Communicator::abort(int exit_code) {
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

#else  // one process

MpiSession::MpiSession(int&, char**&) {}
MpiSession::~MpiSession() = default;
void Communicator::allreduce_sum(double*, std::size_t) {}
void Communicator::broadcast(double*, std::size_t, int) {}
std::vector<double> Communicator::allgather(double value) { return {value}; }
void Communicator::sendrecv(const void* send, std::size_t, int, void* receive, std::size_t receive_bytes, int) {
  if (receive_bytes > 0) std::memcpy(receive, send, receive_bytes);
}
void Communicator::abort(int exit_code) { std::exit(exit_code); }

#endif

}  // namespace dfmp2
