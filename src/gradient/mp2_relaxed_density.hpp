// The DF-MP2 energy's relaxed one-particle densities, energy-weighted density and three-index
// two-particle densities, RHF or UHF: what its nuclear gradient (mp2_gradient.hpp) contracts with
// derivative integrals. One implementation over sets of orbitals s, as the SCF's: RHF's one set,
// each orbital holding w = 2 electrons, or UHF's α and β (w = 1); every term below is each set's,
// written for RHF (UHF's P, X and W are half of a closed shell's, its Γ the same). With B-space
// integrals (ia|jb) = Σ_PQ (ia|P) [J⁻¹]_PQ (Q|jb) in the RI set, c_jb^P = Σ_Q [J⁻¹]_PQ (Q|jb), and
// the amplitudes of mp2_amplitudes.hpp (RHF: t_ij^ab = (ia|jb)/(ε_i + ε_j − ε_a − ε_b) and T_ij^ab
// = 2 t_ij^ab − t_ij^ba, i, j active; UHF: same-spin and opposite-spin, Aikens et al.):
//   P_ij = −2 Σ_kab t_ik^ab T_jk^ab,  P_ab = 2 Σ_ijc t_ij^ac T_ij^bc   (the amplitudes' loops)
//   Γ_ia^P = Σ_jb T_ij^ab c_jb^P,  V_PQ = Σ_s Σ_ia c_ia^P Γ_ia^Q        (form_gamma, after form_B)
// The energy's derivative with the orbitals fixed is Σ_s Σ P F^x + 2w Σ_s Σ Γ_ia^P (P|ia)^x −
// w Σ V (P|Q)^x; its orbital response enters through the Lagrangian X_pq (the coefficient of the
// rotation U_pq):
//   X_pi += L1_pi = 2w Σ_aP (P|pa) Γ_ia^P,  X_pa += L2_pa = 2w Σ_iP (P|pi) Γ_ia^P      (form_L)
//   X_pq += 2 P_pq ε_p (the ij and ab blocks),  X_pk += [Cᵀ F(P) C]_pk (k occupied),
// F the Fock response of FockResponse::of_symmetric (RHF: 4J − 2K; UHF: 2 [J(P_α + P_β) −
// K(P_s)]); the frozen–active rotations (to which E_MP2 is not invariant) by the SCF's own
// response, P_fi = −½ X_fi / (ε_f − ε_i) (form_P), and the occupied–virtual ones of every set at
// once by the Z-vector equations (z_vector.hpp)
//   (ε_a − ε_k) z_ak + [C_vᵀ F(Z) C_o]_ak = −(X_ak − X_ka)     (form_Z_equations, solve_z_vector)
// solved with the DF-SCF's factors (JK set), P_ak = ½ z_ak; W is the coefficient of S^x
// (form_W). Weigend and Häser, Theor. Chem. Acc. 97, 331 (1997); Aikens et al., Theor. Chem. Acc.
// 110, 233 (2003); Psi4's dfmp2/corr_grad.cc; PySCF's grad/ump2.py.
//
// Memory: the amplitudes are made a few occupied orbitals k at a time, and (P|μν) one batch of RI
// shells at a time, twice: for (P|ia), then, once Γ exists, for L1 and L2 (from Σ_P (P|μν) times
// Γ^P back-transformed). Of the three-index arrays only each set's fitted B_ia^P = Σ_Q M_PQ
// (Q|ia) (Mᵀ M = J⁻¹) is held, not (P|ia) and c_ia^P beside it: (ia|kb) = Σ_P B_ia^P B_kb^P, and
// Γ's columns of orbitals k are Mᵀ times Σ_ia B_ia^P T_ia,kb, complete when their amplitudes are.
// So B and Γ are read in rows P, and when the budget does not hold them their first rows stay in
// memory and the others go to scratch files (each MPI rank its own, all rows), read back twice per
// block of orbitals k in large blocks, each read while the previous one is used; each batch of RI
// integrals serves every set's transform. RHF's P_ij needs every i of a block k at once, so each
// block's I_ia,kb is made whole; I is symmetric, though, and when the budget holds a quarter of it
// (o²v²/4, one rank) each block computes only its rows i ≥ k and keeps them until the blocks after
// it have read their rows i before them there, I_ia,kb = I_kb,ia: half the GEMMs of I. Every large
// array is drawn from the run's budget as plan_mp2_gradient planned it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "kernels/compute_engine.hpp"
#include "kernels/gpu/offload_engine.hpp"
#include "kernels/gpu/stacked_response.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/progress.hpp"
#include "src/common/row_store.hpp"
#include "src/common/scratch.hpp"
#include "src/common/stage_work.hpp"
#include "src/integrals/df_two_electron_derivatives.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/df_fock.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

