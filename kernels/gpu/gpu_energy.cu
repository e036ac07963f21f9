// The GPU energy engine: device memory, streams, cuBLAS, uploads and launches (see gpu_energy.hpp).
#include "kernels/gpu/gpu_energy.hpp"

#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/backends.hpp"
#include "kernels/gpu/cuda_compute_engine.hpp"
#include "kernels/gpu/cuda_resources.hpp"
#include "kernels/gpu/energy_kernels.cuh"
#include "kernels/gpu/fused_tiles.cuh"
#include "kernels/pair_schedule.hpp"

namespace dfmp2::kernels {
namespace {

using cuda::check;
using cuda::DeviceMemory;
using cuda::PinnedRanges;
using cuda::Stream;

static_assert(gpu::kFusedEdge == int(kFusedTileEdge));

// Under MPI, ranks on one node share its GPUs round-robin by their node-local rank.
int device_index(int devices) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* value = std::getenv(name)) return std::atoi(value) % std::max(devices, 1);
  return 0;
}

class Event {
 public:
  explicit Event(unsigned flags = cudaEventDefault) { check(cudaEventCreateWithFlags(&event_, flags), "creating an event"); }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  operator cudaEvent_t() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Carves the plan's small arrays out of one allocation.
struct SmallArrays {
  double *eps[4] = {}, *partials = nullptr, *total = nullptr;
  int2 *pairs = nullptr, *tiles = nullptr;
};

}  // namespace

std::string gpu_unavailable_reason() {
  if (access("/dev/nvidiactl", F_OK) != 0 && access("/proc/driver/nvidia/version", F_OK) != 0)
    return "no NVIDIA driver on this machine (no /dev/nvidiactl)";
  int devices = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&devices); status != cudaSuccess)
    return std::string("CUDA finds no usable GPU: ") + cudaGetErrorString(status);
  if (devices == 0) return "CUDA finds no GPU";
  cudaDeviceProp prop{};
  const int index = device_index(devices);
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return "cannot read the properties of GPU " + std::to_string(index);
  if (prop.major < 9)
    return std::string(prop.name) + " has compute capability " + std::to_string(prop.major) + "." +
           std::to_string(prop.minor) + "; this build has code for 9.0 and newer (CMAKE_CUDA_ARCHITECTURES)";
  return "";
}

GpuProperties gpu_properties() {
  if (const std::string reason = gpu_unavailable_reason(); !reason.empty()) throw GpuError("no usable GPU: " + reason);
  int devices = 0;
  check(cudaGetDeviceCount(&devices), "counting devices");
  GpuProperties p;
  p.index = device_index(devices);
  check(cudaSetDevice(p.index), "selecting GPU " + std::to_string(p.index));
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, p.index), "reading the GPU's properties");
  p.name = prop.name;
  p.multiprocessors = prop.multiProcessorCount;
  p.compute_major = prop.major;
  p.compute_minor = prop.minor;
  check(cudaMemGetInfo(&p.free_bytes, &p.total_bytes), "reading the GPU's free memory");
  check(cudaDriverGetVersion(&p.driver_version), "reading the driver's version");
  check(cudaRuntimeGetVersion(&p.runtime_version), "reading the runtime's version");
  return p;
}

namespace {

// Values in [-0.5, 0.5) from a cheap hash of the index: never all zeros, no host copy.
template <typename Real>
__global__ void fill_random(Real* x, std::size_t n, unsigned seed) {
  for (std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; k < n; k += std::size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(k) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[k] = Real(double(h) / 4294967296.0 - 0.5);
  }
}

template <typename Real>
double time_gemm(std::size_t m, std::size_t n, std::size_t k, int repeats) {
  DeviceMemory A(m * k * sizeof(Real), "the GEMM probe"), B(n * k * sizeof(Real), "the GEMM probe"),
      C(m * n * sizeof(Real), "the GEMM probe");
  fill_random<<<1024, 256>>>(A.as<Real>(), m * k, 1u);
  fill_random<<<1024, 256>>>(B.as<Real>(), n * k, 2u);
  check(cudaGetLastError(), "launching the GEMM probe's fill");
  CudaComputeEngine engine;  // on the default stream, as the fills and the events
  Event start, stop;
  float best = 1e30f;
  for (int r = 0; r <= repeats; ++r) {  // the first is the warm-up
    cudaEventRecord(start);
    gemm_abt_row_major(engine, Memory::device, m, n, k, A.as<Real>(), k, B.as<Real>(), k, C.as<Real>(), n);
    cudaEventRecord(stop);
    const cudaError_t status = cudaEventSynchronize(stop);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, start, stop);
    check(status, "the GEMM probe");
    if (r > 0) best = std::min(best, ms);
  }
  return 2.0 * double(m) * double(n) * double(k) / (1e-3 * double(best)) * 1e-9;
}

}  // namespace

