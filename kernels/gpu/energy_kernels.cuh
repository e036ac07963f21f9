// The GPU energy step's kernels (device code only; the engine in gpu_energy.cu launches them).
//   reduce_pairs: the loop backend's reduction over a T_flat chunk, each pair's 32 × 32 tile pairs
//                 shared out over several blocks, T_ba staged through shared memory (T read once,
//                 coalesced).
//   fused_pairs:  one block per (pair, tile pair (A ≤ B)): T_ij[A,B] and T_ij[B,A] formed in
//                 registers from B_i and B_j panels staged in shared memory, then reduced; T is
//                 never written. Opposite spin: one tile T_ij[A,B], no exchange term. fp32 on
//                 the FMA units; fp64 (fused_pairs_dmma) on the tensor cores.
//   sum_partials: the per-pair or per-block sums added to the call's total in a fixed order, so
//                 that a rerun gives the same bits.
// Every sum is in fp64, for fp32 T too. Energies as in kernels/mp2_energy.hpp:
//   os = Σ_ab T_ab² / Δ_ab,  ss = Σ_ab T_ab (T_ab − T_ba) / Δ_ab,  Δ_ab = ε_i + ε_j − ε_a − ε_b;
// a tile pair A < B sums both orders at once: os += (T_ab² + T_ba²)/Δ, ss += (T_ab − T_ba)²/Δ.
#pragma once

#include <cstddef>

