// The GPU J/K builder: its device memory, stream, cuBLAS engine and two small kernels; the
// build's logic is StackedJK's (kernels/gpu/stacked_jk.hpp).
#include "kernels/gpu/gpu_jk.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/gpu/cuda_compute_engine.hpp"
#include "kernels/gpu/cuda_resources.hpp"
#include "kernels/gpu/stacked_jk.hpp"

namespace dfmp2::kernels {
namespace {

using cuda::check;
using cuda::DeviceMemory;
using cuda::Stream;

template <typename Real>
__global__ void unpack_stack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                             std::size_t nbf, std::size_t ld, Real* stack) {
  const std::size_t total = nq * stored, stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t x = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; x < total; x += stride) {
    const std::size_t q = x / stored, p = x - q * stored;
    const std::size_t m = table[2 * p], k = table[2 * p + 1];
    const Real value = static_cast<Real>(rows[x]);
    stack[m + nbf * q + ld * k] = value;
    stack[k + nbf * q + ld * m] = value;
  }
}

__global__ void add_float(const float* from, double* to, std::size_t nbf, bool lower_only) {
  const std::size_t total = nbf * nbf, stride = std::size_t(gridDim.x) * blockDim.x;
  for (std::size_t x = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; x < total; x += stride) {
    const std::size_t col = x / nbf, row = x - col * nbf;
    if (!lower_only || row >= col) to[x] += static_cast<double>(from[x]);
  }
}

constexpr unsigned kThreads = 256;

// x summed over the block of threads in a fixed tree, so that a rerun gives the same bits: the
// sum is thread 0's. `warps` (shared, kThreads / 32 elements) takes the warps' sums.
__device__ double block_sum(double x, double* warps) {
  for (int step = 16; step > 0; step /= 2) x += __shfl_down_sync(0xffffffffu, x, step);
  if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = x;
  __syncthreads();
  if (threadIdx.x == 0)
    for (unsigned w = 1; w < blockDim.x / 32; ++w) x += warps[w];
  return x;
}

// One block of threads per pair (i, k = blockIdx.y): its t, T and weighted energies
// (ClosedShellBlock). Each thread sums its elements in turn, then block_sum. Reading I_ba is
// strided; the kernel moves o²v² elements once per block of k, far less than the GEMMs that made I.
__global__ void closed_shell_amplitudes_kernel(ClosedShellBlock b) {
  const std::size_t i = blockIdx.x, k = blockIdx.y, v = b.v, ld = b.nk * v, offset = i * v * ld + k * v;
  const double* I = b.I + offset;
  const double eps_ik = b.eps_occ[i] + b.eps_occ[b.k0 + k];
  double os = 0.0, ss = 0.0;
  for (std::size_t x = threadIdx.x; x < v * v; x += blockDim.x) {
    const std::size_t a = x / v, c = x - a * v;
    const double delta = eps_ik - b.eps_vir[a] - b.eps_vir[c];
    const double I_ac = I[a * ld + c], t_ac = I_ac / delta, t_ca = I[c * ld + a] / delta;
    b.t[offset + a * ld + c] = t_ac;
    b.T[offset + a * ld + c] = 2.0 * t_ac - t_ca;
    os += t_ac * I_ac;
    ss += (t_ac - t_ca) * I_ac;
  }
  __shared__ double warps[2][kThreads / 32];
  os = block_sum(os, warps[0]);
  ss = block_sum(ss, warps[1]);
  if (threadIdx.x != 0) return;
  const std::size_t kk = b.k0 + k;
  const double weight = i < kk ? 0.0 : (i == kk ? 1.0 : 2.0);
  b.energies[2 * (i * b.nk + k)] = weight * os;
  b.energies[2 * (i * b.nk + k) + 1] = weight * ss;
}

// One block of threads per pair (i, k): its t and Σ t·I (OpenShellBlock), as the closed-shell kernel.
__global__ void open_shell_amplitudes_kernel(OpenShellBlock b) {
  const std::size_t i = blockIdx.x, va = b.va, vb = b.vb, offset = i * va * vb;
  const double* I = b.I + offset;
  const double eps_ik = b.eps_occ[i] + b.eps_k;
  double energy = 0.0;
  for (std::size_t x = threadIdx.x; x < va * vb; x += blockDim.x) {
    const std::size_t a = x / vb, c = x - a * vb;
    const double I_ac = I[x], numerator = b.same_spin ? I_ac - I[c * vb + a] : I_ac;
    const double t_ac = numerator / (eps_ik - b.eps_a[a] - b.eps_b[c]);
    b.t[offset + x] = t_ac;
    energy += t_ac * I_ac;
  }
  __shared__ double warps[kThreads / 32];
  energy = block_sum(energy, warps);
  if (threadIdx.x == 0) b.energies[i] = energy;
}
unsigned grid_for(std::size_t elements) {
  return static_cast<unsigned>(std::clamp<std::size_t>((elements + kThreads - 1) / kThreads, 1, 8192));
}