double gpu_gemm_gflops(Precision precision, std::size_t m, std::size_t n, std::size_t k, int repeats) {
  check(cudaSetDevice(gpu_properties().index), "selecting the GPU");
  return precision == Precision::fp32 ? time_gemm<float>(m, n, k, repeats) : time_gemm<double>(m, n, k, repeats);
}

// A device slot holding rows of one host B view, copied in pieces as the work needs them.
struct Slot {
  explicit Slot(std::size_t bytes) : memory(bytes, "a block of B_ia^P") {}
  DeviceMemory memory;
  const void* host = nullptr;  // the view it holds (nullptr: none)
  std::size_t rows = 0, row_bytes = 0, rows_copied = 0;
  bool stable = false;          // the host rows keep their contents: the copy can be reused
  unsigned long long used = 0;  // the call that last used it (least recently used is replaced)
  Event copied{cudaEventDisableTiming};  // recorded on the copy stream after the last piece
};

// The host rows of a B view, whatever its precision.
struct HostRows {
  const void* data = nullptr;
  std::size_t rows = 0, row_bytes = 0;
  bool stable = false;
};
template <typename Real>
HostRows host_rows(const BiaView<Real>& view) {
  return {view.data, view.nocc, view.nvir * view.naux * sizeof(Real), view.stable};
}

int select_device(int index) {
  check(cudaSetDevice(index), "selecting GPU " + std::to_string(index));
  return index;
}

int highest_stream_priority() {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading the stream priorities");
  return greatest;
}

struct GpuEnergyEngine::Impl {
  GpuEnergyPlan plan;
  GpuProperties properties;  // of the GPU used
  int device;  // selected first: every CUDA object below lives on it
  Stream compute, copy;
  // The loop backend's reductions, beside its GEMMs on `compute`; first to the SMs, so that a
  // T_flat slot is free again soon for the GEMM after next.
  Stream reduce{highest_stream_priority()};
  CudaComputeEngine engine{compute};  // the loop backend's T_flat GEMMs
  Event reuse{cudaEventDisableTiming};
  std::vector<Slot> slots;
  DeviceMemory workspace, small;
  SmallArrays arrays;
  PinnedRanges pinned;
  std::vector<Event> marks;  // loop, per chunk: GEMM start and end, reduction start and end; fused: batch end
  unsigned long long calls = 0;
  std::size_t uploaded = 0;

  explicit Impl(const GpuEnergyPlan& p);
  ~Impl();
  void carve_small();
  cudaEvent_t mark(std::size_t k);

  Slot& acquire(const HostRows& view, std::initializer_list<const Slot*> keep);
  void ensure(Slot& slot, std::size_t rows);
  void copy_rows(Slot& slot, std::size_t rows);
  void prefetch(const GpuNextBlock& next, const Slot& rows, const Slot& cols);
  template <typename Real>
  void begin_call(const detail::PairSpace<Real>& pairs);
  double elapsed(cudaEvent_t from, cudaEvent_t to);
  void finish(EnergyResult& r);

  template <typename Real>
  void reduce_chunk(const detail::PairSpace<Real>& pairs, const detail::PairBlock& c, const Real* T, std::size_t ldt);
  template <typename Real>
  EnergyResult loop(const detail::PairSpace<Real>& pairs, Slot& rows, Slot& cols, const EnergyOptions& options);
  template <typename Real>
  EnergyResult fused(const detail::PairSpace<Real>& pairs, Slot& rows, Slot& cols, const EnergyOptions& options);
};

