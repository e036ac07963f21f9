// The compute seam's engine for host views whose fp64 GEMMs run on a GPU (a JKDevice: the CUDA one,
// or the tests' host stand-in): the DF-MP2 gradient's amplitude loop (src/gradient/mp2_amplitudes)
// on the GPU without its arrays leaving host memory. Each product copies what it reads to the
// GPU, multiplies there and copies C back; it returns complete (one host synchronisation per
// product). Host ranges named when the engine is made (the gradient's rows of B_ia^P in memory)
// are copied once and stay resident: an operand inside one is read there, not copied. Operands
// held (hold_operands: the amplitude loop's t and T of a block, read by three products) are
// copied once to a room of their own, while it holds them; arrays placed there (place: a block's
// I, t and T made on the GPU) are not copied at all, and a C in one stays there. The rest passes
// through a staging buffer, in tiles of C's rows and columns and of the inner dimension
// when a product does not fit it. Host memory copied again and again is page-locked: the named
// ranges when they stream, and what pin_host names. An fp64 TRSM runs on the GPU when its L is
// resident or held there (the DF-MP2 fit's), in tiles of B; fp32 products, SYRK, SYMM and the
// other TRSMs run on the host engine. One call at a time: not for threads to share.
// Host code: built and tested without CUDA.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/stacked_jk.hpp"

namespace dfmp2::kernels {

struct GpuOffloadPlan {
  bool resident = false;              // the named host ranges copied once and kept on the GPU
  std::size_t resident_elements = 0;  // theirs, together
  std::size_t staging_elements = 0;   // the staging buffer's: the other operands and C
  std::size_t held_elements = 0;      // the room for held operands (0: they are staged as the rest)
  std::size_t device_bytes() const;
};

// The least staging buffer a plan has: tiles of 256 × 256 of A, B and C.
inline constexpr std::size_t kGpuLeastStagingElements = 3 * 256 * 256;

// The plan for `device_bytes` of GPU memory: the ranges (elements each) resident when they fit
// beside a staging buffer of three times the largest other operand (largest_other: then no
// product is tiled); `held` elements of room for held operands when they fit beside both; the
// staging buffer three times the largest operand it will take (the largest range too when they
// stream), or what the memory leaves. GpuError naming `what` (the products) when that is less
// than kGpuLeastStagingElements.
GpuOffloadPlan plan_gpu_offload(const std::vector<std::size_t>& ranges, std::size_t largest_other, std::size_t held,
                                std::size_t device_bytes, const std::string& what);

class OffloadEngine final : public ComputeEngine {
 public:
  // Carves the plan's buffers from device.memory() and copies the ranges there when the plan makes
  // them resident (their elements at most the plan's: a gradient's orbitals may be fewer than its
  // plan's nbf): they must not change while the engine lives.
  OffloadEngine(const GpuOffloadPlan& plan, JKDevice& device, ComputeEngine& host,
                std::span<const std::span<const double>> ranges);
  ~OffloadEngine() override;  // unpins the streamed ranges
  OffloadEngine(const OffloadEngine&) = delete;
  OffloadEngine& operator=(const OffloadEngine&) = delete;

  Memory memory() const override { return Memory::host; }
  // Copies `operands` to the room for held operands when they fit what is left of it (else they
  // are staged as the rest); release_operands() empties the room. Products that read them must
  // come after, and nothing may write them until the release.
  void hold_operands(std::span<const double> operands) override { hold(operands); }
  void release_operands() override;
  void pin_host(std::span<const double> host) override;
  void unpin_host(std::span<const double> host) override;
  // hold_operands, saying where they are on the GPU (null: not held).
  const double* hold(std::span<const double> operands);
  // A place in the same room, without a copy, for an array made on the GPU that `range` (host
  // memory of its size) stands for: products read it there and write a C that lies in it there,
  // not copied back. Null when the room has too little left.
  double* place(std::span<const double> range);
  JKDevice& device() { return device_; }
  // Products run on the GPU, and bytes copied to it (the resident ranges included), so far.
  std::size_t products() const { return products_; }
  std::size_t uploaded_bytes() const { return uploaded_; }

 protected:
  void run_gemm(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                double beta, const MatrixView<double>& C) override;
  void run_gemm(Op op_a, Op op_b, float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B,
                float beta, const MatrixView<float>& C) override;
  void run_syrk_lower(Op op_x, double alpha, const MatrixView<const double>& X, double beta,
                      const MatrixView<double>& C) override;
  void run_syrk_lower(Op op_x, float alpha, const MatrixView<const float>& X, float beta,
                      const MatrixView<float>& C) override;
  void run_symm_upper_left(double alpha, const MatrixView<const double>& A, const MatrixView<const double>& B,
                           double beta, const MatrixView<double>& C) override;
  void run_symm_upper_left(float alpha, const MatrixView<const float>& A, const MatrixView<const float>& B, float beta,
                           const MatrixView<float>& C) override;
  void run_solve_lower(Side side, Op op_l, double alpha, const MatrixView<const double>& L,
                       const MatrixView<double>& B) override;
  void run_solve_lower(Side side, Op op_l, float alpha, const MatrixView<const float>& L,
                       const MatrixView<float>& B) override;

 private:
  struct Range {
    const double* host;
    std::size_t elements;
    double* device;
    bool placed = false;  // made on the GPU (place), so a product may write it there
  };
  // A product's tile: rows and columns of C, and of the inner dimension.
  struct Tile {
    std::size_t m, n, k;
  };
  // The memory of the views on the GPU: the device engine's (the host stand-in's is the host's).
  Memory device_memory() { return device_.engine().memory(); }
  // Where `view`'s elements are on the GPU when they lie in a resident range or a held one, else null.
  const double* resident_copy(const MatrixView<const double>& view) const;
  // Where C's elements are on the GPU when they lie in a placed range, else null.
  double* placed_copy(const MatrixView<double>& C) const;
  // `range`'s piece of what is left of the room for held operands, null when it does not fit.
  double* take_room(std::span<const double> range, bool placed);
  Tile tile_for(std::size_t m, std::size_t n, std::size_t k, bool a_resident, bool b_resident, bool c_placed) const;
  // `block` on the GPU: in its resident range, or copied to `staging`, which moves past it.
  MatrixView<const double> on_device(const MatrixView<const double>& block, double*& staging);
  // C_placed: C_tile's place on the GPU (C lies in a placed range), else null.
  void multiply_tile(Op op_a, Op op_b, double alpha, const MatrixView<const double>& A,
                     const MatrixView<const double>& B, double beta, const MatrixView<double>& C_tile,
                     double* C_placed, std::size_t row, std::size_t column, std::size_t tile_k);

  GpuOffloadPlan plan_;
  JKDevice& device_;
  ComputeEngine& host_;
  std::vector<Range> ranges_, held_;
  std::vector<std::span<const double>> streamed_;  // the named ranges, pinned, when they stream
  double* staging_ = nullptr;
  double* held_room_ = nullptr;
  std::size_t held_used_ = 0;
  std::size_t products_ = 0, uploaded_ = 0;
};

}  // namespace dfmp2::kernels