namespace dfmp2::kernels::gpu {

// The pair weight of kernels/backends.hpp: i ≠ j of one spin counts for (i, j) and (j, i).
__device__ __forceinline__ double pair_weight(bool same_spin, bool triangular, int i, int j) {
  return !same_spin || (triangular && i == j) ? 1.0 : 2.0;
}

// Sums (os, ss) over the block; thread 0 gets the totals. blockDim.x * blockDim.y ≤ 1024.
__device__ __forceinline__ void block_sum(double& os, double& ss) {
  __shared__ double warp_os[32], warp_ss[32];
  for (int offset = 16; offset > 0; offset /= 2) {
    os += __shfl_down_sync(0xffffffffu, os, offset);
    ss += __shfl_down_sync(0xffffffffu, ss, offset);
  }
  const int tid = threadIdx.y * blockDim.x + threadIdx.x, warps = (blockDim.x * blockDim.y + 31) / 32;
  if (tid % 32 == 0) {
    warp_os[tid / 32] = os;
    warp_ss[tid / 32] = ss;
  }
  __syncthreads();
  if (tid == 0) {
    os = ss = 0.0;
    for (int w = 0; w < warps; ++w) {
      os += warp_os[w];
      ss += warp_ss[w];
    }
  }
}

// The orbital energies of a pair space: occupied rows i and columns j, virtuals a (rows') and b.
struct PairEnergies {
  const double *eps_i, *eps_j, *eps_a, *eps_b;
};

// One (a, b) of a same-spin tile pair: a diagonal tile (A = B) holds both orders of (a, b) itself;
// off the diagonal the element stands for (a, b) and (b, a).
__device__ __forceinline__ void add_same_spin_terms(double t_ab, double t_ba, double delta, bool diagonal_tile,
                                                    double& os, double& ss) {
  if (diagonal_tile) {
    os += t_ab * t_ab / delta;
    ss += t_ab * (t_ab - t_ba) / delta;
  } else {
    os += (t_ab * t_ab + t_ba * t_ba) / delta;
    ss += (t_ab - t_ba) * (t_ab - t_ba) / delta;
  }
}

// ---- loop: reduction of one T_flat chunk ---------------------------------------------------------
// Each pair's tiles are shared out over `groups` blocks (blockIdx.y): one block per pair left a
// chunk of 16 pairs on 16 SMs, each block walking its whole T_ij one dependent load after another
// (ncu: 1 % SM throughput; every chunk's reduction took one block's latency, ~0.4 ms).

template <typename Real>
struct ChunkArgs {
  const Real* T;            // T_flat[(i − i0)·nvir_a + a][(j − j0)·nvir_b + b] = T_ij,ab
  std::size_t ldt;
  int i0, j0, ncols;        // pair p = blockIdx.x of the launch is (i0 + p / ncols, j0 + p % ncols)
  int nvir_a, nvir_b;
  PairEnergies eps;
  bool triangular, same_spin;
  int groups;               // blocks per pair (gridDim.y); block g takes the pair's tiles g, g + groups, …
  double* partials;         // (os, ss) per block, weighted, at p·groups + g
};

constexpr int kReduceTile = 32, kReduceRows = 8;  // 32 × 8 threads per block
constexpr int kReduceSteps = kReduceTile / kReduceRows;

// Tile pair q of the list A ≤ B over `tiles` tile rows, row by row.
__device__ __forceinline__ int2 upper_tile_pair(int q, int tiles) {
  int A = 0;
  while (q >= tiles - A) q -= tiles - A++;
  return {A, A + q};
}

// One same-spin tile pair (A ≤ B) of T_ij (n × n, row stride ldt): T_ab read straight into
// registers, T_ba staged through `tile`; both loads issued before the barrier.
template <typename Real>
__device__ __forceinline__ void reduce_tile_pair(const Real* Tij, std::size_t ldt, int n, int2 AB, double eps_ij,
                                                 const PairEnergies& eps, Real (&tile)[kReduceTile][kReduceTile + 1],
                                                 double& os, double& ss) {
  const int tx = threadIdx.x, ty = threadIdx.y, A0 = AB.x * kReduceTile, B0 = AB.y * kReduceTile;
  Real t_ab[kReduceSteps];
  __syncthreads();  // the previous tile pair's reads of `tile` are done
#pragma unroll
  for (int s = 0; s < kReduceSteps; ++s) {
    const int r = ty + s * kReduceRows;
    tile[r][tx] = B0 + r < n && A0 + tx < n ? Tij[std::size_t(B0 + r) * ldt + A0 + tx] : Real(0);
    t_ab[s] = A0 + r < n && B0 + tx < n ? Tij[std::size_t(A0 + r) * ldt + B0 + tx] : Real(0);
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < kReduceSteps; ++s) {
    const int a = A0 + ty + s * kReduceRows, b = B0 + tx;
    if (a >= n || b >= n) continue;
    const double delta = eps_ij - eps.eps_a[a] - eps.eps_b[b];
    add_same_spin_terms(t_ab[s], tile[tx][ty + s * kReduceRows], delta, AB.x == AB.y, os, ss);
  }
}

// One opposite-spin tile (A, B) of T_ij (nvir_a × nvir_b): os only.
template <typename Real>
__device__ __forceinline__ void reduce_tile(const Real* Tij, const ChunkArgs<Real>& args, int2 AB, double eps_ij,
                                            double& os) {
  const int tx = threadIdx.x, ty = threadIdx.y, b = AB.y * kReduceTile + tx;
  Real t[kReduceSteps];
#pragma unroll
  for (int s = 0; s < kReduceSteps; ++s) {
    const int a = AB.x * kReduceTile + ty + s * kReduceRows;
    t[s] = a < args.nvir_a && b < args.nvir_b ? Tij[std::size_t(a) * args.ldt + b] : Real(0);
  }
#pragma unroll
  for (int s = 0; s < kReduceSteps; ++s) {
    const int a = AB.x * kReduceTile + ty + s * kReduceRows;
    if (a < args.nvir_a && b < args.nvir_b) {
      const double tt = t[s];
      os += tt * tt / (eps_ij - args.eps.eps_a[a] - args.eps.eps_b[b]);
    }
  }
}

// Tiles (same spin: tile pairs A ≤ B) of one pair's T_ij, shared out over a launch's groups.
__host__ __device__ inline int reduce_tiles(int nvir_a, int nvir_b, bool same_spin) {
  const int ta = (nvir_a + kReduceTile - 1) / kReduceTile, tb = (nvir_b + kReduceTile - 1) / kReduceTile;
  return same_spin ? ta * (ta + 1) / 2 : ta * tb;
}

template <typename Real>
__global__ void __launch_bounds__(kReduceTile * kReduceRows) reduce_pairs(ChunkArgs<Real> args) {
  __shared__ Real tile[kReduceTile][kReduceTile + 1];  // T[B0 + r][A0 + c]: T_ba of the tile pair
  const int p = blockIdx.x, g = blockIdx.y, i = args.i0 + p / args.ncols, j = args.j0 + p % args.ncols;
  double os = 0.0, ss = 0.0;
  if (!(args.triangular && j > i)) {  // above the diagonal: T_ji = T_ijᵀ is summed as (j, i)
    const Real* Tij = args.T + std::size_t(i - args.i0) * args.nvir_a * args.ldt + std::size_t(j - args.j0) * args.nvir_b;
    const double eps_ij = args.eps.eps_i[i] + args.eps.eps_j[j];
    const int tiles = reduce_tiles(args.nvir_a, args.nvir_b, args.same_spin);
    const int tb = (args.nvir_b + kReduceTile - 1) / kReduceTile;
    for (int q = g; q < tiles; q += args.groups) {  // uniform over the block: its barriers are safe
      if (args.same_spin)
        reduce_tile_pair(Tij, args.ldt, args.nvir_a, upper_tile_pair(q, tb), eps_ij, args.eps, tile, os, ss);
      else
        reduce_tile(Tij, args, int2{q / tb, q % tb}, eps_ij, os);
    }
  }
  block_sum(os, ss);
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    const double w = pair_weight(args.same_spin, args.triangular, i, j);
    const std::size_t slot = 2 * (std::size_t(p) * args.groups + g);
    args.partials[slot] = w * os;
    args.partials[slot + 1] = w * ss;
  }
}

