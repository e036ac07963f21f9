// CUDA resources that free themselves, shared by the .cu files of kernels/gpu/: a call's status
// checked into one GpuError naming it, one device allocation, one stream, page-locked host ranges.
// CUDA-only header.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/gpu/gpu_plan.hpp"

namespace dfmp2::kernels::cuda {

inline void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw GpuError("GPU: " + what + ": " + cudaGetErrorString(status));
}

// One allocation, refused with its bytes and the GPU's free memory. These objects free themselves,
// so an engine whose construction fails part-way leaves nothing.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(std::size_t bytes, const std::string& what) : bytes_(bytes) {
    if (bytes == 0) return;
    if (const cudaError_t status = cudaMalloc(&data_, bytes); status != cudaSuccess) {
      cudaGetLastError();  // an allocation failure is not sticky: clear it
      std::size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      throw GpuError("GPU: cannot allocate " + format_gib(bytes) + " for " + what + " (" +
                     cudaGetErrorString(status) + "; " + format_gib(free) + " free of " + format_gib(total) +
                     "): lower --gpu-memory or use --device cpu");
    }
  }
  DeviceMemory(DeviceMemory&& other) noexcept { *this = std::move(other); }
  DeviceMemory& operator=(DeviceMemory&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  ~DeviceMemory() {
    if (data_) cudaFree(data_);
  }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-blocking stream that waits for its work before it goes.
class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "creating a stream"); }
  explicit Stream(int priority) {
    check(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority), "creating a stream");
  }
  ~Stream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Host ranges page-locked until unpinned or until this goes, so that their copies to and from the
// GPU run asynchronously at the link's full rate. A range that cannot be locked (already locked in
// part, or refused) is copied from pageable memory instead, and not tried again until unpinned.
// Whoever unpins a range (or lets this go) has first waited for the copies that use it.
class PinnedRanges {
 public:
  PinnedRanges() = default;
  PinnedRanges(const PinnedRanges&) = delete;
  PinnedRanges& operator=(const PinnedRanges&) = delete;
  ~PinnedRanges() {
    for (const void* p : ranges_) cudaHostUnregister(const_cast<void*>(p));
  }
  void pin(const void* data, std::size_t bytes) {
    if (bytes == 0 || tried_.count(data) > 0) return;
    tried_.insert(data);
    if (cudaHostRegister(const_cast<void*>(data), bytes, cudaHostRegisterDefault) == cudaSuccess)
      ranges_.push_back(data);
    else
      cudaGetLastError();  // not sticky: the copies fall back to pageable memory
  }
  void unpin(const void* data) {
    tried_.erase(data);
    if (const auto at = std::find(ranges_.begin(), ranges_.end(), data); at != ranges_.end()) {
      cudaHostUnregister(const_cast<void*>(data));
      ranges_.erase(at);
    }
  }

 private:
  std::vector<const void*> ranges_;
  std::set<const void*> tried_;
};

}  // namespace dfmp2::kernels::cuda
