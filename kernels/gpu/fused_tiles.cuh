// The fused fp64 kernel, version 2 (fused_tiles_f64): the tile pairs of fused_pairs_dmma (one block
// per pair (i, j) and tile pair A ≤ B, T_ij[A,B] and T_ij[B,A] formed on chip and reduced, T never
// written), built for what ncu found limiting v1 (results/gpu/check_h200_run4.log: SM busy feeding
// m8n8k4 DMMA from shared memory, 42 % of cuBLAS):
//   - sm_90's mma.sync m16n8k8 .f64 (PTX ISA 7.8) instead of m8n8k4: a quarter of the mma
//     instructions for the same work, the shape cuBLAS's fp64 kernels issue on sm_90.
//   - Fragments in 16-byte shared loads, half the load instructions of v1: within each 8 auxiliary
//     functions of a stage the mma's k = t + 4h is the function at 2t + h, for both operands (the sum
//     over k is the same), so a thread's two k of a row (a0/a2, a1/a3, b0/b1) lie side by side.
//     Rows are 16 doubles, unpadded; their 16-byte units are XOR-swizzled by the row's parity, so that
//     each quarter warp's loads (rows g, g + 1) and each row's cp.async writes meet all 32 banks.
//   - Three cp.async stages of 16 auxiliary functions and one barrier per stage (v1: two stages, two
//     barriers): 96 KiB of shared memory, two blocks an SM.
//   - Same spin: warps 0-3 form T_ab, warps 4-7 T_ba at (a, b) (B_j[A] B_i[B]ᵀ), each 32 × 32
//     (2 × 4 tiles of 16 × 8: 12 16-byte loads per 8 mma); the T_ba fragments pass through shared
//     memory to the T_ab warps, which reduce; a diagonal tile's T_ba warps idle and its T_ab warps
//     read their own fragments transposed (as v1). Opposite spin: the block forms T_ij[A, B] and
//     T_ij[A, B + 1] (the host's tile list steps B by 2), the same 32 × 32 warp tiles, each warp
//     reducing its own; B + 1 past nvir_b idles. B_i[A] is staged twice, once per product: with
//     one copy read by both, ptxas spilled 4 bytes under the 128 registers of two blocks an SM.
// Fragments (PTX ISA, m16n8k8 .f64): A a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4);
// B b0 (t, g), b1 (t + 4, g); C c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1);
// g = lane / 4, t = lane % 4. Numerics as v1: fp64 products and accumulation, energy sums in fp64.
#pragma once

#include <cstddef>

#include "kernels/gpu/energy_kernels.cuh"

