// The energy backends, one file each (backend_<name>.cpp). Adding one: write its file, declare it
// here, and register it in mp2_energy.cpp (name table + dispatch).
#pragma once

#include "kernels/mp2_energy.hpp"

namespace dfmp2::kernels::detail {

// Arguments are validated by mp2_energy(); backends fill e_os, e_ss, backend, the timings they
// measure and workspace_bytes (total_seconds is set by the dispatcher).
template <typename Real>
EnergyResult reference_energy(const DFTensorView<Real>& B, std::span<const double> eps_occ,
                              std::span<const double> eps_vir, const EnergyOptions& options);
template <typename Real>
EnergyResult loop_energy(const DFTensorView<Real>& B, std::span<const double> eps_occ,
                         std::span<const double> eps_vir, const EnergyOptions& options);
template <typename Real>
EnergyResult fused_energy(const DFTensorView<Real>& B, std::span<const double> eps_occ,
                          std::span<const double> eps_vir, const EnergyOptions& options);

// Instantiates a backend template for both precisions (used once at the end of each backend file).
#define DFMP2_INSTANTIATE_BACKEND(fn)                                                                  \
  template EnergyResult fn<double>(const DFTensorView<double>&, std::span<const double>,              \
                                   std::span<const double>, const EnergyOptions&);                    \
  template EnergyResult fn<float>(const DFTensorView<float>&, std::span<const double>,                \
                                  std::span<const double>, const EnergyOptions&);

}  // namespace dfmp2::kernels::detail