GpuEnergyEngine::Impl::Impl(const GpuEnergyPlan& p)
    : plan(p), properties(gpu_properties()), device(select_device(properties.index)) {
  slots.reserve(plan.slots);
  for (std::size_t s = 0; s < plan.slots; ++s) slots.emplace_back(plan.slot_bytes);
  workspace = DeviceMemory(plan.workspace_bytes, "T_flat (the loop backend's workspace)");
  small = DeviceMemory(plan.small_bytes, "orbital energies, pair lists and partial sums");
  carve_small();
}

// A prefetch may still be copying: both streams finish before anything is freed or unpinned.
GpuEnergyEngine::Impl::~Impl() {
  cudaStreamSynchronize(copy);
  cudaStreamSynchronize(compute);
  cudaStreamSynchronize(reduce);
}

void GpuEnergyEngine::Impl::carve_small() {
  char* at = small.as<char>();
  const auto take = [&](std::size_t bytes) {
    char* here = at;
    at += gpu_aligned(bytes);
    return here;
  };
  const std::size_t tiles = plan.nvir_max / kFusedTileEdge + 1;
  const std::size_t most = std::max({plan.nocc_max, plan.nvir_max, plan.block_occ});
  for (double*& e : arrays.eps) e = reinterpret_cast<double*>(take(sizeof(double) * most));
  arrays.pairs = reinterpret_cast<int2*>(take(8 * plan.block_occ * plan.block_occ));
  arrays.tiles = reinterpret_cast<int2*>(take(8 * tiles * tiles));
  arrays.partials = reinterpret_cast<double*>(take(2 * sizeof(double) * plan.partial_sums));
  arrays.total = reinterpret_cast<double*>(take(2 * sizeof(double)));
  if (at > small.as<char>() + small.bytes()) throw GpuError("GPU: the plan's small arrays do not fit their allocation");
}

cudaEvent_t GpuEnergyEngine::Impl::mark(std::size_t k) {
  while (marks.size() <= k) marks.emplace_back();
  return marks[k];
}

Slot& GpuEnergyEngine::Impl::acquire(const HostRows& view, std::initializer_list<const Slot*> keep) {
  if (view.rows * view.row_bytes > plan.slot_bytes)
    throw std::invalid_argument("GPU energy: a block of " + std::to_string(view.rows) + " occupied orbitals (" +
                                std::to_string(view.rows * view.row_bytes) + " bytes) exceeds the planned slot (" +
                                std::to_string(plan.slot_bytes) + " bytes)");
  Slot* pick = nullptr;
  for (Slot& slot : slots) {
    if (view.stable && slot.stable && slot.host == view.data && slot.rows == view.rows &&
        slot.row_bytes == view.row_bytes) {
      slot.used = calls;
      return slot;
    }
    if (std::find(keep.begin(), keep.end(), &slot) == keep.end() && (pick == nullptr || slot.used < pick->used))
      pick = &slot;
  }
  if (pick == nullptr) throw GpuError("GPU energy: no free slot for another block of B_ia^P");
  // The compute stream may still read the rows this slot held.
  check(cudaEventRecord(reuse, compute), "recording an event");
  check(cudaStreamWaitEvent(copy, reuse, 0), "ordering the copy stream");
  // Streamed blocks are copied again and again: page-locked, their copies overlap the compute.
  if (!plan.resident) pinned.pin(view.data, view.rows * view.row_bytes);
  pick->host = view.data;
  pick->rows = view.rows;
  pick->row_bytes = view.row_bytes;
  pick->rows_copied = 0;
  pick->stable = view.stable;
  pick->used = calls;
  return *pick;
}

// Rows [0, rows) of the slot on the device before the compute stream's next work: pieces of about
// 64 MiB are copied on the copy stream as they are first needed, so later pieces travel while
// earlier chunks compute.
void GpuEnergyEngine::Impl::ensure(Slot& slot, std::size_t rows) {
  copy_rows(slot, rows);
  check(cudaStreamWaitEvent(compute, slot.copied, 0), "ordering the compute stream");
}