// ---- fused: GEMM and reduction of one tile pair in one block -------------------------------------

template <typename Real>
struct FusedArgs {
  const Real *rows, *cols;  // B blocks on the device, [i][a][P] and [j][b][P]
  int naux, nvir_a, nvir_b;
  const int2* pairs;        // (i, j) of each blockIdx.y, indices into rows and cols
  const int2* tiles;        // (A, B) of each blockIdx.x
  PairEnergies eps;
  bool triangular;
  double* partials;         // (os, ss) per block, weighted
};

constexpr int kFusedEdge = 64;     // virtuals per tile edge
constexpr int kFusedMicro = 4;     // each thread holds 4 × 4 elements of each tile
constexpr int kFusedK = 16;        // auxiliary functions per shared-memory stage
constexpr int kFusedThreads = 256; // 16 × 16

static_assert(kFusedEdge == kFusedMicro * 16 && kFusedEdge * kFusedK == 4 * kFusedThreads);

// A panel: kFusedK auxiliary functions of kFusedEdge rows, stored k-major (rows contiguous for the
// threads' 4-wide reads), padded by 16 bytes against bank conflicts on the transposing stores.
template <typename Real>
struct Panel {
  static constexpr int kStride = kFusedEdge + 16 / int(sizeof(Real));
  __align__(16) Real v[kFusedK][kStride];
};

// This thread's share of a panel's next stage: rows row0.. of block `tensor` (nvir rows per
// orbital `orbital`), auxiliary functions k0.. (zeros past the ends).
template <typename Real>
__device__ __forceinline__ void fetch(Real (&out)[4], const Real* tensor, int orbital, int nvir, int naux, int row0,
                                      int k0) {
  const Real* base = tensor + std::size_t(orbital) * nvir * naux;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int idx = threadIdx.x + q * kFusedThreads, row = idx / kFusedK, k = k0 + idx % kFusedK;
    out[q] = row0 + row < nvir && k < naux ? base[std::size_t(row0 + row) * naux + k] : Real(0);
  }
}

template <typename Real>
__device__ __forceinline__ void stash(Panel<Real>& panel, const Real (&in)[4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int idx = threadIdx.x + q * kFusedThreads;
    panel.v[idx % kFusedK][idx / kFusedK] = in[q];
  }
}

