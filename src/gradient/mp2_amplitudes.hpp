// The DF-MP2 gradient's loops over its amplitudes, one per reference, as Psi4's dfmp2 forms them
// (form_Pij, form_Pab, form_gamma): from B_ia^P = Σ_Q M_PQ (Q|ia) (Mᵀ M = J⁻¹) of each set of
// orbitals, a few occupied orbitals k at a time, the energy, each set's unrelaxed P_ij and P_ab,
// Γ_ia^P and V_PQ (mp2_relaxed_density.hpp). The closed-shell loop (RHF's one set) makes
// t_ik^ab and T_ik^ab = 2 t_ik^ab − t_ik^ba; the open-shell one (UHF's α and β) the same-spin
// (antisymmetric) and opposite-spin amplitudes of each orbital k with every i of both spins. Both
// visit a block's pairs with the energy step's pair loop and sum the pairs' energies with its
// reduction (kernels/pair_schedule.hpp's sum_pairs, reduce_pair_keeping), the pairs it sums
// keeping its quotients as their amplitudes, so that every amplitude is divided once.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include <Eigen/Core>

#include "kernels/compute_engine.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/progress.hpp"
#include "src/common/row_store.hpp"
#include "src/common/stage_work.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/integrals/density_fitting.hpp"

namespace dfmp2 {

// One set's correlated orbitals: the active occupied ones (after `nfrozen` frozen), the virtual
// ones, and their energies.
struct CorrelatedOrbitals {
  Eigen::Index nfrozen = 0, nocc = 0, nvir = 0;
  Eigen::VectorXd eps;
  Eigen::Index active() const { return nocc - nfrozen; }
  Eigen::Index ov() const { return active() * nvir; }
  double eps_active(Eigen::Index i) const { return eps(nfrozen + i); }
  double eps_virtual(Eigen::Index a) const { return eps(nocc + a); }
};

// What a loop reads and writes beside the orbitals: each set's B (rows P, columns i·nvir + a),
// each set's Γ store (written, whole on every rank), the buffers B's rows on disk are read into,
// the engine of its GEMMs (on host memory), and where it draws from and reports to.
struct AmplitudeLoop {
  const CoulombFitting& fit;
  const std::vector<RowStore>& B;
  std::vector<RowStore>& gamma;
  std::span<double> buffer, next_buffer;
  kernels::ComputeEngine& engine;
  MemoryBudget& budget;
  Communicator& comm;
  Progress& progress;
  StageWork& work;  // each loop adds its GEMMs' flops
  // Set (engine being this OffloadEngine, RHF's integrals not kept): the amplitudes are made on
  // its GPU and stay there, I by its products, then RHF each block's t and T by JKDevice::
  // closed_shell_amplitudes, UHF each k's t by open_shell_amplitudes.
  kernels::OffloadEngine* amplitudes_on_gpu = nullptr;
};

// What the loops sum (over every rank): the energy, each set's P_ij (active i, j) and P_ab, V_PQ.
struct Mp2AmplitudeSums {
  Mp2EnergyParts energy;
  std::vector<Eigen::MatrixXd> P_occ, P_vir;
  Eigen::MatrixXd V;
};

// RHF: `block` occupied orbitals k at a time; keeps_integrals (one rank): I_ia,kb kept for its
// symmetry (Mp2GradientPlan).
Mp2AmplitudeSums closed_shell_amplitudes(const CorrelatedOrbitals& orbitals, const Mp2GradientSizes& sizes,
                                         std::size_t block, bool keeps_integrals, AmplitudeLoop& loop);
// UHF: α and β, one occupied orbital k of either spin at a time.
Mp2AmplitudeSums open_shell_amplitudes(const std::vector<CorrelatedOrbitals>& orbitals,
                                       const std::vector<Mp2GradientSizes>& sizes, AmplitudeLoop& loop);

// What each loop holds beside B and Γ, added to the amplitudes' phase of a plan.
void closed_shell_amplitude_blocks(StagePlan& phase, const Mp2GradientSizes& sizes, std::size_t block,
                                   bool keeps_integrals);
void open_shell_amplitude_blocks(StagePlan& phase, const std::vector<Mp2GradientSizes>& sizes);
// A phase's kept I (closed_shell_amplitude_blocks with keeps_integrals) made one block's I, as the
// loop holds it when its amplitudes are made on a GPU.
void drop_kept_integrals(StagePlan& phase, const Mp2GradientSizes& sizes, std::size_t block);
// The GPU room (elements) the loop's amplitudes made there take (AmplitudeLoop::amplitudes_on_gpu),
// RHF's with blocks of `block` orbitals k: what it places (RHF a block's I, t, T and pair energies,
// UHF one k's I, both t and its pairs' energies) and each set's orbital energies it holds.
std::size_t gpu_amplitude_elements(const std::vector<Mp2GradientSizes>& sizes, std::size_t block);

}  // namespace dfmp2