void GpuEnergyEngine::Impl::copy_rows(Slot& slot, std::size_t rows) {
  constexpr std::size_t kPieceBytes = std::size_t(64) << 20;
  rows = std::min(rows, slot.rows);
  if (slot.rows_copied < rows) {
    const std::size_t piece = std::max<std::size_t>(1, kPieceBytes / std::max<std::size_t>(slot.row_bytes, 1));
    while (slot.rows_copied < rows) {
      const std::size_t n = std::min(piece, slot.rows - slot.rows_copied), offset = slot.rows_copied * slot.row_bytes;
      check(cudaMemcpyAsync(slot.memory.as<char>() + offset, static_cast<const char*>(slot.host) + offset,
                            n * slot.row_bytes, cudaMemcpyHostToDevice, copy),
            "copying B_ia^P to the GPU");
      slot.rows_copied += n;
      uploaded += n * slot.row_bytes;
    }
    check(cudaEventRecord(slot.copied, copy), "recording an event");
  }
}

// The block the next call pairs with, copied now on the copy stream (after this call's blocks),
// into a third slot, while this call computes; the next call finds it there.
void GpuEnergyEngine::Impl::prefetch(const GpuNextBlock& next, const Slot& rows, const Slot& cols) {
  if (next.data == nullptr || slots.size() < 3) return;
  Slot& slot = acquire({next.data, next.rows, next.row_bytes, true}, {&rows, &cols});
  --slot.used;  // not this call's: the least recently used once the next call has run
  copy_rows(slot, slot.rows);
}

// The call's orbital energies and a zero total. The GPU is idle here (each call ends synchronised),
// so plain copies from pageable memory cost no overlap.
template <typename Real>
void GpuEnergyEngine::Impl::begin_call(const detail::PairSpace<Real>& pairs) {
  const std::span<const double> eps[4] = {pairs.eps_rows, pairs.eps_cols, pairs.eps_vir_rows, pairs.eps_vir_cols};
  for (int e = 0; e < 4; ++e)
    check(cudaMemcpyAsync(arrays.eps[e], eps[e].data(), eps[e].size() * sizeof(double), cudaMemcpyHostToDevice, compute),
          "copying orbital energies to the GPU");
  check(cudaMemsetAsync(arrays.total, 0, 2 * sizeof(double), compute), "clearing the energy sums");
}

double GpuEnergyEngine::Impl::elapsed(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, from, to), "reading an event timer");
  return 1e-3 * double(ms);
}

void GpuEnergyEngine::Impl::finish(EnergyResult& r) {
  check(cudaStreamSynchronize(compute), "the energy step's kernels");
  double total[2] = {0.0, 0.0};
  check(cudaMemcpy(total, arrays.total, sizeof(total), cudaMemcpyDeviceToHost), "copying the energy sums back");
  r.e_os = total[0];
  r.e_ss = total[1];
}

namespace {

std::size_t checked_int(std::size_t value, const char* what) {
  if (value > std::size_t(0x7fffffff)) throw GpuError(std::string("GPU: ") + what + " exceeds cuBLAS's 32-bit sizes");
  return value;
}

gpu::PairEnergies device_energies(const SmallArrays& arrays) {
  return {arrays.eps[0], arrays.eps[1], arrays.eps[2], arrays.eps[3]};
}

// Blocks per pair of a reduction launch: about four waves over the GPU (its 256-thread blocks run
// about four to an SM), at most one per tile (pair) and within the partial sums' array.
int reduce_groups(std::size_t pairs, int tiles, std::size_t partial_sums, int multiprocessors) {
  const std::size_t wanted = 16 * std::size_t(std::max(multiprocessors, 1));
  const std::size_t most = std::min<std::size_t>({std::size_t(std::max(tiles, 1)), partial_sums / pairs, 65535});
  return int(std::clamp<std::size_t>((wanted + pairs - 1) / pairs, 1, std::max<std::size_t>(most, 1)));
}

}  // namespace

