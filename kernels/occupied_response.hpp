// The closed-shell Fock response to an occupied–virtual density change, projected on the occupied
// orbitals, from density-fitted factors B^Q_μν stored block-packed: for Z = ½ (L C_oᵀ + C_o Lᵀ),
//   F(Z) C_o = (4J − 2K)(Z) C_o = Σ_Q [4 γ_Q X^Q − Y^Q M^Q − X^Q (C_oᵀ Y^Q)ᵀ],
//   X^Q = B^Q C_o,  M^Q = C_oᵀ B^Q C_o,  Y^Q = B^Q L,  γ_Q = tr(B^Q Z) = Σ_μi X^Q_μi L_μi,
// the products of the Z-vector (CPHF) equations, whose C_o is fixed. X^Q and M^Q are made once
// (cache) and kept, so each product costs one SYMM per Q (2 n² o) and three n·o² GEMMs, where a
// general J/K build of L C_oᵀ costs 6 n² o (two SYMMs and K's GEMM). The same factors give, for
// any symmetric D (the MP2 gradient's unrelaxed density),
//   F(D) C_o = Σ_Q [4 γ_Q X^Q − 2 B^Q (D X^Q)],  γ_Q = Σ_μν B^Q_μν D_μν,
// at 4 n² o per Q, where J and K of all of D would cost 3 n² rank(D).
// With an fp32 cache (X^Q and M^Q rounded to fp32, beside the fp64 one), a product of an L can
// run in fp32 (SGEMM/SSYMM on the rows rounded as they are unpacked), at about half the time and
// a relative error of about 1e-6: for iterations whose error a later fp64 product corrects.
// Threads take rows Q; each sums into its own F, and finish() adds them.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/precision.hpp"

namespace dfmp2::kernels {

class OccupiedResponse {
 public:
  // C_occ column-major nbf × nocc; `cache` holds cache_elements(…) doubles for `rows` rows Q, and
  // `cache_fp32`, when not null, as many floats; both must live as long as this.
  OccupiedResponse(const BlockPackedLayout& layout, const double* C_occ, std::size_t nocc, std::size_t rows,
                   double* cache, float* cache_fp32, int threads);

  static std::size_t cache_elements(std::size_t nbf, std::size_t nocc, std::size_t rows) {
    return rows * (nbf * nocc + nocc * nocc);
  }
  // Bytes of the threads' buffers (with an fp32 cache, their fp32 ones too).
  static std::size_t workspace_bytes(std::size_t nbf, std::size_t nocc, int threads, bool fp32);
  // Floating-point work of one product over `rows` rows: of an L, of a symmetric D.
  static double flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows);
  static double symmetric_flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows);

  // Makes X^Q and M^Q of rows [first, first + count) (every row once, before any product).
  void cache(std::size_t first, std::size_t count, const double* rows);
  // One product: begin with L (nbf × nocc, column-major, living until finish; fp32 only with an
  // fp32 cache) or with a symmetric D (nbf × nbf, column-major, likewise; fp64), add every row,
  // then finish writes F(Z) C_o or F(D) C_o (nbf × nocc, column-major) summed over these rows.
  void begin(const double* L, Precision precision = Precision::fp64);
  void begin_symmetric(const double* D);
  void add(std::size_t first, std::size_t count, const double* rows);
  void finish(double* FC_occ);

 private:
  template <typename Real>
  struct Buffers {
    std::vector<Real> square, Y, W, F;
  };
  struct Thread {
    Buffers<double> fp64;
    Buffers<float> fp32;  // empty without an fp32 cache
  };
  template <typename Visit>
  void for_rows(std::size_t first, std::size_t count, const double* rows, const Visit& visit);
  // Adds row q's share of F(Z) C_o in the precision of its arguments: C_o, that cache and L.
  template <typename Real>
  void add_row(Buffers<Real>& b, const double* row, const Real* C, const Real* cache, const Real* L) const;

  const BlockPackedLayout& layout_;
  const double* C_occ_;
  std::vector<float> C_occ_fp32_;
  std::size_t nbf_, nocc_, rows_;
  double* cache_;
  float* cache_fp32_;
  Precision precision_ = Precision::fp64;
  const double* L_ = nullptr;
  std::vector<float> L_fp32_;
  const double* D_ = nullptr;
  std::vector<double> D_weights_;  // pack_weighted(D): γ_Q is its dot product with a stored row
  std::vector<Thread> threads_;
};

}  // namespace dfmp2::kernels
