// Coulomb and exchange matrices from density-fitted factors stored packed (kernels/packed.hpp),
// in one pass over the factors:
//   γ_Q = Σ_μν B^Q_μν D_μν,   J_μν = Σ_Q B^Q_μν γ_Q,
//   X^Q = B^Q F,              K_μν = Σ_Q Σ_k X^Q_μk X^Q_νk,     with D = F Fᵀ.
// Threads take batches of Q; for each Q a thread copies the packed B^Q into one triangle of a
// square, forms X^Q by SYMM (which reads only that triangle), and adds the batch's X Xᵀ to its K
// with one SYRK (single-threaded BLAS inside the parallel region). J is summed in double; K's
// SYMM and SYRK run in Real, so float halves their cost (the SCF's early iterations) while K is
// still accumulated in double.
// Several spin densities (UHF's α and β) share the pass: each B^Q's square serves every spin's
// X^Q, J comes from their sum and each spin gets its own K.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dfmp2::kernels {

struct PackedFactors {
  const double* data = nullptr;  // row Q at data + Q · packed_size(nbf)
  std::size_t naux = 0, nbf = 0;
};

// Holds each thread's buffers across builds (an SCF calls it once per iteration).
class PackedJK {
 public:
  explicit PackedJK(const PackedFactors& B);
  ~PackedJK();
  PackedJK(const PackedJK&) = delete;
  PackedJK& operator=(const PackedJK&) = delete;

  // Spin densities D_s = F_s F_sᵀ, one (a closed shell, D = F Fᵀ) or up to kMaxSpins: F = [F_0 F_1
  // …] column-major nbf × Σ_s nf_s, F_s having nf_per_spin[s] columns. J from D = Σ_s D_s, K[s]
  // from D_s; J and each K[s] column-major nbf × nbf, overwritten.
  static constexpr std::size_t kMaxSpins = 2;
  template <typename Real>
  void build(const double* F, std::span<const std::size_t> nf_per_spin, double* J, std::span<double* const> K);

 private:
  struct Thread;
  PackedFactors B_;
  std::vector<Thread> threads_;
};

// Floating-point work of one packed_jk call: the SYMM and SYRK of K, the two passes of J (nf: all
// spins' columns).
double packed_jk_flops(std::size_t naux, std::size_t nbf, std::size_t nf);

// Per-thread buffers PackedJK allocates for builds of `spins` densities, nf columns in all, in
// bytes, for the caller's memory budget.
std::size_t packed_jk_workspace_bytes(std::size_t nbf, std::size_t nf, int threads, std::size_t spins);

}  // namespace dfmp2::kernels