namespace {

// fp64 on the tensor cores (the plan's kernel, v1 or v2), fp32 on the FMA units (fp32 has no
// tensor-core path without TF32). The DMMA kernels' stages take more than the default 48 KiB of
// shared memory (v1 same spin: 80 KiB, v2: 96 KiB), and two blocks an SM need the largest carveout.
void launch_fused(const gpu::FusedArgs<double>& args, dim3 grid, bool same_spin, FusedKernel version,
                  cudaStream_t stream) {
  const auto launch = [&](void (*kernel)(gpu::FusedArgs<double>), std::size_t shared) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)),
          "allowing the fused kernel its shared memory");
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
          "preferring shared memory for the fused kernel");
    kernel<<<grid, gpu::kFusedThreads, shared, stream>>>(args);
  };
  // 16-byte copies need every row of B 16-byte aligned: an even naux.
  const bool pieces16 = args.naux % 2 == 0;
  if (version == FusedKernel::v2) {
    static_assert(gpu::kTilesThreads == gpu::kFusedThreads);
    if (same_spin)
      launch(pieces16 ? gpu::fused_tiles_f64<true, 16> : gpu::fused_tiles_f64<true, 8>, gpu::tiles_shared_bytes());
    else
      launch(pieces16 ? gpu::fused_tiles_f64<false, 16> : gpu::fused_tiles_f64<false, 8>, gpu::tiles_shared_bytes());
  } else if (same_spin) {
    launch(pieces16 ? gpu::fused_pairs_dmma<true, 16> : gpu::fused_pairs_dmma<true, 8>, gpu::dmma_shared_bytes(true));
  } else {
    launch(pieces16 ? gpu::fused_pairs_dmma<false, 16> : gpu::fused_pairs_dmma<false, 8>, gpu::dmma_shared_bytes(false));
  }
}
void launch_fused(const gpu::FusedArgs<float>& args, dim3 grid, bool same_spin, FusedKernel, cudaStream_t stream) {
  if (same_spin)
    gpu::fused_pairs<float, true><<<grid, gpu::kFusedThreads, 0, stream>>>(args);
  else
    gpu::fused_pairs<float, false><<<grid, gpu::kFusedThreads, 0, stream>>>(args);
}

}  // namespace

// Chunk c's reduction and its sum into the call's total, on the reduce stream.
template <typename Real>
void GpuEnergyEngine::Impl::reduce_chunk(const detail::PairSpace<Real>& pairs, const detail::PairBlock& c, const Real* T,
                                         std::size_t ldt) {
  const std::size_t nvir_a = pairs.rows.nvir, nvir_b = pairs.cols.nvir, chunk_pairs = (c.i1 - c.i0) * (c.j1 - c.j0);
  const int groups = reduce_groups(chunk_pairs, gpu::reduce_tiles(int(nvir_a), int(nvir_b), pairs.same_spin),
                                   plan.partial_sums, properties.multiprocessors);
  const gpu::ChunkArgs<Real> args{T, ldt, int(c.i0), int(c.j0), int(c.j1 - c.j0), int(nvir_a), int(nvir_b),
                                  device_energies(arrays), pairs.triangular, pairs.same_spin, groups, arrays.partials};
  gpu::reduce_pairs<Real><<<dim3(unsigned(chunk_pairs), unsigned(groups)), dim3(gpu::kReduceTile, gpu::kReduceRows), 0,
                            reduce>>>(args);
  check(cudaGetLastError(), "launching the pair reduction");
  gpu::sum_partials<<<1, gpu::kSumThreads, 0, reduce>>>(arrays.partials, chunk_pairs * groups, arrays.total);
  check(cudaGetLastError(), "launching the energy sum");
}

