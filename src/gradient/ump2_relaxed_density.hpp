// The UHF DF-MP2 energy's relaxed one-particle densities (one per spin), energy-weighted density
// and three-index two-particle densities: what its nuclear gradient (mp2_gradient.hpp) contracts
// with derivative integrals. The RHF densities (mp2_relaxed_density.hpp) are the closed-shell case;
// each spin's P^σ, X^σ and W^σ here are half of theirs there and Γ^σ is their Γ.
//
// σ is a spin; i j k active occupied, a b c virtual orbitals of σ, I J K A B C of the other spin;
// (ia|jb) = Σ_PQ (ia|P) [J⁻¹]_PQ (Q|jb) in the RI set, c_ia^P = Σ_Q [J⁻¹]_PQ (Q|ia), and
// D_ij^ab = ε_i + ε_j − ε_a − ε_b. The amplitudes, same spin (antisymmetric) and opposite spin,
//   t_ij^ab = [(ia|jb) − (ib|ja)] / D_ij^ab,   t_iJ^aB = (ia|JB) / D_iJ^aB,
// give E = ½ Σ_σ Σ_ijab (ia|jb) t_ij^ab + Σ_iJaB (ia|JB) t_iJ^aB and, for each σ,
//   P_ij = −½ Σ_kab t_ik^ab t_jk^ab − Σ_KaB t_iK^aB t_jK^aB,
//   P_ab = ½ Σ_ijc t_ij^ac t_ij^bc + Σ_iJC t_iJ^aC t_iJ^bC,
//   Γ_ia^P = Σ_jb t_ij^ab c_jb^P + Σ_JB t_iJ^aB c_JB^P,
// and V_PQ = Σ_σ Σ_ia c_ia^P Γ_ia^Q. With the orbitals fixed the energy's derivative is
// Σ_σ Σ P^σ F^σ,x + 2 Σ_σ Σ Γ_ia^P (P|ia)^x − Σ V_PQ (P|Q)^x. Its orbital response enters through
// each spin's Lagrangian X^σ_pq, the coefficient of the rotation U^σ_pq, with G^σ(Y) =
// J(Y^α + Y^β) − K(Y^σ) the UHF Fock matrix's response to density changes Y^α, Y^β:
//   X_pi += L1_pi = 2 Σ_aP (P|pa) Γ_ia^P,   X_pa += L2_pa = 2 Σ_iP (P|pi) Γ_ia^P,
//   X_pq += 2 P_pq ε_p (the ij and ab blocks),   X_pk += 2 [C^σᵀ G^σ(P) C^σ]_pk (k occupied);
// the frozen–active rotations by the SCF's own response, P_fi = −½ X_fi / (ε_f − ε_i) (both spins
// freeze the same number of core orbitals), and the occupied–virtual ones of both spins at once by
// the Z-vector equations
//   (ε_a − ε_k) z_ak + [C^σᵀ G^σ(Z) C^σ]_ak = −(X_ak − X_ka),   Z^σ = C_v z^σ C_oᵀ + C_o z^σᵀ C_vᵀ,
// solved by conjugate gradients with the DF-SCF's J/K (JK set), α and β in one build per
// iteration; P_ak = ½ z_ak. Aikens, Webb, Bell, Fletcher, Schmidt and Gordon, Theor. Chem. Acc.
// 110, 233 (2003); PySCF's grad/ump2.py.
//
// Memory: as the RHF densities, nothing O(N⁴) is held; each spin's B_ia^P = Σ_Q M_PQ (Q|ia)
// (Mᵀ M = J⁻¹, c = Mᵀ B) and Γ_ia^P are held, their first rows P in memory and, when the budget
// does not hold them, the rest on disk; each batch of RI integrals serves both spins' transforms.
// The amplitudes are made one occupied orbital k of either spin at a time, with its same-spin and
// opposite-spin pairs, so that Γ's columns of k are complete with it.
#pragma once

#include <array>
#include <cstddef>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/memory.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/df_fock.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

// The plan for `ram_bytes` of memory, as plan_mp2_gradient's, for the α and β orbitals' sizes
// (which differ only in nocc), with batches for each of `ranks` MPI ranks, and the contraction's
// JK-set term of both spins' occupied orbitals (jk_terms).
Mp2GradientPlan plan_ump2_gradient(const libint2::BasisSet& ri_aux, const Mp2GradientSizes& alpha,
                                   const Mp2GradientSizes& beta, const SeparableTermSizes& jk_terms,
                                   std::size_t ram_bytes, int ranks);

struct Ump2GradientDensities {
  Mp2EnergyParts energy;
  int cphf_iterations = 0;
  StageWork work;                           // as Mp2Gradient's
  std::array<Eigen::MatrixXd, 2> relaxed;   // P^α, P^β (AO, symmetric), the MP2 parts only
  Eigen::MatrixXd energy_weighted;          // W of both spins (AO, symmetric), the MP2 part only
  std::array<RowStore, 2> gamma;            // Γ_ia^P of each spin: row P, column i·nvir + a (i active)
  Eigen::MatrixXd metric;                   // V_PQ, both spins'
};

// UHF orbitals (canonical), the lowest plan.sizes.nfrozen of each spin not correlated; the plan
// must be plan_ump2_gradient's for them. jk: the DF-SCF's J/K (two densities per build), for the
// Fock-like terms and the Z-vector (this rank's factors). scratch: for B and Γ's rows on disk (may
// be null when the plan has none). z_convergence: the largest residual element of either spin, as
// mp2_gradient_densities'. Collective, as mp2_gradient_densities: the
// ranks share the RI batches and the occupied orbitals k of the amplitude loops, and every rank
// returns the whole densities.
Ump2GradientDensities ump2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                              const ShellPairs& pairs, DensityFittedFock& jk,
                                              const Orbitals& orbitals, const Mp2GradientPlan& plan,
                                              MemoryBudget& budget, const ScratchDirectory* scratch,
                                              Communicator& comm, double z_convergence, Progress& progress);

}  // namespace dfmp2