// The sizes the densities' arrays follow from; the plan and the arrays both count with these.
struct Mp2GradientSizes {
  std::size_t naux = 0, nbf = 0, nmo = 0, nocc = 0, nfrozen = 0;
  std::size_t stored = 0;  // the shell pairs' stored μν
  std::size_t jk_rows = 0;  // this rank's rows Q of the DF-SCF tensor
  std::size_t active() const { return nocc - nfrozen; }
  std::size_t nvir() const { return nmo - nocc; }
  std::size_t ov() const { return active() * nvir(); }
  std::size_t transformed() const { return nmo - nfrozen; }  // the active and virtual orbitals
  // Elements of: (P|μν) of `functions` RI functions; one thread's buffers for the Lagrangian's
  // products (a square and nbf × transformed()); the amplitude block (I, t or T) of `occupied`
  // orbitals k.
  std::size_t ao_batch(std::size_t functions) const { return functions * stored; }
  std::size_t thread_buffers() const { return nbf * nbf + nbf * transformed(); }
  std::size_t amplitude_block(std::size_t occupied) const { return ov() * occupied * nvir(); }
  // Elements of I_ia,kb kept for blocks of `occupied` orbitals k that still read it: while block b
  // of m is made, (b + 1)(m − b) block pairs of (occupied·v)² each at most; about o²v²/4.
  std::size_t kept_integrals(std::size_t occupied) const {
    const std::size_t blocks = (active() + occupied - 1) / occupied;
    std::size_t pairs = 0;
    for (std::size_t b = 0; b < blocks; ++b) pairs = std::max(pairs, (b + 1) * (blocks - b));
    return pairs * occupied * occupied * nvir() * nvir();
  }
};

struct Mp2GradientPlan {
  std::vector<Mp2GradientSizes> sets;    // RHF's one, or UHF's α and β (which differ only in nocc)
  std::size_t batch_functions = 0;       // RI functions whose (P|μν) and (P|ia) are held at once
  std::size_t amplitude_orbitals = 1;    // occupied orbitals k whose amplitudes are made at once (RHF)
  bool keeps_integrals = false;          // I_ia,kb kept for its symmetry (RHF, one rank, when it fits)
  bool keeps_ri_integrals = false;       // (P|μν) kept between the RI passes (one rank, when it also fits)
  bool fp32_z_vector = false;            // the Z-vector's inner iterations in fp32 (asked for, when it fits)
  std::size_t ram_rows = 0;              // rows P of B_ia^P and Γ_ia^P (each set's) in memory, the rest on disk
  SeparableTermSizes jk_terms;           // the contraction's JK-set term (density_fitted_two_electron_gradient)
  SeparableTermLayout jk_layout;         // its arrays' rows in memory and blocks (the RI set's squares' too)
  std::size_t ri_largest_shell = 1;      // the RI set's most functions in a shell, for its squares
  bool keeps_occupied_products = false;  // the Z-vector's B^Q C_o kept for the JK set's term (RHF, when it fits)
  StagePlan densities;                   // what the densities draw at their peak
  // The amplitude loop's products on a GPU (plan_amplitudes_on_gpu), each set's rows of B in
  // memory resident there when they fit; else (none) on the CPU.
  std::optional<kernels::GpuOffloadPlan> gpu;
  // With gpu: the loop's amplitudes made on the GPU, in gpu's room for held operands
  // (gpu_amplitude_elements: RHF each block's I, t and T, UHF each k's I and t), and RHF's I not
  // kept (keeps_integrals false).
  bool amplitudes_on_gpu = false;
  // The Z-vector's (and the Lagrangian's) Fock responses on the GPU, after the amplitude loop in
  // the same GPU memory (plan_z_vector_on_gpu; only with gpu); else (none) on the CPU.
  std::optional<kernels::GpuResponsePlan> z_vector_gpu;
  double gpu_gflops = 0.0;               // cuBLAS's fp64 rate probed at start-up, for the floor
  bool closed_shell() const { return sets.size() == 1; }
  // The GPU memory the gradient's device needs: the larger of the loop's and the responses'.
  std::size_t gpu_device_bytes() const {
    return std::max(gpu ? gpu->device_bytes() : 0, z_vector_gpu ? z_vector_gpu->device_bytes() : 0);
  }
};

// The plan for `ram_bytes` of memory (what the budget leaves the densities), for the sets' sizes:
// RHF's amplitude blocks of enough orbitals k for their GEMMs to run at full rate, fewer if they
// do not fit, and a quarter of I kept if it fits beside them (one rank); then batches of RI shells
// as large as fit beside the rest, up to what the amplitudes' loop holds. When that loop with one
// orbital k, or the passes or the Z-vector, do not fit with B and Γ in memory, B and Γ keep in
// memory only the rows that fit beside a loop of full-rate blocks (or as many orbitals as fit
// with every row on disk), the rest on disk. Its RAM exceeds ram_bytes only when the phases with
// one orbital k, one shell per batch and every row on disk do not fit even so. Both are small
// enough for each of `ranks` MPI ranks to have some. fp32_z_vector: the Z-vector's inner
// iterations in fp32 if its fp32 copies fit too; z_vector_gpu: its products on a GPU so planned
// (in fp64, holding in memory only the kept products), or none. The contraction that follows (jk_terms: the JK
// set's, of the SCF's occupied orbitals) holds Γ and the JK set's arrays; when the whole does not
// fit, first those arrays go to disk (the contraction reads them back once) with its blocks at
// their smallest, then the Z-vector's products are dropped (the contraction makes them anew),
// then B's and Γ's rows go to disk; the room left then goes back to the products, the JK set's
// rows and its blocks, in that order.
Mp2GradientPlan plan_mp2_gradient(const libint2::BasisSet& ri_aux, const std::vector<Mp2GradientSizes>& sets,
                                  const SeparableTermSizes& jk_terms, std::size_t ram_bytes, int ranks,
                                  bool fp32_z_vector, std::optional<kernels::GpuResponsePlan> z_vector_gpu);