// Chunk k's GEMM into T_flat slot k % 2 on the compute stream, its reduction on the reduce stream
// (marks 4k .. 4k + 3), so that chunk k + 1's GEMM runs while chunk k is reduced. The GEMM waits
// for the reduction that last read its slot (chunk k − 2); the reductions wait for their GEMM, and
// so for the call's orbital energies and zeroed total queued before it on the compute stream.
template <typename Real>
EnergyResult GpuEnergyEngine::Impl::loop(const detail::PairSpace<Real>& pairs, Slot& rows, Slot& cols,
                                         const EnergyOptions& options) {
  const std::size_t nvir_a = pairs.rows.nvir, nvir_b = pairs.cols.nvir, naux = pairs.rows.naux;
  const std::size_t pair_bytes = nvir_a * nvir_b * sizeof(Real), t_slot = plan.t_flat_slot_bytes();
  const auto chunks = detail::plan_loop_chunks(detail::PairShape{pairs.rows.nocc, pairs.cols.nocc, pairs.triangular},
                                               pair_bytes, std::min(t_slot, plan.partial_sums * pair_bytes),
                                               gpu_least_chunk_rows(nvir_a));
  std::size_t total_pairs = 0;
  for (const auto& c : chunks) total_pairs += pairs.pairs_needed(c.i0, c.i1, c.j0, c.j1);
  detail::ProgressCounter progress(options.progress, total_pairs);
  EnergyResult r;
  const Real *B_rows = rows.memory.as<Real>(), *B_cols = cols.memory.as<Real>();
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const detail::PairBlock& c = chunks[k];
    const std::size_t nr = c.i1 - c.i0, nc = c.j1 - c.j0, ldt = checked_int(nc * nvir_b, "a T_flat row");
    Real* T = reinterpret_cast<Real*>(workspace.as<char>() + (k % kTFlatSlots) * t_slot);
    ensure(rows, &rows == &cols ? std::max(c.i1, c.j1) : c.i1);
    if (&rows != &cols) ensure(cols, c.j1);
    if (k >= kTFlatSlots)
      check(cudaStreamWaitEvent(compute, mark(4 * (k - kTFlatSlots) + 3), 0), "ordering the compute stream");
    check(cudaEventRecord(mark(4 * k), compute), "recording an event");
    gemm_abt_row_major(engine, Memory::device, checked_int(nr * nvir_a, "a T_flat column"), ldt, naux,
                       B_rows + c.i0 * nvir_a * naux, naux, B_cols + c.j0 * nvir_b * naux, naux, T, ldt);
    check(cudaEventRecord(mark(4 * k + 1), compute), "recording an event");
    check(cudaStreamWaitEvent(reduce, mark(4 * k + 1), 0), "ordering the reduce stream");
    check(cudaEventRecord(mark(4 * k + 2), reduce), "recording an event");
    reduce_chunk(pairs, c, T, ldt);
    check(cudaEventRecord(mark(4 * k + 3), reduce), "recording an event");
    r.workspace_bytes = std::max(r.workspace_bytes, nr * nc * pair_bytes);
    if (k > 0) {  // one chunk behind, so the GPU always has the next one queued
      check(cudaEventSynchronize(mark(4 * k - 1)), "the energy step's kernels");
      progress.add(pairs.pairs_needed(chunks[k - 1].i0, chunks[k - 1].i1, chunks[k - 1].j0, chunks[k - 1].j1));
      progress.report();
    }
  }
  // The last reduction before finish() reads the total and before the next call's work.
  if (!chunks.empty()) check(cudaStreamWaitEvent(compute, mark(4 * chunks.size() - 1), 0), "ordering the compute stream");
  finish(r);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    r.gemm_seconds += elapsed(mark(4 * k), mark(4 * k + 1));
    r.reduce_seconds += elapsed(mark(4 * k + 2), mark(4 * k + 3));
  }
  progress.finish();
  return r;
}