// Four consecutive shared-memory elements in 16-byte loads (the panels' rows are 16-byte aligned).
__device__ __forceinline__ void read4(float (&out)[4], const float* p) {
  const float4 v = *reinterpret_cast<const float4*>(p);
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
}
__device__ __forceinline__ void read4(double (&out)[4], const double* p) {
  const double2 lo = *reinterpret_cast<const double2*>(p), hi = *reinterpret_cast<const double2*>(p + 2);
  out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
}

// The pair (i, j) and the tile pair of this block: a = A0 + …, b = B0 + … .
struct TilePair {
  int i, j, A0, B0;
};
template <typename Real>
__device__ __forceinline__ TilePair tile_pair_of_block(const FusedArgs<Real>& args) {
  const int2 pair = args.pairs[blockIdx.y], tile = args.tiles[blockIdx.x];
  return {pair.x, pair.y, tile.x * kFusedEdge, tile.y * kFusedEdge};
}

// The block's (os, ss), weighted, to its slot of the partial sums (one per block of the grid).
template <typename Real>
__device__ __forceinline__ void store_block_sums(const FusedArgs<Real>& args, bool same_spin, const TilePair& at,
                                                 double os, double ss) {
  block_sum(os, ss);
  if (threadIdx.x == 0) {
    const double w = pair_weight(same_spin, args.triangular, at.i, at.j);
    const std::size_t slot = 2 * (std::size_t(blockIdx.y) * gridDim.x + blockIdx.x);
    args.partials[slot] = w * os;
    args.partials[slot + 1] = w * ss;
  }
}

// This thread's share of the next stage of the four panels B_i[A], B_j[B], B_i[B], B_j[A] (the
// first two for opposite spins).
template <typename Real, bool kSameSpin>
__device__ __forceinline__ void fetch_panels(Real (&next)[4][4], const FusedArgs<Real>& args, const TilePair& at,
                                             int k0) {
  fetch(next[0], args.rows, at.i, args.nvir_a, args.naux, at.A0, k0);
  fetch(next[1], args.cols, at.j, args.nvir_b, args.naux, at.B0, k0);
  if constexpr (kSameSpin) {
    fetch(next[2], args.rows, at.i, args.nvir_a, args.naux, at.B0, k0);
    fetch(next[3], args.cols, at.j, args.nvir_b, args.naux, at.A0, k0);
  }
}

template <typename Real, bool kSameSpin>
__device__ __forceinline__ void stash_panels(Panel<Real>& Ai, Panel<Real>& Bj, Panel<Real>& Bi, Panel<Real>& Aj,
                                             const Real (&next)[4][4]) {
  stash(Ai, next[0]);
  stash(Bj, next[1]);
  if constexpr (kSameSpin) {
    stash(Bi, next[2]);
    stash(Aj, next[3]);
  }
}

// One stage's kFusedK auxiliary functions added to this thread's 4 × 4 of T_ab (and of T_ba).
template <typename Real, bool kSameSpin>
__device__ __forceinline__ void multiply_panels(Real (&acc_ab)[4][4], Real (&acc_ba)[4][4], const Panel<Real>& Ai,
                                                const Panel<Real>& Bj, const Panel<Real>& Bi, const Panel<Real>& Aj,
                                                int tx, int ty) {
#pragma unroll
  for (int k = 0; k < kFusedK; ++k) {
    Real ai[4], bj[4];
    read4(ai, &Ai.v[k][4 * ty]);
    read4(bj, &Bj.v[k][4 * tx]);
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc_ab[r][c] += ai[r] * bj[c];
    if constexpr (kSameSpin) {
      Real bi[4], aj[4];
      read4(bi, &Bi.v[k][4 * tx]);
      read4(aj, &Aj.v[k][4 * ty]);
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 4; ++c) acc_ba[r][c] += bi[c] * aj[r];
    }
  }
}

