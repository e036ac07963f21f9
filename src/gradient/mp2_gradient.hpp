// The RHF or UHF DF-MP2 energy's nuclear gradient (frozen core allowed), as Psi4's dfmp2 computes
// RHF's: the SCF gradient's terms with the relaxed densities (mp2_relaxed_density.hpp) added to
// the SCF's, D + P in ∂H and W_SCF + W in ∂S, the JK set's
// three-centre and metric terms of the SCF density with itself and with P (Coulomb, and exchange
// spin by spin), and the RI set's of the non-separable Γ: 4 Σ Γ_ia^P ∂(P|ia) − 2 Σ V_PQ ∂(P|Q)
// for RHF, 2 Σ_σ Σ Γ_ia^P ∂(P|ia) − Σ V_PQ ∂(P|Q) for UHF. natom × 3 (x, y, z) in Eh/bohr.
#pragma once

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/compute_engine.hpp"
#include "src/common/memory.hpp"
#include "src/common/stage_work.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/molecule/molecule.hpp"
#include "src/scf/fock_builder.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct BasisSetData;

struct Mp2GradientInput {
  const libint2::BasisSet& obs;
  const libint2::BasisSet& ri_aux;  // the DF-MP2 set
  const libint2::BasisSet& jk_aux;  // the DF-SCF set jk's factors are of
  const ShellPairs& pairs;          // the orbital shell pairs both tensors store
  const Molecule& mol;
  const Orbitals& orbitals;         // converged canonical RHF or UHF
  const Mp2GradientPlan& plan;      // plan_mp2_gradient's for them
  const ScratchDirectory* scratch;  // for what the plan puts on disk
  // The Z-vector's largest residual element: the SCF's d_convergence, since the orbitals the
  // gradient differentiates are no more exact than that.
  double z_convergence;
  Progress& progress;  // each phase's share done, and the Z-vector's iterations
  const BasisSetData* potentials = nullptr;  // the orbital set's data when the molecule has ECPs
  // The engine of the densities' and Γ^P's large products (mp2_gradient_densities): one on host
  // memory, since their arrays are there.
  kernels::ComputeEngine* engine = &kernels::cpu_engine();
  // Where the amplitude loop's products run when plan.gpu has them on a GPU: made for
  // plan.gpu->device_bytes() (the CUDA device, or the tests' host stand-in); else null.
  kernels::JKDevice* gpu = nullptr;
};

struct Mp2Gradient {
  Mp2EnergyParts energy;  // the correlation energy the gradient is of
  int cphf_iterations = 0;
  Eigen::MatrixXd gradient;  // of E_SCF + E_MP2
  Eigen::Vector3d dipole;    // the relaxed DF-MP2 dipole moment: e·bohr, about the origin
  // This rank's work, for the stage's floor: the GEMM-like flops of the RI passes, fits,
  // amplitudes, J/K builds and the derivative terms' densities, and libint2's own time for the RI
  // integrals and the three-centre derivative integrals (the one-electron and metric derivative
  // terms are left out: small).
  StageWork work;
  std::size_t gpu_uploaded_bytes = 0;  // copied to the GPU by the amplitude loop and the Z-vector's responses
  // Wall times of its phases (Mp2GradientDensities::parts), "ecp" (the ECP derivative integrals,
  // when the molecule has any), "jk_set" and "ri_set" (the two auxiliary sets' terms).
  std::vector<StagePart> parts;
};

// scf_fock: the DF-SCF's builder, whose Fock responses serve the Lagrangian and the Z-vector and
// whose fitted factors the JK set's terms (fitted_factors_for_derivatives); the densities' arrays
// are drawn from `budget` as in.plan says. Collective: the ranks share the work, and every rank
// returns the whole gradient.
Mp2Gradient density_fitted_mp2_gradient(const Mp2GradientInput& in, FockBuilder& scf_fock, MemoryBudget& budget,
                                        Communicator& comm);

}  // namespace dfmp2
