// The GPU's part on the host, for the tests of the GPU code's host logic (StackedJK,
// StackedTransform, OffloadEngine) on machines without a GPU: memory starts as NaNs (cudaMalloc's
// is not zeroed), copies are immediate, the kernels loops, the engine OpenBLAS's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/stacked_jk.hpp"

namespace dfmp2::test {

class HostJKDevice final : public kernels::JKDevice {
 public:
  explicit HostJKDevice(std::size_t bytes) : memory_(bytes / sizeof(double) + 1) {
    std::memset(memory_.data(), 0xff, sizeof(double) * memory_.size());
  }
  kernels::ComputeEngine& engine() override { return kernels::cpu_engine(); }
  char* memory() override { return reinterpret_cast<char*>(memory_.data()); }
  void copy_to(void* device, const void* host, std::size_t bytes) override { std::memcpy(device, host, bytes); }
  void copy_from(void* host, const void* device, std::size_t bytes) override { std::memcpy(host, device, bytes); }
  void copy_matrix_to(double* device, kernels::MatrixView<const double> host) override {
    for (std::size_t c = 0; c < host.cols; ++c)
      std::memcpy(device + c * host.rows, host.data + c * host.ld, sizeof(double) * host.rows);
  }
  void copy_matrix_from(kernels::MatrixView<double> host, const double* device) override {
    for (std::size_t c = 0; c < host.cols; ++c)
      std::memcpy(host.data + c * host.ld, device + c * host.rows, sizeof(double) * host.rows);
  }
  void zero(void* device, std::size_t bytes) override { std::memset(device, 0, bytes); }
  void synchronise() override {}
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, double* stack) override {
    unpack_stack(rows, nq, stored, table, nbf, ld, stack);
  }
  void unpack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table, std::size_t nbf,
              std::size_t ld, float* stack) override {
    unpack_stack(rows, nq, stored, table, nbf, ld, stack);
  }
  void add_fp32(const float* from, double* to, std::size_t nbf, bool lower_only) override {
    for (std::size_t col = 0; col < nbf; ++col)
      for (std::size_t row = lower_only ? col : 0; row < nbf; ++row) to[row + nbf * col] += from[row + nbf * col];
  }

 private:
  template <typename Real>
  static void unpack_stack(const double* rows, std::size_t nq, std::size_t stored, const std::uint32_t* table,
                           std::size_t nbf, std::size_t ld, Real* stack) {
    for (std::size_t q = 0; q < nq; ++q)
      for (std::size_t p = 0; p < stored; ++p) {
        const std::size_t m = table[2 * p], c = table[2 * p + 1];
        stack[m + nbf * q + ld * c] = stack[c + nbf * q + ld * m] = static_cast<Real>(rows[q * stored + p]);
      }
  }
  std::vector<double> memory_;
};

}  // namespace dfmp2::test