// This thread's share of the tile pair's (os, ss) from its 4 × 4 of T_ab and T_ba.
template <typename Real, bool kSameSpin>
__device__ __forceinline__ void reduce_thread_tiles(const Real (&acc_ab)[4][4], const Real (&acc_ba)[4][4],
                                                    const FusedArgs<Real>& args, const TilePair& at, int tx, int ty,
                                                    double& os, double& ss) {
  const double eps_ij = args.eps.eps_i[at.i] + args.eps.eps_j[at.j];
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const int a = at.A0 + 4 * ty + r, b = at.B0 + 4 * tx + c;
      if (a >= args.nvir_a || b >= args.nvir_b) continue;
      const double delta = eps_ij - args.eps.eps_a[a] - args.eps.eps_b[b], t_ab = acc_ab[r][c];
      if constexpr (kSameSpin)
        add_same_spin_terms(t_ab, acc_ba[r][c], delta, at.A0 == at.B0, os, ss);
      else
        os += t_ab * t_ab / delta;
    }
}

template <typename Real, bool kSameSpin>
__global__ void __launch_bounds__(kFusedThreads) fused_pairs(FusedArgs<Real> args) {
  __shared__ Panel<Real> Ai, Bj, Bi, Aj;  // B_i[A], B_j[B], B_i[B], B_j[A]
  const TilePair at = tile_pair_of_block(args);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  // T_ab and T_ba for a = A0 + 4ty + r, b = B0 + 4tx + c, accumulated in the precision of B (as
  // the CPU's GEMMs do); the energy sums are fp64.
  Real acc_ab[4][4] = {}, acc_ba[4][4] = {};
  Real next[4][4];
  fetch_panels<Real, kSameSpin>(next, args, at, 0);
  for (int k0 = 0; k0 < args.naux; k0 += kFusedK) {
    __syncthreads();  // the previous stage is read
    stash_panels<Real, kSameSpin>(Ai, Bj, Bi, Aj, next);
    __syncthreads();
    // in flight while this stage computes
    if (k0 + kFusedK < args.naux) fetch_panels<Real, kSameSpin>(next, args, at, k0 + kFusedK);
    multiply_panels<Real, kSameSpin>(acc_ab, acc_ba, Ai, Bj, Bi, Aj, tx, ty);
  }
  double os = 0.0, ss = 0.0;
  reduce_thread_tiles<Real, kSameSpin>(acc_ab, acc_ba, args, at, tx, ty, os, ss);
  store_block_sums(args, kSameSpin, at, os, ss);
}

// ---- fused in fp64 on the tensor cores (DMMA) -----------------------------------------------------
// The same tile pair as fused_pairs with mma.sync m8n8k4 (fp64). Same spin: warps 0-3 form T_ij[A,B]
// and warps 4-7 T_ij[B,A]ᵀ (T_ba held at (a, b)), each a 32 × 32 region (4 × 4 tiles of 8 × 8: 8
// shared loads per 16 mma, against 12 when every warp formed 16 × 32 of both); the T_ba warps'
// fragments then pass through shared memory to the T_ab warps, which reduce. On a diagonal tile
// (A = B) T_ba is T_ab transposed: the T_ba warps idle and the T_ab warps read their own fragments
// transposed (each such product was 1/8 of the medium shape's work). Opposite spin: T_ab only,
// each warp 16 × 32 (2 × 4 tiles). Fragments (PTX ISA, m8n8k4 .f64): A row g = lane/4, column (k)
// t = lane%4; B row (k) t, column g; C rows g, columns 2t and 2t + 1.
// The panels' stages are copied global → shared with cp.async into two buffers: stage s + 1 travels
// while stage s computes, without registers (a register prefetch spilled: 88 bytes, 1.16e9 local
// memory requests on the medium shape, ncu).

// A panel's stage in shared memory: kFusedEdge rows (virtuals) of kFusedK auxiliary functions,
// rows kDmmaStride doubles apart: 160 bytes, 16-byte aligned for cp.async, and ≡ 4 mod 16 doubles,
// so that a fragment's reads (half a warp: rows g = 0..3, columns t = 0..3) meet 32 banks.
constexpr int kDmmaStride = kFusedK + 4;
constexpr int kDmmaPanelDoubles = kFusedEdge * kDmmaStride;

