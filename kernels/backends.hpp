// The energy backends, one file each (backend_<name>.cpp). Adding one: write its file, declare it
// here, and register it in mp2_energy.cpp (name table + dispatch).
#pragma once

#include <memory>

#include "kernels/energy_reduction.hpp"
#include "kernels/mp2_energy.hpp"

namespace dfmp2::kernels::detail {

// The occupied pairs (i, j) a backend sums: i over the rows' orbitals, j over the columns', with
// T_ij,ab = Σ_P B_ia^P B_jb^P, a over the rows' virtuals and b over the columns'.
// Same spin (RHF, or one spin of UHF): rows and columns share one set of virtuals, so T_ij,ba is
// there for E_SS. Triangular: columns are the rows and only j ≤ i is formed (T_ji = T_ijᵀ),
// i ≠ j counting twice. Otherwise two disjoint blocks, every (i, j) counting twice (for (j, i)
// as well).
// Opposite spin (UHF's αβ): rows of one spin, columns of the other, each with its own virtuals;
// T_ij is nvir_rows × nvir_cols, every (i, j) counts once and only E_OS is summed.
template <typename Real>
struct PairSpace {
  BiaView<Real> rows, cols;
  std::span<const double> eps_rows, eps_cols;          // occupied
  std::span<const double> eps_vir_rows, eps_vir_cols;  // virtual: a with the rows, b with the columns
  bool triangular = true;
  bool same_spin = true;

  bool needed(std::size_t i, std::size_t j) const { return !triangular || j <= i; }
  std::size_t cols_needed(std::size_t i) const { return triangular ? i + 1 : cols.nocc; }
  // Needed pairs of rows [i0, i1) × columns [j0, j1): the unit progress counts work in.
  std::size_t pairs_needed(std::size_t i0, std::size_t i1, std::size_t j0, std::size_t j1) const {
    std::size_t n = 0;
    for (std::size_t i = i0; i < i1; ++i) n += std::min(j1, cols_needed(i)) - std::min(j0, std::min(j1, cols_needed(i)));
    return n;
  }
  double weight(std::size_t i, std::size_t j) const { return !same_spin || (triangular && i == j) ? 1.0 : 2.0; }
  // The pair's share of E_OS and E_SS from its T_ij (T[a·ldt + b]), counted with its weight, by
  // the shared SIMD kernel.
  PairEnergy energy(std::size_t i, std::size_t j, const Real* T, std::size_t ldt) const {
    const double eps_ij = eps_rows[i] + eps_cols[j];
    const PairEnergy e = same_spin ? reduce_pair(T, ldt, rows.nvir, eps_ij, eps_vir_rows.data())
                                   : reduce_pair_opposite_spin(T, ldt, rows.nvir, cols.nvir, eps_ij,
                                                               eps_vir_rows.data(), eps_vir_cols.data());
    return {weight(i, j) * e.os, weight(i, j) * e.ss};
  }
};

// A backend's workspace of `count` elements: the memory lent in the options when it is large
// enough, else the backend's own.
template <typename Real>
class Workspace {
 public:
  Workspace(const EnergyOptions& options, std::size_t count) {
    if (options.workspace != nullptr && count * sizeof(Real) <= options.workspace_bytes) {
      data_ = static_cast<Real*>(options.workspace);
    } else {
      own_.reset(new Real[count]);  // uninitialised: the backends overwrite before they read
      data_ = own_.get();
    }
  }
  Real* data() const { return data_; }

 private:
  std::unique_ptr<Real[]> own_;
  Real* data_ = nullptr;
};

// Arguments are validated by the dispatcher (mp2_energy.cpp); backends fill e_os, e_ss,
// backend, the timings they measure and workspace_bytes (total_seconds is set by the dispatcher).
template <typename Real>
EnergyResult reference_energy(const PairSpace<Real>& pairs, const EnergyOptions& options);
template <typename Real>
EnergyResult loop_energy(const PairSpace<Real>& pairs, const EnergyOptions& options);
template <typename Real>
EnergyResult fused_energy(const PairSpace<Real>& pairs, const EnergyOptions& options);

// Instantiates a backend template for both precisions (used once at the end of each backend file).
#define DFMP2_INSTANTIATE_BACKEND(fn)                                              \
  template EnergyResult fn<double>(const PairSpace<double>&, const EnergyOptions&); \
  template EnergyResult fn<float>(const PairSpace<float>&, const EnergyOptions&);

}  // namespace dfmp2::kernels::detail