namespace dfmp2::kernels::gpu {

constexpr int kTilesK = 16;          // auxiliary functions per stage (a panel row: 128 bytes)
constexpr int kTilesStages = 3;
constexpr int kTilesThreads = 256;   // 8 warps
constexpr int kTilesPanelDoubles = kFusedEdge * kTilesK;
// Panels per stage: product 0's left and right, product 1's left and right.
constexpr int kTilesStageDoubles = 4 * kTilesPanelDoubles;

__host__ __device__ constexpr std::size_t tiles_shared_bytes() {
  return std::size_t(kTilesStages) * kTilesStageDoubles * sizeof(double);
}
static_assert(kFusedEdge * kStagedStride <= kTilesStages * kTilesStageDoubles, "the staged T_ba reuses the stages");
static_assert(kFusedEdge == 64 && kTilesThreads == 256, "8 warps of 32 × 32 cover two 64 × 64 products");

// Offset (doubles) of 16-byte unit `unit` (auxiliary functions 2·unit, 2·unit + 1) of a panel's row.
__device__ __forceinline__ int tiles_offset(int row, int unit) { return row * kTilesK + 2 * (unit ^ ((row & 1) << 2)); }

__device__ __forceinline__ void dmma_m16n8k8(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}

// This thread's share of one panel's stage: rows row0.. of orbital `orbital` (nvir rows each),
// auxiliary functions k0.., zeros past the ends; 16-byte pieces where naux is even (every row of B
// then starts 16-byte aligned), else 8-byte ones.
template <int kBytes>
__device__ __forceinline__ void copy_tiles_panel(double* panel, const double* tensor, int orbital, int nvir, int naux,
                                                 int row0, int k0) {
  constexpr int kPer = kBytes / int(sizeof(double)), kPieces = kTilesK / kPer;  // pieces per row
  const double* base = tensor + std::size_t(orbital) * nvir * naux;
  // Not unrolled: the unrolled pieces' addresses, held through the stage loop, spilled (ptxas).
#pragma unroll 1
  for (int q = 0; q < kFusedEdge * kPieces / kTilesThreads; ++q) {
    const int idx = threadIdx.x + q * kTilesThreads, row = idx / kPieces, k = kPer * (idx % kPieces);
    const bool valid = row0 + row < nvir && k0 + k < naux;
    copy_async<kBytes>(panel + tiles_offset(row, k / 2) + k % 2,
                       valid ? base + std::size_t(row0 + row) * naux + k0 + k : tensor, valid);
  }
}

// Stage k0.. of the block's panels, one commit group; product 1's only where it has work (`second`).
template <bool kSameSpin, int kBytes>
__device__ __forceinline__ void copy_tiles_stage(double* stage, const FusedArgs<double>& args, const TilePair& at,
                                                 bool second, int k0) {
  copy_tiles_panel<kBytes>(stage, args.rows, at.i, args.nvir_a, args.naux, at.A0, k0);                        // B_i[A]
  copy_tiles_panel<kBytes>(stage + kTilesPanelDoubles, args.cols, at.j, args.nvir_b, args.naux, at.B0, k0);  // B_j[B]
  if (second) {
    if constexpr (kSameSpin) {
      copy_tiles_panel<kBytes>(stage + 2 * kTilesPanelDoubles, args.cols, at.j, args.nvir_b, args.naux, at.A0, k0);
      copy_tiles_panel<kBytes>(stage + 3 * kTilesPanelDoubles, args.rows, at.i, args.nvir_a, args.naux, at.B0, k0);
    } else {  // B_i[A] again, B_j[B + 1]
      copy_tiles_panel<kBytes>(stage + 2 * kTilesPanelDoubles, args.rows, at.i, args.nvir_a, args.naux, at.A0, k0);
      copy_tiles_panel<kBytes>(stage + 3 * kTilesPanelDoubles, args.cols, at.j, args.nvir_b, args.naux,
                               at.B0 + kFusedEdge, k0);
    }
  }
  copy_async_commit();
}

// The two doubles of 16-byte unit `unit` of a panel's row `row`.
__device__ __forceinline__ double2 load_unit(const double* panel, int row, int unit) {
  return *reinterpret_cast<const double2*>(panel + tiles_offset(row, unit));
}

// One stage's product over the warp's 32 × 32 (2 × 4 tiles of 16 × 8), two mma k-steps of 8.
__device__ __forceinline__ void multiply_tiles_stage(double (&acc)[2][4][4], const double* left, const double* right,
                                                     int rows0, int cols0, int g, int t) {
#pragma unroll
  for (int kk = 0; kk < kTilesK / 8; ++kk) {
    const int unit = 4 * kk + t;
    double a[2][4], b[4][2];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const double2 lo = load_unit(left, rows0 + 16 * m + g, unit), hi = load_unit(left, rows0 + 16 * m + g + 8, unit);
      a[m][0] = lo.x, a[m][1] = hi.x, a[m][2] = lo.y, a[m][3] = hi.y;
    }
#pragma unroll
    for (int n = 0; n < 4; ++n) {
      const double2 v = load_unit(right, cols0 + 8 * n + g, unit);
      b[n][0] = v.x, b[n][1] = v.y;
    }
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
      for (int n = 0; n < 4; ++n) dmma_m16n8k8(acc[m][n], a[m], b[n]);
  }
}