// Panels per stage: B_i[A], B_j[B], and for same spin B_j[A], B_i[B].
__host__ __device__ constexpr int dmma_panels(bool same_spin) { return same_spin ? 4 : 2; }
// fused_pairs_dmma's dynamic shared memory: two stages, the one read and the one filled.
__host__ __device__ constexpr std::size_t dmma_shared_bytes(bool same_spin) {
  return 2 * std::size_t(dmma_panels(same_spin)) * kDmmaPanelDoubles * sizeof(double);
}

static_assert(kFusedEdge * kFusedK / 2 % kFusedThreads == 0 && kFusedEdge * kFusedK % kFusedThreads == 0);

__device__ __forceinline__ void dmma(double (&d)[2], double a, double b) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(d[0]), "+d"(d[1])
               : "d"(a), "d"(b));
}

// cp.async (sm_80 and newer): `bytes` (16 or 8) from global src to shared dst, or zeros where
// !valid (source size 0: nothing is read); each thread's copies complete by commit groups.
template <int kBytes>
__device__ __forceinline__ void copy_async(double* dst, const double* src, bool valid) {
  const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 16 : 0) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(to), "l"(src), "r"(valid ? 8 : 0) : "memory");
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most kPending of this thread's newest groups are still in flight.
template <int kPending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// This thread's share of one panel's stage: rows row0.. of orbital `orbital` (nvir rows each) of
// `tensor`, auxiliary functions k0.., zeros past the ends. In 16-byte pieces only when naux is even
// (every row then starts 16-byte aligned: the tensor is a cudaMalloc'd slot), else element by element.
template <int kBytes>
__device__ __forceinline__ void copy_panel(double* panel, const double* tensor, int orbital, int nvir, int naux, int row0,
                                           int k0) {
  constexpr int kPer = kBytes / int(sizeof(double)), kPieces = kFusedK / kPer;  // per row of the stage
  const double* base = tensor + std::size_t(orbital) * nvir * naux;
  // Element by element not unrolled: its 16 addresses a stage held live cost 8 bytes of spill.
#pragma unroll(kBytes == 16 ? kFusedEdge * kPieces / kFusedThreads : 1)
  for (int q = 0; q < kFusedEdge * kPieces / kFusedThreads; ++q) {
    const int idx = threadIdx.x + q * kFusedThreads, row = idx / kPieces, k = kPer * (idx % kPieces);
    const bool valid = row0 + row < nvir && k0 + k < naux;
    copy_async<kBytes>(panel + row * kDmmaStride + k, valid ? base + std::size_t(row0 + row) * naux + k0 + k : tensor,
                       valid);
  }
}

// Stage k0.. of the block's panels into `stage`, as one commit group (a diagonal tile's B_j[A] and
// B_i[B] are not needed: its T_ba warps idle).
template <bool kSameSpin, int kBytes>
__device__ __forceinline__ void copy_stage(double* stage, const FusedArgs<double>& args, const TilePair& at, int k0) {
  copy_panel<kBytes>(stage, args.rows, at.i, args.nvir_a, args.naux, at.A0, k0);
  copy_panel<kBytes>(stage + kDmmaPanelDoubles, args.cols, at.j, args.nvir_b, args.naux, at.B0, k0);
  if constexpr (kSameSpin) {
    if (at.A0 != at.B0) {
      copy_panel<kBytes>(stage + 2 * kDmmaPanelDoubles, args.cols, at.j, args.nvir_b, args.naux, at.A0, k0);
      copy_panel<kBytes>(stage + 3 * kDmmaPanelDoubles, args.rows, at.i, args.nvir_a, args.naux, at.B0, k0);
    }
  }
  copy_async_commit();
}

