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
// Threads take rows Q; each sums into its own F, and finish() adds them.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/block_packed.hpp"

namespace dfmp2::kernels {

class OccupiedResponse {
 public:
  // C_occ column-major nbf × nocc; `cache` holds cache_elements(…) doubles for `rows` rows Q and
  // must live as long as this.
  OccupiedResponse(const BlockPackedLayout& layout, const double* C_occ, std::size_t nocc, std::size_t rows,
                   double* cache, int threads);

  static std::size_t cache_elements(std::size_t nbf, std::size_t nocc, std::size_t rows) {
    return rows * (nbf * nocc + nocc * nocc);
  }
  // Bytes of the threads' buffers.
  static std::size_t workspace_bytes(std::size_t nbf, std::size_t nocc, int threads);
  // Floating-point work of one product over `rows` rows: of an L, of a symmetric D.
  static double flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows);
  static double symmetric_flops(std::size_t nbf, std::size_t nocc, std::size_t stored, std::size_t rows);

  // Makes X^Q and M^Q of rows [first, first + count) (every row once, before any product).
  void cache(std::size_t first, std::size_t count, const double* rows);
  // One product: begin with L (nbf × nocc, column-major, living until finish) or with a symmetric
  // D (nbf × nbf, column-major, likewise), add every row, then finish writes F(Z) C_o or F(D) C_o
  // (nbf × nocc, column-major) summed over these rows.
  void begin(const double* L);
  void begin_symmetric(const double* D);
  void add(std::size_t first, std::size_t count, const double* rows);
  void finish(double* FC_occ);

 private:
  struct Thread {
    std::vector<double> square, Y, W, F;
  };
  template <typename Visit>
  void for_rows(std::size_t first, std::size_t count, const double* rows, const Visit& visit);
  const double* X(std::size_t q) const { return cache_ + q * (nbf_ * nocc_ + nocc_ * nocc_); }
  const double* M(std::size_t q) const { return X(q) + nbf_ * nocc_; }

  const BlockPackedLayout& layout_;
  const double* C_occ_;
  std::size_t nbf_, nocc_, rows_;
  double* cache_;
  const double* L_ = nullptr;
  const double* D_ = nullptr;
  std::vector<double> D_weights_;  // pack_weighted(D): γ_Q is its dot product with a stored row
  std::vector<Thread> threads_;
};

}  // namespace dfmp2::kernels
