// The Z-vector's Fock response (kernels/occupied_response.hpp: F_s C_s of changes L_s, or of
// symmetric D_s, for fixed occupied orbitals C_s) on a GPU, run through a JKDevice (the CUDA one, or
// the CPU tests' host stand-in), in fp64. Per batch of nq rows B^Q the device unpacks them into the
// J/K build's stack S of full squares (kernels/gpu/stacked_jk.hpp: rows q·nbf … of an
// (ld = batch_q·nbf) × nbf matrix), and each product is a few GEMMs over the whole batch, no kernel
// of its own:
//   Y = S L_s (nq·nbf × o) holds Y^Q = B^Q L_s; read as an nbf × nq·o matrix (ld nbf), column
//   q + nq·c is Y^Q's column c. The caches X = S C_s and M = C_sᵀ X (o × nq·o) are laid out alike,
//   made once and resident. Since M^Q is symmetric, Mᵀ stacks the M^Q, so
//   Σ_Q Y^Q M^Q = Y Mᵀ,  W = C_sᵀ Y,  Σ_Q X^Q W^Qᵀ = X Wᵀ;   of D_s: Σ_Q B^Q D_s X^Q = Sᵀ (D_s X).
// The Coulomb part Σ_Q γ_Q X^Q = J C_s comes from the packed rows (γ = Bᵀ D_w, J += B γ, as the J/K
// build's J), with D_w the packed weights of Σ_t L_t C_tᵀ (or Σ_t D_t), and J C_s is one GEMM at
// the end. The interleaved columns depend on the batch's nq, so every pass must bring the rows in
// the same blocks as the caching pass (the DF-SCF store's for_each_block does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/gpu/stacked_jk.hpp"
#include "kernels/occupied_response.hpp"

namespace dfmp2::kernels {

struct GpuResponsePlan {
  std::size_t nbf = 0, stored = 0;  // the layout's n and stored elements
  std::size_t rows = 0;             // this rank's rows B^Q
  std::vector<std::size_t> nocc;    // each set's occupied orbitals
  bool resident = false;            // the rows B^Q on the GPU from the caching pass on
  std::size_t batch_q = 0;          // rows B^Q per batch: the squares' stack
  std::size_t rows_bytes = 0;       // resident: all rows; streamed: one batch's staging
  std::size_t caches_bytes = 0;     // every set's X and M of all rows
  std::size_t batch_bytes = 0;      // the stack of squares, Y and W of a batch
  std::size_t fixed_bytes = 0;      // C_s, L_s, F_s, D_s, the packed weights, J, γ, the unpack table
  std::size_t device_bytes() const { return rows_bytes + caches_bytes + batch_bytes + fixed_bytes; }
};

// The plan for these sizes in `device_bytes` of GPU memory: the caches always resident, the rows
// too when they fit beside batches of a few Q, else streamed in the largest batches that fit;
// GpuError naming what it needs when the caches and one Q streamed do not fit.
GpuResponsePlan plan_gpu_response(std::size_t nbf, std::size_t stored, std::size_t rows,
                                  std::vector<std::size_t> nocc, std::size_t device_bytes);

// Floating-point work of one product over the rows, of L's or of symmetric D's, as the GPU does it
// (on full squares, where the CPU's SYMM reads the stored blocks).
double gpu_response_flops(const GpuResponsePlan& plan, bool symmetric);

class StackedResponse {
 public:
  // Carves the plan's buffers out of device.memory(). sets: as OccupiedResponse's, without fp32
  // caches; each set's host cache is filled by cache() in OccupiedResponse's layout.
  StackedResponse(const BlockPackedLayout& layout, const GpuResponsePlan& plan, JKDevice& device,
                  std::vector<OccupiedResponse::Set> sets);
  StackedResponse(const StackedResponse&) = delete;
  StackedResponse& operator=(const StackedResponse&) = delete;

  // As OccupiedResponse's; every product in fp64.
  void cache(std::size_t first, std::size_t count, const double* rows);
  void begin(std::span<const double* const> L);
  void begin_symmetric(std::span<const double* const> D);
  void add(std::size_t first, std::size_t count, const double* rows);
  void finish(std::span<double* const> FC_occ);
  std::size_t uploaded_bytes() const { return uploaded_; }
  const GpuResponsePlan& plan() const { return plan_; }

 private:
  struct SetBuffers {
    OccupiedResponse::Set set;
    double *C = nullptr, *L = nullptr, *F = nullptr, *D = nullptr, *X = nullptr, *M = nullptr;
  };
  template <typename Real>
  MatrixView<Real> view(Real* data, std::size_t rows, std::size_t cols, std::size_t ld) const {
    return {data, rows, cols, ld, engine_.memory()};
  }
  // Rows first … first + count − 1 on the device in batches (resident rows copied once), each
  // handed to `batch` with its first row and size.
  template <typename Batch>
  void for_batches(std::size_t first, std::size_t count, const double* rows, const Batch& batch);
  // Whether resident rows first … first + count − 1 are on the device already; they are marked so
  // (the caller copies them when not).
  bool resident_rows_loaded(std::size_t first, std::size_t count);
  void check_batch(std::size_t first, std::size_t nq);
  void cache_batch(const double* B, std::size_t first, std::size_t nq);
  void copy_caches_to_host(std::size_t first, std::size_t nq);
  void begin_product(const std::vector<double>& weighted);
  void add_coulomb(const double* B, std::size_t nq);
  void add_exchange(std::size_t first, std::size_t nq);

  const BlockPackedLayout& layout_;
  GpuResponsePlan plan_;
  JKDevice& device_;
  ComputeEngine& engine_;
  std::vector<SetBuffers> sets_;
  double *rows_ = nullptr, *stack_ = nullptr, *Y_ = nullptr, *W_ = nullptr;
  double *weighted_ = nullptr, *J_ = nullptr, *gamma_ = nullptr;
  std::uint32_t* table_ = nullptr;
  std::vector<std::size_t> batch_at_;  // the caching pass's batch size at its first row (0: none)
  std::vector<char> loaded_;           // resident: rows already on the device
  std::size_t uploaded_ = 0;
  bool symmetric_ = false;
  // Host copies the queued copies read (kept until the next synchronisation at least).
  std::vector<std::uint32_t> table_host_;
  std::vector<double> weighted_host_, caches_host_;
};

}  // namespace dfmp2::kernels