// The warp's region of one stage's product: kM × 4 tiles of 8 × 8, 4 auxiliary functions per mma;
// product 0: B_i[A] B_j[B]ᵀ (T_ab), 1: B_j[A] B_i[B]ᵀ (T_ba at (a, b)).
template <int kM>
__device__ __forceinline__ void multiply_stage_dmma(double (&acc)[kM][4][2], const double* stage, int product, int rows0,
                                                    int cols0, int g, int t) {
  const double* left = stage + 2 * product * kDmmaPanelDoubles;  // B_i[A] or B_j[A]
  const double* right = left + kDmmaPanelDoubles;                 // B_j[B] or B_i[B]
#pragma unroll
  for (int k = 0; k < kFusedK; k += 4) {
    double a[kM], b[4];
#pragma unroll
    for (int m = 0; m < kM; ++m) a[m] = left[(rows0 + 8 * m + g) * kDmmaStride + k + t];
#pragma unroll
    for (int n = 0; n < 4; ++n) b[n] = right[(cols0 + 8 * n + g) * kDmmaStride + k + t];
#pragma unroll
    for (int m = 0; m < kM; ++m)
#pragma unroll
      for (int n = 0; n < 4; ++n) dmma(acc[m][n], a[m], b[n]);
  }
}

// The warp's fragments over all auxiliary functions, two stages in flight: step s fills the buffer
// of stage s + 1 — read at step s − 1 and released by its closing barrier — then waits for its own
// copies of stage s (an empty group on the last step keeps the count) and for everyone's at the
// barrier. An idle warp (a diagonal tile's T_ba) copies and meets the barriers only.
template <bool kSameSpin, int kBytes, int kM>
__device__ __forceinline__ void accumulate_dmma(double (&acc)[kM][4][2], double* stages, const FusedArgs<double>& args,
                                                const TilePair& at, int product, bool idle, int rows0, int cols0, int g,
                                                int t) {
  constexpr int kStageDoubles = dmma_panels(kSameSpin) * kDmmaPanelDoubles;
  const int steps = (args.naux + kFusedK - 1) / kFusedK;
  copy_stage<kSameSpin, kBytes>(stages, args, at, 0);
  for (int s = 0; s < steps; ++s) {
    if (s + 1 < steps)
      copy_stage<kSameSpin, kBytes>(stages + (s + 1) % 2 * kStageDoubles, args, at, (s + 1) * kFusedK);
    else
      copy_async_commit();
    copy_async_wait<1>();
    __syncthreads();
    if (!idle) multiply_stage_dmma<kM>(acc, stages + s % 2 * kStageDoubles, product, rows0, cols0, g, t);
    __syncthreads();
  }
  copy_async_wait<0>();  // nothing left in flight at exit (naux = 0 included)
}

// Same spin: fragments staged in shared memory at their (a − A0, b − B0), rows kStagedStride doubles
// apart (≡ 8 mod 16: a quarter warp's 16-byte accesses, rows g and g + 1, meet 32 banks).
constexpr int kStagedStride = kFusedEdge + 8;
static_assert(kFusedEdge * kStagedStride <= 2 * 4 * kDmmaPanelDoubles, "the staged fragments reuse the stages");

