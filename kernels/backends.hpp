// The energy backends, one file each (backend_<name>.cpp). Adding one: write its file, declare it
// here, and register it in mp2_energy.cpp (name table + dispatch).
#pragma once

#include "kernels/energy_reduction.hpp"
#include "kernels/mp2_energy.hpp"

namespace dfmp2::kernels::detail {

// The occupied pairs (i, j) a backend sums: i over the rows' orbitals, j over the columns'.
// Triangular: columns are the rows and only j ≤ i is formed (T_ji = T_ijᵀ), i ≠ j counting
// twice. Otherwise two disjoint blocks, every (i, j) counting twice (for (j, i) as well).
template <typename Real>
struct PairSpace {
  DFTensorView<Real> rows, cols;
  std::span<const double> eps_rows, eps_cols;
  bool triangular = true;

  bool needed(std::size_t i, std::size_t j) const { return !triangular || j <= i; }
  std::size_t cols_needed(std::size_t i) const { return triangular ? i + 1 : cols.nocc; }
  double weight(std::size_t i, std::size_t j) const { return triangular && i == j ? 1.0 : 2.0; }
  // The pair's share of E_OS and E_SS from its T_ij (T[a·ldt + b]), counted with its weight.
  PairEnergy energy(std::size_t i, std::size_t j, const Real* T, std::size_t ldt, std::span<const double> eps_vir) const {
    const PairEnergy e = reduce_pair(T, ldt, rows.nvir, eps_rows[i] + eps_cols[j], eps_vir.data());
    return {weight(i, j) * e.os, weight(i, j) * e.ss};
  }
};

// Arguments are validated by the dispatcher (mp2_energy.cpp); backends fill e_os, e_ss,
// backend, the timings they measure and workspace_bytes (total_seconds is set by the dispatcher).
template <typename Real>
EnergyResult reference_energy(const PairSpace<Real>& pairs, std::span<const double> eps_vir,
                              const EnergyOptions& options);
template <typename Real>
EnergyResult loop_energy(const PairSpace<Real>& pairs, std::span<const double> eps_vir,
                         const EnergyOptions& options);
template <typename Real>
EnergyResult fused_energy(const PairSpace<Real>& pairs, std::span<const double> eps_vir,
                          const EnergyOptions& options);

// Instantiates a backend template for both precisions (used once at the end of each backend file).
#define DFMP2_INSTANTIATE_BACKEND(fn)                                                              \
  template EnergyResult fn<double>(const PairSpace<double>&, std::span<const double>,             \
                                   const EnergyOptions&);                                          \
  template EnergyResult fn<float>(const PairSpace<float>&, std::span<const double>,               \
                                  const EnergyOptions&);

}  // namespace dfmp2::kernels::detail
