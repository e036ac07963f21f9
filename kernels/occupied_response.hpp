// The Fock response to occupied–virtual density changes, projected on the occupied orbitals, from
// density-fitted factors B^Q_μν stored block-packed, for one closed-shell set of orbitals (RHF) or
// the two spins' sets (UHF), s and t each a set with occupied orbitals C_s: for changes L_s,
//   F_s C_s = Σ_Q [2w γ_Q X_s^Q − Y_s^Q M_s^Q − X_s^Q (C_sᵀ Y_s^Q)ᵀ],  γ_Q = Σ_t X_t^Q · L_t,
//   X_s^Q = B^Q C_s,  M_s^Q = C_sᵀ B^Q C_s,  Y_s^Q = B^Q L_s,
// w = 2 / sets the electrons an orbital of a set holds. RHF's one set gives (4J − 2K)(Z) C_o,
// Z = ½ (L C_oᵀ + C_o Lᵀ); UHF's two give [J(Z_α + Z_β) − K(Z_s)] C_s, Z_s = L_s C_sᵀ + C_s L_sᵀ:
// the products of the Z-vector (CPHF) equations, whose C_s are fixed. X_s^Q and M_s^Q are made
// once (cache) and kept, so each product costs one SYMM per Q and set (2 n² o) and three n·o²
// GEMMs, where a general J/K build of L C_oᵀ costs 6 n² o (two SYMMs and K's GEMM). The same
// factors give, for symmetric D_s (the MP2 gradient's unrelaxed densities),
//   F_s(D) C_s = Σ_Q [2w γ_Q X_s^Q − 2 B^Q (D_s X_s^Q)],  γ_Q = Σ_t Σ_μν B^Q_μν (D_t)_μν,
// RHF's (4J − 2K)(D) C_o, UHF's 2 [J(D_α + D_β) − K(D_s)] C_s, at 4 n² o per Q and set, where J
// and K of all of D would cost 3 n² rank(D).
// With an fp32 cache (X^Q and M^Q rounded to fp32, beside the fp64 one), a product of L's can run
// in fp32 (SGEMM/SSYMM on the rows rounded as they are unpacked), at about half the time and a
// relative error of about 1e-6: for iterations whose error a later fp64 product corrects.
// Threads take rows Q; each sums into its own F_s, and finish() adds them.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/precision.hpp"

namespace dfmp2::kernels {

class OccupiedResponse {
 public:
  // One set's C_s (column-major nbf × nocc) and its caches: `cache` holds cache_elements(…) doubles
  // for the rows Q, and `cache_fp32` (of every set with orbitals, or none) as many floats; all live
  // as long as the response.
  struct Set {
    const double* C_occ;
    std::size_t nocc;
    double* cache;
    float* cache_fp32;
  };
  OccupiedResponse(const BlockPackedLayout& layout, std::vector<Set> sets, std::size_t rows, int threads);

  static std::size_t cache_elements(std::size_t nbf, std::size_t nocc, std::size_t rows) {
    return rows * (nbf * nocc + nocc * nocc);
  }
  // Bytes of the threads' buffers for sets of `nocc` orbitals each (with an fp32 cache, their fp32
  // ones too).
  static std::size_t workspace_bytes(std::size_t nbf, std::span<const std::size_t> nocc, int threads, bool fp32);
  // Floating-point work of one product over `rows` rows: of L's, of symmetric D's.
  static double flops(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t stored, std::size_t rows);
  static double symmetric_flops(std::size_t nbf, std::span<const std::size_t> nocc, std::size_t stored,
                                std::size_t rows);

  // Makes X_s^Q and M_s^Q of rows [first, first + count) (every row once, before any product).
  void cache(std::size_t first, std::size_t count, const double* rows);
  // One product: begin with each set's L_s (nbf × nocc_s, column-major, living until finish; fp32
  // only with an fp32 cache) or symmetric D_s (nbf × nbf, column-major, likewise; fp64), add every
  // row, then finish writes each F_s C_s (nbf × nocc_s, column-major) summed over these rows.
  void begin(std::span<const double* const> L, Precision precision = Precision::fp64);
  void begin_symmetric(std::span<const double* const> D);
  void add(std::size_t first, std::size_t count, const double* rows);
  void finish(std::span<double* const> FC_occ);

 private:
  template <typename Real>
  struct Buffers {
    std::vector<Real> square;
    std::vector<std::vector<Real>> Y, W, F;  // per set
  };
  struct Thread {
    Buffers<double> fp64;
    Buffers<float> fp32;  // empty without an fp32 cache
  };
  // A set's arguments of the begun product, and its C_s and L_s rounded for fp32 products.
  struct SetState {
    Set set;
    std::vector<float> C_fp32, L_fp32;
    const double* L = nullptr;
    const double* D = nullptr;
    std::vector<double> D_weights;  // pack_weighted(D_s): its γ share is the dot product with a stored row
  };
  template <typename Visit>
  void for_rows(std::size_t first, std::size_t count, const double* rows, const Visit& visit);
  // Adds row q's share of every F_s C_s of L's in the precision Real (fp64, or fp32 from the fp32
  // caches), and of D's.
  template <typename Real>
  void add_row(Buffers<Real>& b, const double* row, std::size_t q) const;
  void add_symmetric_row(Buffers<double>& b, const double* row, std::size_t q) const;
  std::size_t per_row(std::size_t s) const { return cache_elements(nbf_, sets_[s].set.nocc, 1); }

  const BlockPackedLayout& layout_;
  std::vector<SetState> sets_;
  std::size_t nbf_, rows_;
  double coulomb_weight_;  // 2w = 4 / sets
  bool fp32_;              // with fp32 caches
  bool symmetric_ = false;
  Precision precision_ = Precision::fp64;
  std::vector<Thread> threads_;
};

}  // namespace dfmp2::kernels