__device__ __forceinline__ void stage_fragments(const double (&acc)[4][4][2], double* staged, int rows0, int cols0, int g,
                                                int t) {
#pragma unroll
  for (int m = 0; m < 4; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
      *reinterpret_cast<double2*>(staged + (rows0 + 8 * m + g) * kStagedStride + cols0 + 8 * n + 2 * t) =
          make_double2(acc[m][n][0], acc[m][n][1]);
}

// The terms of T_ab at (a, b) = (A0 + ra, b0 + cb) of a fused tile (none past nvir); same spin with
// T_ba from `staged` (on a diagonal tile T_ab's own, transposed). Shared by the fused DMMA kernels.
template <bool kSameSpin>
__device__ __forceinline__ void add_fused_terms(double t_ab, const double* staged, const FusedArgs<double>& args,
                                                const TilePair& at, int b0, int ra, int cb, double eps_ij,
                                                double& os, double& ss) {
  const int a = at.A0 + ra, b = b0 + cb;
  if (a >= args.nvir_a || b >= args.nvir_b) return;
  const double delta = eps_ij - args.eps.eps_a[a] - args.eps.eps_b[b];
  if constexpr (kSameSpin) {
    const bool diagonal = at.A0 == at.B0;
    const double t_ba = staged[diagonal ? cb * kStagedStride + ra : ra * kStagedStride + cb];
    add_same_spin_terms(t_ab, t_ba, delta, diagonal, os, ss);
  } else {
    os += t_ab * t_ab / delta;
  }
}

// This thread's share of the tile pair's (os, ss) from its kM × 4 fragments of T_ab; same spin with
// T_ba of each (a, b) from `staged`.
template <int kM, bool kSameSpin>
__device__ __forceinline__ void reduce_fragments(const double (&acc)[kM][4][2], const double* staged,
                                                 const FusedArgs<double>& args, const TilePair& at, int rows0, int cols0,
                                                 int g, int t, double& os, double& ss) {
  const double eps_ij = args.eps.eps_i[at.i] + args.eps.eps_j[at.j];
#pragma unroll
  for (int m = 0; m < kM; ++m)
#pragma unroll
    for (int n = 0; n < 4; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        add_fused_terms<kSameSpin>(acc[m][n][e], staged, args, at, at.B0, rows0 + 8 * m + g, cols0 + 8 * n + 2 * t + e,
                                   eps_ij, os, ss);
}

// kBytes: cp.async's piece, 16 where naux is even, else 8 (one kernel each: both paths in one kernel
// left ptxas 8 bytes of spill under the 128 registers of its launch bounds).
template <bool kSameSpin, int kBytes>
__global__ void __launch_bounds__(kFusedThreads, 2) fused_pairs_dmma(FusedArgs<double> args) {
  extern __shared__ __align__(16) double dmma_stages[];  // [2][dmma_panels][kFusedEdge][kDmmaStride]
  constexpr int kM = kSameSpin ? 4 : 2;                  // the warp's region: 8·kM rows × 32 columns
  const TilePair at = tile_pair_of_block(args);
  const int warp = threadIdx.x / 32, g = (threadIdx.x % 32) / 4, t = threadIdx.x % 4;
  const int product = kSameSpin ? warp / 4 : 0, region = kSameSpin ? warp % 4 : warp;
  const int rows0 = (region / 2) * 8 * kM, cols0 = (region % 2) * 32;  // within the tiles
  const bool diagonal = kSameSpin && at.A0 == at.B0;
  double acc[kM][4][2] = {};  // [8-row tile][8-column tile][the thread's two]
  accumulate_dmma<kSameSpin, kBytes>(acc, dmma_stages, args, at, product, product == 1 && diagonal, rows0, cols0, g, t);
  if constexpr (kSameSpin) {  // the stages are read (accumulate_dmma's last barrier): T_ba's fragments go there
    if (product == (diagonal ? 0 : 1)) stage_fragments(acc, dmma_stages, rows0, cols0, g, t);
    __syncthreads();
  }
  double os = 0.0, ss = 0.0;
  if (product == 0) reduce_fragments<kM, kSameSpin>(acc, dmma_stages, args, at, rows0, cols0, g, t, os, ss);
  store_block_sums(args, kSameSpin, at, os, ss);
}

// ---- the call's total -----------------------------------------------------------------------------

constexpr int kSumThreads = 512;

// total[0..1] += the (os, ss) pairs of partials[0 .. 2n), summed in a fixed order.
__global__ void __launch_bounds__(kSumThreads) sum_partials(const double* partials, std::size_t n, double* total) {
  double os = 0.0, ss = 0.0;
  for (std::size_t k = threadIdx.x; k < n; k += kSumThreads) {
    os += partials[2 * k];
    ss += partials[2 * k + 1];
  }
  block_sum(os, ss);
  if (threadIdx.x == 0) {
    total[0] += os;
    total[1] += ss;
  }
}

}  // namespace dfmp2::kernels::gpu