// The Z-vector's Fock responses on a GPU with `device_bytes` of its memory (plan_gpu_response) for
// the sets' sizes: each set's B^Q C_o and C_oᵀ B^Q C_o of this rank's rows of the DF-SCF tensor
// resident, the rows too when they fit. GpuError when too little.
kernels::GpuResponsePlan plan_z_vector_on_gpu(const std::vector<Mp2GradientSizes>& sets, std::size_t device_bytes);

// The amplitude loop's products on a GPU with `device_bytes` of its memory (plan_gpu_offload): the
// ranges each set's rows of B in memory, the other operands the loop's (its blocks of orbitals k'
// I, t, T, B_kb and Γ_kb, V, P) and the blocks of B's rows on disk; the room for held operands
// gpu_amplitude_elements with plan.amplitudes_on_gpu, else the t (and T) the loop holds. GpuError
// when too little.
kernels::GpuOffloadPlan plan_amplitudes_on_gpu(const Mp2GradientPlan& plan, std::size_t device_bytes);

// Plans the amplitude loop on a GPU of `device_bytes` (plan.gpu, plan_amplitudes_on_gpu) and, when
// `make_amplitudes_there` and their room fits, its amplitudes made there (amplitudes_on_gpu, RHF's
// I then not kept).
void plan_amplitude_loop_on_gpu(Mp2GradientPlan& plan, std::size_t device_bytes, bool make_amplitudes_there);

// The correlation energy the densities are of: opposite-spin (UHF: αβ) and same-spin parts, and
// for UHF the same-spin part by spin (αα + ββ = ss).
struct Mp2EnergyParts {
  double os = 0.0, ss = 0.0, aa = 0.0, bb = 0.0;
  double total() const { return os + ss; }
};

struct Mp2GradientDensities {
  Mp2EnergyParts energy;
  int cphf_iterations = 0;
  StageWork work;                        // this rank's, as Mp2Gradient's
  // Wall times: "ri_b" B_ia^P from the first RI pass, "ampl" the amplitude loop, "ri_lag" the
  // Lagrangian's RI pass, "zvector" the Fock responses, the Z-vector and W.
  std::vector<StagePart> parts;
  std::size_t gpu_uploaded_bytes = 0;    // copied to the GPU by the amplitude loop and the responses
  double electrons_per_orbital = 2.0;    // w: 2 for RHF's one set, 1 for UHF's two
  std::vector<Eigen::MatrixXd> relaxed;  // each set's P (AO, symmetric), the MP2 part only
  Eigen::MatrixXd energy_weighted;       // W of every set (AO, symmetric), the MP2 part only: −Σ W S^x
  std::vector<RowStore> gamma;           // each set's Γ_ia^P: row P, column i·nvir + a (i active)
  Eigen::MatrixXd metric;                // V_PQ, every set's
  // RHF's Z-vector's B^Q C_occ of the DF-SCF tensor's rows on this rank, each followed by C_occᵀ B^Q
  // C_occ (FockResponse::release_fitted_occupied_products), for the JK set's term, when the plan
  // keeps them (else empty).
  LargeArray<double> occupied_products;
};

// RHF or UHF orbitals (canonical), the lowest plan.sets[s].nfrozen of each set not correlated;
// the plan's sets must be the orbitals'. scf_fock: the DF-SCF's builder, for the Fock-like terms and
// the Z-vector (its occupied_response). scratch: for B and Γ's rows on
// disk (may be null when the plan has none). engine: of the large products (the RI passes', the
// fits', the amplitudes', the Lagrangian's, the Z-vector's and the densities' change of basis), on
// host memory. gpu: where the amplitude loop's products run when plan.gpu has them there, and
// then the Z-vector's when plan.z_vector_gpu has them there too (made for plan.gpu_device_bytes()),
// else null. Collective: the ranks share the RI batches and the
// amplitude blocks, and every rank returns the whole densities.
// z_convergence: the largest residual element. The gradient's error is about a fifth of it (uracil
// cc-pVDZ: 1e-9 moves it by 2.4e-10 Eh/bohr from 1e-11's, 1e-8 by 1.6e-9).
Mp2GradientDensities mp2_gradient_densities(const libint2::BasisSet& obs, const libint2::BasisSet& ri_aux,
                                            const ShellPairs& pairs, FockBuilder& scf_fock,
                                            const Orbitals& orbitals, const Mp2GradientPlan& plan, MemoryBudget& budget,
                                            const ScratchDirectory* scratch, Communicator& comm,
                                            kernels::ComputeEngine& engine, kernels::JKDevice* gpu,
                                            double z_convergence, Progress& progress);

}  // namespace dfmp2