template <typename Real>
EnergyResult GpuEnergyEngine::Impl::fused(const detail::PairSpace<Real>& pairs, Slot& rows, Slot& cols,
                                          const EnergyOptions& options) {
  const int edge = gpu::kFusedEdge;
  const int tiles_a = int((pairs.rows.nvir + edge - 1) / edge), tiles_b = int((pairs.cols.nvir + edge - 1) / edge);
  // v2's opposite-spin blocks form tiles B and B + 1.
  const bool v2 = std::is_same_v<Real, double> && plan.fused_kernel == FusedKernel::v2;
  const int b_step = v2 && !pairs.same_spin ? 2 : 1;
  std::vector<int2> tiles, list;
  for (int A = 0; A < tiles_a; ++A)
    for (int B = pairs.same_spin ? A : 0; B < tiles_b; B += b_step) tiles.push_back({A, B});
  for (std::size_t i = 0; i < pairs.rows.nocc; ++i)  // by rows, so a batch needs rows up to its last i
    for (std::size_t j = 0; j < pairs.cols_needed(i); ++j) list.push_back({int(i), int(j)});
  check(cudaMemcpyAsync(arrays.tiles, tiles.data(), tiles.size() * sizeof(int2), cudaMemcpyHostToDevice, compute),
        "copying the tile list to the GPU");
  check(cudaMemcpyAsync(arrays.pairs, list.data(), list.size() * sizeof(int2), cudaMemcpyHostToDevice, compute),
        "copying the pair list to the GPU");
  detail::ProgressCounter progress(options.progress, list.size());
  const std::size_t batch = std::max<std::size_t>(1, std::min<std::size_t>(65535, plan.partial_sums / tiles.size()));
  EnergyResult r;
  std::size_t k = 0;
  for (std::size_t first = 0; first < list.size(); first += batch, ++k) {
    const std::size_t n = std::min(batch, list.size() - first), last_row = std::size_t(list[first + n - 1].x) + 1;
    ensure(rows, last_row);
    if (&rows != &cols) ensure(cols, pairs.cols.nocc);
    const gpu::FusedArgs<Real> args{rows.memory.as<Real>(), cols.memory.as<Real>(), int(pairs.rows.naux),
                                    int(pairs.rows.nvir), int(pairs.cols.nvir), arrays.pairs + first, arrays.tiles,
                                    device_energies(arrays), pairs.triangular, arrays.partials};
    const dim3 grid(unsigned(tiles.size()), unsigned(n));
    launch_fused(args, grid, pairs.same_spin, plan.fused_kernel, compute);
    check(cudaGetLastError(), "launching the fused energy kernel");
    gpu::sum_partials<<<1, gpu::kSumThreads, 0, compute>>>(arrays.partials, tiles.size() * n, arrays.total);
    check(cudaGetLastError(), "launching the energy sum");
    check(cudaEventRecord(mark(k), compute), "recording an event");
    if (k > 0) {
      check(cudaEventSynchronize(mark(k - 1)), "the energy step's kernels");
      progress.add(batch);
      progress.report();
    }
  }
  finish(r);
  progress.finish();
  return r;
}

GpuEnergyEngine::GpuEnergyEngine(const GpuEnergyPlan& plan) : impl_(std::make_unique<Impl>(plan)) {}
GpuEnergyEngine::~GpuEnergyEngine() = default;
std::size_t GpuEnergyEngine::uploaded_bytes() const { return impl_->uploaded; }

template <typename Real>
EnergyResult GpuEnergyEngine::energy(Backend backend, const detail::PairSpace<Real>& pairs,
                                     const EnergyOptions& options) {
  Impl& m = *impl_;
  if ((m.plan.precision == Precision::fp32) != std::is_same_v<Real, float>)
    throw std::invalid_argument("GPU energy: B's precision is not the plan's");
  if (backend == Backend::automatic) backend = m.plan.backend;
  if (backend != Backend::loop && backend != Backend::fused)
    throw std::invalid_argument("the GPU energy step runs the loop and fused backends, not " + to_string(backend));
  check(cudaSetDevice(m.device), "selecting the GPU");
  ++m.calls;
  Slot& rows = m.acquire(host_rows(pairs.rows), {});
  Slot& cols = pairs.triangular ? rows : m.acquire(host_rows(pairs.cols), {&rows});
  m.begin_call(pairs);
  if (!m.plan.resident) {  // page-locked: queued whole at once, then the next block behind them
    m.copy_rows(rows, rows.rows);
    m.copy_rows(cols, cols.rows);
    m.prefetch(options.gpu_next, rows, cols);
  }
  EnergyResult r = backend == Backend::loop ? m.loop(pairs, rows, cols, options) : m.fused(pairs, rows, cols, options);
  r.backend = backend;
  return r;
}

template EnergyResult GpuEnergyEngine::energy<double>(Backend, const detail::PairSpace<double>&, const EnergyOptions&);
template EnergyResult GpuEnergyEngine::energy<float>(Backend, const detail::PairSpace<float>&, const EnergyOptions&);

}  // namespace dfmp2::kernels
