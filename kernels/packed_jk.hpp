// Coulomb and exchange matrices from density-fitted factors B^Q_μν stored block-packed
// (kernels/block_packed.hpp), in one pass over the factors, which may arrive in blocks of Q
// (read from disk while the previous block is used). For densities given by factors,
// D_s = L_s R_sᵀ (R_s = L_s for a symmetric density, e.g. D = C_occ C_occᵀ):
//   γ_Q = Σ_μν B^Q_μν D_μν,   J_s = Σ_Q γ_Q B^Q,
//   K_s = Σ_Q (B^Q L_s)(B^Q R_s)ᵀ,
// as Psi4's JK takes C_left and C_right: the SCF's densities and the response equations' (CPHF,
// gradients) non-symmetric ones alike.
// Threads take batches of Q; for each Q a thread forms X^Q = B^Q L_s (and B^Q R_s) and adds the
// batch's X_L X_Rᵀ to its K_s with one SYRK (symmetric densities) or GEMM (single-threaded BLAS
// inside the parallel region). X^Q comes from one SYMM over B^Q copied into one triangle of a
// square — or, when Schwarz screening leaves most of the square zero, by row groups (a few
// consecutive shells): the batch's elements of a group's rows in the columns stored in any of
// them are gathered and multiplied by those rows of L_s in one GEMM, as Psi4's DiskDFJK gathers
// each function's significant pairs. J is summed in double; the products of K run in the
// precision asked for, so fp32 halves their cost (the SCF's early iterations) while K is still
// summed in double.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "kernels/block_packed.hpp"
#include "kernels/precision.hpp"

namespace dfmp2::kernels {

// D = L Rᵀ; L and R column-major nbf × columns. right == nullptr: R = L (D symmetric).
struct DensityFactors {
  const double* left = nullptr;
  const double* right = nullptr;
  std::size_t columns = 0;
  bool symmetric() const { return right == nullptr; }
};

// How X^Q = B^Q L covers the squares of a layout.
struct ProductExtent {
  std::size_t multiplied = 0;    // elements of each B^Q square multiplied
  std::size_t most_columns = 0;  // of one row group (0: no groups, one SYMM)
  std::size_t widest_group = 0;  // most elements of one group's rows in its columns
};

// The sizes of one build, for its work and for the caller's memory budget.
struct JKShape {
  std::size_t nbf = 0, stored = 0;    // the layout's n and stored elements
  std::size_t densities = 0;
  std::size_t symmetric_columns = 0;  // Σ_s columns of the symmetric densities' L_s
  std::size_t general_columns = 0;    // Σ_s columns of the others' L_s (their R_s have as many)
  ProductExtent product;
  std::size_t factor_columns() const { return symmetric_columns + 2 * general_columns; }
};

class PackedJK {
 public:
  PackedJK(const BlockPackedLayout& layout, int threads);
  ~PackedJK();
  PackedJK(const PackedJK&) = delete;
  PackedJK& operator=(const PackedJK&) = delete;

  // How the products cover this layout's squares (cheap: from its blocks alone).
  static ProductExtent product_extent(const BlockPackedLayout& layout);
  // The shape of a build of these densities.
  JKShape shape(std::span<const DensityFactors> densities) const;
  // Starts J and K of each density; the factors must live until finish().
  void begin(std::span<const DensityFactors> densities, Precision precision);
  // Adds `count` rows B^Q, each layout.size() elements, row q at rows + q·layout.size().
  void add(const double* rows, std::size_t count);
  // J_s and K_s (column-major nbf × nbf, overwritten), one pointer per density.
  void finish(std::span<double* const> J, std::span<double* const> K);

  // Bytes of the buffers that builds of up to this shape's factor columns allocate with `threads`
  // threads (the threads' buffers persist between builds).
  static std::size_t workspace_bytes(const JKShape& shape, int threads);
  // Floating-point work of one build over naux rows.
  static double flops(const JKShape& shape, std::size_t naux);

  // The row groups and the columns significant to each (packed_jk.cpp).
  struct RowGroups;

 private:
  struct Thread;
  struct Build;
  const BlockPackedLayout& layout_;
  std::unique_ptr<RowGroups> groups_;
  std::vector<Thread> threads_;
  std::unique_ptr<Build> build_;
};

}  // namespace dfmp2::kernels
