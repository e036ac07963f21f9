// DF-MP2 energy from the three-index tensor B_ia^P: the kernels' public interface.
//
//   T_ij,ab = Σ_P B_ia^P B_jb^P              (T_ij = B_i B_jᵀ, B_i is nvir × naux)
//   E_OS    = Σ_ij Σ_ab T_ij,ab² / Δ_ij,ab
//   E_SS    = Σ_ij Σ_ab T_ij,ab (T_ij,ab − T_ij,ba) / Δ_ij,ab
//   Δ_ij,ab = ε_i + ε_j − ε_a − ε_b,   E_corr = E_OS + E_SS
//
// For a closed shell (RHF) these are the energies. For UHF each spin's B gives its same-spin
// energy, E_αα = ½ e_ss of mp2_energy on the α block (e_ss sums both orderings of T_ij,ab −
// T_ij,ba over one set of spin orbitals, twice one spin's), and mp2_energy_opposite_spin gives
// E_αβ from the α and β blocks, T_ij = B^α_i B^β_jᵀ (nvir_α × nvir_β).
//
// No chemistry and no I/O here: the caller hands in B (row-major [nocc][nvir][naux],
// active occupied orbitals only) and the orbital energies.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>

#include "kernels/compute_engine.hpp"
#include "kernels/named_choices.hpp"
#include "kernels/precision.hpp"

namespace dfmp2::kernels {

enum class Backend { reference, loop, fused, automatic };
// Where the energy step runs: automatic is the GPU when one is usable and the step is large
// enough to gain (src/run decides).
enum class Device { cpu, gpu, automatic };

// The registry's names, in the order users see them (the command line lists these).
NamedChoices<Backend> backend_names();
NamedChoices<Precision> precision_names();
NamedChoices<Device> device_names();
Backend parse_backend(const std::string& name);      // throws std::invalid_argument
std::string to_string(Backend backend);
Precision parse_precision(const std::string& name);  // throws std::invalid_argument
std::string to_string(Precision precision);

// Row-major B_ia^P: element (i, a, P) at data[(i * nvir + a) * naux + P].
template <typename Real>
struct BiaView {
  const Real* data = nullptr;
  std::size_t nocc = 0, nvir = 0, naux = 0;
  // The rows keep their contents for the whole energy step (B where it lies, not a buffer that is
  // refilled): a GPU may keep its copy between calls.
  bool stable = false;
};

class GpuEnergyEngine;  // kernels/gpu/gpu_energy.hpp

// Rows of a B view, whatever its precision: data, occupied rows, bytes per row.
struct GpuNextBlock {
  const void* data = nullptr;
  std::size_t rows = 0, row_bytes = 0;
};

struct EnergyOptions {
  std::size_t memory_bytes = std::size_t(1) << 30;  // budget for T_flat (loop backend)
  int threads = 0;                                  // 0: OpenMP default
  // Memory the caller lends for the backend's workspace (T_flat, the per-thread tiles), so that
  // it comes from pages the caller already holds; a backend whose workspace does not fit in it
  // allocates its own.
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  // Called from one thread with the share of pair blocks done, in [0, 1]; may be empty.
  std::function<void(double fraction_done)> progress;
  // The engine of the CPU backends' GEMMs: one on host memory, since their reduction reads T
  // there (the GPU energy step below brings its own cuBLAS engine).
  ComputeEngine* engine = &cpu_engine();
  // Set: the pair spaces are summed on this GPU (backend loop or fused; automatic: the engine's).
  GpuEnergyEngine* gpu = nullptr;
  // With gpu, B streamed in blocks: the block the next call pairs with (its rows keep their
  // contents), copied to the GPU while this call computes.
  GpuNextBlock gpu_next;
};

struct EnergyResult {
  double e_os = 0.0, e_ss = 0.0;
  Backend backend = Backend::reference;  // the backend that ran (resolved from automatic)
  // Wall time in GEMMs and in the reduction: loop times its phases; reference splits its wall
  // time by its threads' shares; fused interleaves them and leaves both 0.
  double gemm_seconds = 0.0;
  double reduce_seconds = 0.0;
  double total_seconds = 0.0;
  std::size_t workspace_bytes = 0;       // peak extra memory the backend allocated
};

// The backend `automatic` runs for these sizes (nocc: the occupied orbitals each row pairs with)
// and T_flat budget: fused, or loop in fp64 from nvir ≈ 300 when its T_flat fits.
Backend resolve_automatic(Precision precision, std::size_t nocc, std::size_t nvir, std::size_t memory_bytes);

// The pair space of one energy call: nrows × ncols occupied orbitals (triangular: a block with
// itself, only j ≤ i), with the rows' and the columns' virtuals.
struct PairSpaceShape {
  std::size_t nrows = 0, ncols = 0;
  bool triangular = true;
  std::size_t nvir_rows = 0, nvir_cols = 0;
};

// The backend's workspace for a call on this pair space (what it takes from EnergyOptions'
// workspace), given the T_flat budget memory_bytes the loop backend sizes itself from.
std::size_t energy_workspace_bytes(Backend backend, Precision precision, const PairSpaceShape& shape, int threads,
                                   std::size_t memory_bytes);

// The work that is needed, counting the i ≥ j symmetry: 2 · nocc(nocc+1)/2 · nvir² · naux.
double needed_flops(std::size_t nocc, std::size_t nvir, std::size_t naux);
// UHF's three pair blocks: αα and ββ as above, and αβ, every pair: 2 · nα nβ · nvir_α nvir_β · naux.
double needed_flops_unrestricted(std::size_t nocc_alpha, std::size_t nvir_alpha, std::size_t nocc_beta,
                                 std::size_t nvir_beta, std::size_t naux);

template <typename Real>
EnergyResult mp2_energy(Backend backend, const BiaView<Real>& B, std::span<const double> eps_occ,
                        std::span<const double> eps_vir, const EnergyOptions& options);

// The pairs between two disjoint blocks of occupied orbitals, I and J (i ∈ I, j ∈ J, each pair
// counted for (i, j) and (j, i)): with mp2_energy on each block, this splits the pair space
// across processes, E(I ∪ J) = E(I) + E(J) + mp2_energy_cross(I, J).
template <typename Real>
EnergyResult mp2_energy_cross(Backend backend, const BiaView<Real>& B_I,
                              std::span<const double> eps_I, const BiaView<Real>& B_J,
                              std::span<const double> eps_J, std::span<const double> eps_vir,
                              const EnergyOptions& options);

// The opposite-spin pairs of UHF: i over the α block, whose virtuals a are α (eps_vir_alpha), j
// over the β block with β virtuals b, each (i, j) once and no exchange term:
//   E_OS = E_αβ = Σ_ij Σ_ab T_ij,ab² / Δ_ij,ab,   T_ij = B^α_i B^β_jᵀ;   e_ss = 0.
// Blocks of occupied orbitals of either spin add up as for mp2_energy_cross.
template <typename Real>
EnergyResult mp2_energy_opposite_spin(Backend backend, const BiaView<Real>& B_alpha,
                                      std::span<const double> eps_occ_alpha, std::span<const double> eps_vir_alpha,
                                      const BiaView<Real>& B_beta, std::span<const double> eps_occ_beta,
                                      std::span<const double> eps_vir_beta, const EnergyOptions& options);

}  // namespace dfmp2::kernels