// The warp's fragments over all auxiliary functions. Step s waits for its own copies of stage s
// (kTilesStages − 2 newer groups may still travel) and, at the barrier, for everyone's — and for
// everyone to be done with stage s − 1, whose buffer it then refills with stage s + 2. Every step
// commits a group (empty past the end) so that the counts hold. An idle warp copies and meets the
// barriers only. Ends with the stages free for the epilogue.
template <bool kSameSpin, int kBytes>
__device__ __forceinline__ void accumulate_tiles(double (&acc)[2][4][4], double* stages, const FusedArgs<double>& args,
                                                 const TilePair& at, bool second, int product, bool idle, int rows0,
                                                 int cols0, int g, int t) {
  const int steps = (args.naux + kTilesK - 1) / kTilesK;
  const int left = (product == 1 ? 2 : 0) * kTilesPanelDoubles;
  const int right = (product == 1 ? 3 : 1) * kTilesPanelDoubles;
#pragma unroll
  for (int s = 0; s < kTilesStages - 1; ++s) {
    if (s < steps)
      copy_tiles_stage<kSameSpin, kBytes>(stages + s * kTilesStageDoubles, args, at, second, s * kTilesK);
    else
      copy_async_commit();
  }
  for (int s = 0; s < steps; ++s) {
    copy_async_wait<kTilesStages - 2>();
    __syncthreads();
    if (const int next = s + kTilesStages - 1; next < steps)
      copy_tiles_stage<kSameSpin, kBytes>(stages + next % kTilesStages * kTilesStageDoubles, args, at, second,
                                          next * kTilesK);
    else
      copy_async_commit();
    const double* stage = stages + s % kTilesStages * kTilesStageDoubles;
    if (!idle) multiply_tiles_stage(acc, stage + left, stage + right, rows0, cols0, g, t);
  }
  copy_async_wait<0>();  // nothing in flight at exit (naux = 0 included)
  __syncthreads();       // every warp's reads of the stages are done
}

// Same spin: the warp's fragments into `staged` at their (a − A0, b − B0), rows kStagedStride apart.
__device__ __forceinline__ void stage_tiles_fragments(const double (&acc)[2][4][4], double* staged, int rows0,
                                                      int cols0, int g, int t) {
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<double2*>(staged + (rows0 + 16 * m + g + 8 * h) * kStagedStride + cols0 + 8 * n + 2 * t) =
            make_double2(acc[m][n][2 * h], acc[m][n][2 * h + 1]);
}

// This thread's share of (os, ss) from its fragments of T_ij[A, B'] (columns from b0 = B' · 64); same
// spin with T_ba of each (a, b) from `staged`.
template <bool kSameSpin>
__device__ __forceinline__ void reduce_tiles_fragments(const double (&acc)[2][4][4], const double* staged,
                                                       const FusedArgs<double>& args, const TilePair& at, int b0,
                                                       int rows0, int cols0, int g, int t, double& os, double& ss) {
  const double eps_ij = args.eps.eps_i[at.i] + args.eps.eps_j[at.j];
#pragma unroll
  for (int m = 0; m < 2; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int v = 0; v < 4; ++v)
        add_fused_terms<kSameSpin>(acc[m][n][v], staged, args, at, b0, rows0 + 16 * m + g + 8 * (v / 2),
                                   cols0 + 8 * n + 2 * t + v % 2, eps_ij, os, ss);
}

// kBytes: cp.async's piece, 16 where naux is even, else 8 (a kernel each, as fused_pairs_dmma).
template <bool kSameSpin, int kBytes>
__global__ void __launch_bounds__(kTilesThreads, 2) fused_tiles_f64(FusedArgs<double> args) {
  extern __shared__ __align__(16) double tiles_stages[];  // [kTilesStages][4 panels][kFusedEdge][kTilesK]
  const TilePair at = tile_pair_of_block(args);
  const int warp = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
  const int product = warp / 4, rows0 = (warp % 4 / 2) * 32, cols0 = (warp % 2) * 32;
  // Product 1 has work: T_ba off the diagonal; opposite spin, tile B + 1 within nvir_b.
  const bool second = kSameSpin ? at.A0 != at.B0 : at.B0 + kFusedEdge < args.nvir_b;
  double acc[2][4][4] = {};  // [16-row tile][8-column tile][c0..c3]
  accumulate_tiles<kSameSpin, kBytes>(acc, tiles_stages, args, at, second, product, product == 1 && !second, rows0,
                                      cols0, g, t);
  double os = 0.0, ss = 0.0;
  if constexpr (kSameSpin) {
    if (product == (second ? 1 : 0)) stage_tiles_fragments(acc, tiles_stages, rows0, cols0, g, t);
    __syncthreads();
    if (product == 0)
      reduce_tiles_fragments<true>(acc, tiles_stages, args, at, at.B0, rows0, cols0, g, t, os, ss);
  } else if (product == 0 || second) {
    reduce_tiles_fragments<false>(acc, nullptr, args, at, at.B0 + product * kFusedEdge, rows0, cols0, g, t, os, ss);
  }
  store_block_sums(args, kSameSpin, at, os, ss);
}

}  // namespace dfmp2::kernels::gpu