// Everything queued on one stream: copies, kernels and cuBLAS.
class CudaJKDevice final : public JKDevice {
 public:
  CudaJKDevice(std::size_t bytes, const std::string& purpose)
      : memory_(std::max<std::size_t>(bytes, 1), purpose), engine_(stream_) {}
  ComputeEngine& engine() override { return engine_; }
  char* memory() override { return memory_.as<char>(); }
  void copy_to(void* device, const void* host, std::size_t bytes) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_), "copying to the GPU");
  }
  void copy_from(void* host, const void* device, std::size_t bytes) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_), "copying from the GPU");
  }
  void copy_matrix_to(double* device, MatrixView<const double> host) override {
    check(cudaMemcpy2DAsync(device, sizeof(double) * host.rows, host.data, sizeof(double) * host.ld,
                            sizeof(double) * host.rows, host.cols, cudaMemcpyHostToDevice, stream_),
          "copying a matrix to the GPU");
  }
  void copy_matrix_from(MatrixView<double> host, const double* device) override {
    check(cudaMemcpy2DAsync(host.data, sizeof(double) * host.ld, device, sizeof(double) * host.rows,
                            sizeof(double) * host.rows, host.cols, cudaMemcpyDeviceToHost, stream_),
          "copying a matrix from the GPU");
  }
  void zero(void* device, std::size_t bytes) override {
    check(cudaMemsetAsync(device, 0, bytes, stream_), "zeroing device memory");
  }
  void synchronise() override { check(cudaStreamSynchronize(stream_), "waiting for the GPU's work"); }
  void pin(const void* host, std::size_t bytes) override { pinned_.pin(host, bytes); }
  void unpin(const void* host) override {  // from destructors too: no throw (a fault shows at the next check)
    cudaStreamSynchronize(stream_);
    pinned_.unpin(host);
  }
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, double* stack) override {
    launch_unpack(rows, nq, stored, table, nbf, ld, stack);
  }
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, float* stack) override {
    launch_unpack(rows, nq, stored, table, nbf, ld, stack);
  }
  void add_fp32(const float* from, double* to, std::size_t nbf, bool lower_only) override {
    add_float<<<grid_for(nbf * nbf), kThreads, 0, stream_>>>(from, to, nbf, lower_only);
    check(cudaGetLastError(), "launching the fp32 K sum");
  }
  void closed_shell_amplitudes(const ClosedShellBlock& block) override {
    if (block.o == 0 || block.nk == 0) return;
    closed_shell_amplitudes_kernel<<<dim3(unsigned(block.o), unsigned(block.nk)), kThreads, 0, stream_>>>(block);
    check(cudaGetLastError(), "launching the amplitudes kernel");
  }
  void open_shell_amplitudes(const OpenShellBlock& block) override {
    if (block.o == 0) return;
    open_shell_amplitudes_kernel<<<unsigned(block.o), kThreads, 0, stream_>>>(block);
    check(cudaGetLastError(), "launching the open-shell amplitudes kernel");
  }

 private:
  template <typename Real>
  void launch_unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                     std::size_t nbf, std::size_t ld, Real* stack) {
    unpack_stack<<<grid_for(nq * stored), kThreads, 0, stream_>>>(rows, nq, stored, table, nbf, ld, stack);
    check(cudaGetLastError(), "launching the unpack kernel");
  }
  // Destroyed in reverse: the engine, the stream (after its work), the memory, then the pins.
  cuda::PinnedRanges pinned_;
  DeviceMemory memory_;
  Stream stream_;
  CudaComputeEngine engine_;
};

}  // namespace

std::unique_ptr<JKDevice> make_cuda_device(std::size_t bytes, const std::string& purpose) {
  return std::make_unique<CudaJKDevice>(bytes, purpose);
}

struct GpuJK::Impl {
  CudaJKDevice device;
  StackedJK jk;
  Impl(const BlockPackedLayout& layout, const GpuJKPlan& plan)
      : device(plan.device_bytes(), "the SCF's J/K builds"), jk(layout, plan, device) {}
};

GpuJK::GpuJK(const BlockPackedLayout& layout, const GpuJKPlan& plan) : impl_(std::make_unique<Impl>(layout, plan)) {}
GpuJK::~GpuJK() = default;

void GpuJK::begin(std::span<const DensityFactors> densities, Precision precision) { impl_->jk.begin(densities, precision); }
void GpuJK::add(std::size_t first, const double* rows, std::size_t count) { impl_->jk.add(first, rows, count); }
void GpuJK::finish(std::span<double* const> J, std::span<double* const> K) { impl_->jk.finish(J, K); }
std::size_t GpuJK::uploaded_bytes() const { return impl_->jk.uploaded_bytes(); }

}  // namespace dfmp2::kernels
