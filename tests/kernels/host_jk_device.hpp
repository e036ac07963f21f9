// The GPU's part on the host, for the tests of the GPU code's host logic (StackedJK,
// StackedTransform, OffloadEngine, the gradient's amplitudes formed on the GPU) on machines
// without a GPU: memory starts as NaNs (cudaMalloc's is not zeroed), copies are immediate, the
// kernels loops, the engine OpenBLAS's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
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
  // Pins counted, so that the tests see what a CUDA device would page-lock, and for how long.
  void pin(const void* host, std::size_t bytes) override {
    if (bytes == 0 || pinned_.count(host) > 0) return;
    pinned_[host] = bytes;
    most_pinned_bytes_ = std::max(most_pinned_bytes_, pinned_bytes());
  }
  void unpin(const void* host) override { unknown_unpins_ += pinned_.erase(host) == 0 ? 1 : 0; }
  std::size_t pinned_bytes() const {
    std::size_t bytes = 0;
    for (const auto& [host, size] : pinned_) bytes += size;
    return bytes;
  }
  std::size_t most_pinned_bytes() const { return most_pinned_bytes_; }
  std::size_t unknown_unpins() const { return unknown_unpins_; }  // of memory not pinned: a caller's fault
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
  void closed_shell_amplitudes(const kernels::ClosedShellBlock& b) override {
    const std::size_t v = b.v, ld = b.nk * v;
    for (std::size_t i = 0; i < b.o; ++i)
      for (std::size_t k = 0; k < b.nk; ++k) {
        const std::size_t offset = i * v * ld + k * v, kk = b.k0 + k;
        const double eps_ik = b.eps_occ[i] + b.eps_occ[kk];
        double os = 0.0, ss = 0.0;
        for (std::size_t a = 0; a < v; ++a)
          for (std::size_t c = 0; c < v; ++c) {
            const double delta = eps_ik - b.eps_vir[a] - b.eps_vir[c], I_ac = b.I[offset + a * ld + c];
            const double t_ac = I_ac / delta, t_ca = b.I[offset + c * ld + a] / delta;
            b.t[offset + a * ld + c] = t_ac;
            b.T[offset + a * ld + c] = 2.0 * t_ac - t_ca;
            os += t_ac * I_ac;
            ss += (t_ac - t_ca) * I_ac;
          }
        const double weight = i < kk ? 0.0 : (i == kk ? 1.0 : 2.0);
        b.energies[2 * (i * b.nk + k)] = weight * os;
        b.energies[2 * (i * b.nk + k) + 1] = weight * ss;
      }
  }
  void open_shell_amplitudes(const kernels::OpenShellBlock& b) override {
    const std::size_t va = b.va, vb = b.vb;
    for (std::size_t i = 0; i < b.o; ++i) {
      const double* I = b.I + i * va * vb;
      double energy = 0.0;
      for (std::size_t a = 0; a < va; ++a)
        for (std::size_t c = 0; c < vb; ++c) {
          const double numerator = b.same_spin ? I[a * vb + c] - I[c * vb + a] : I[a * vb + c];
          const double t_ac = numerator / (b.eps_occ[i] + b.eps_k - b.eps_a[a] - b.eps_b[c]);
          b.t[i * va * vb + a * vb + c] = t_ac;
          energy += t_ac * I[a * vb + c];
        }
      b.energies[i] = energy;
    }
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
  std::map<const void*, std::size_t> pinned_;
  std::size_t most_pinned_bytes_ = 0, unknown_unpins_ = 0;
};

}  // namespace dfmp2::test
