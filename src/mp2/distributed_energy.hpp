// The MP2 energy step over this rank's B and the other ranks'. Rank r holds B for its share I_r
// of the occupied orbitals (of each spin, for UHF): in memory, or on disk in rows of i.
//
// This rank's share is taken in blocks of occupied orbitals that fit the memory plan — one block,
// used where it lies, when B is in memory in the precision asked for. For each block I: its own
// pairs, its pairs with this rank's earlier blocks (each read or converted into a buffer, the next
// one read while the current pair block is summed), and, over MPI, its pairs with the other
// ranks' shares:
// Same spin (RHF, and UHF's αα and ββ): for k = 1 … ⌊N/2⌋ rank r receives the share of rank r + k
// from that rank, a few orbitals at a time (≤ 1/8 of a share), and sums the cross pairs; every
// pair of shares is summed by exactly one rank (for N even, the two ranks that meet at k = N/2
// sum half of their pair each).
// Opposite spin (UHF's αβ, no i ≥ j symmetry): each α block against this rank's β blocks, then
// for k = 1 … N − 1 against the β share of rank r + k, arriving in the same chunks.
// Every rank runs as many blocks as the rank with most, so that the exchanges pair up.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/mp2_energy.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/mp2/bia_tensor.hpp"

namespace dfmp2 {

// One spin's B as the energy step finds it on this rank.
struct EnergySpin {
  std::size_t nocc = 0;       // active occupied orbitals, all ranks
  std::size_t nocc_mine = 0;  // this rank's
  std::size_t nvir = 0;
  enum class Stored { fp64, fp32, disk } stored = Stored::fp64;  // in memory in fp64 or fp32, or on disk (fp64)
};

// Where the energy step runs: the CPU, or a GPU with gpu_bytes of its memory for the step, whose
// cuBLAS GEMM rate at the scale of T_flat (gemm_m × gemm_m × gemm_k) was probed: the step's floor.
struct EnergyDevice {
  bool gpu = false;
  std::size_t gpu_bytes = 0;
  kernels::GpuProperties properties;
  std::size_t gemm_m = 0, gemm_k = 0;
  double gemm_gflops = 0.0;
};

// What the memory plan decided for the energy step on this rank.
struct EnergyPlan {
  kernels::Backend backend = kernels::Backend::fused;  // resolved from automatic
  kernels::Precision precision = kernels::Precision::fp64;
  bool converted_copy = false;   // B converted whole into the precision asked for, then used in place
  std::size_t block_occ = 0;     // occupied orbitals per block (this rank's whole share: one block)
  bool blocks_loaded = false;    // blocks are read or converted into buffers (else used in place)
  std::size_t chunk_occ = 0;     // over MPI: occupied orbitals per visiting chunk
  std::size_t workspace_bytes = 0, loop_memory_bytes = 0;  // the backend's, and the loop backend's T_flat budget
  EnergyDevice device;                         // as planned for
  std::optional<kernels::GpuEnergyPlan> gpu;  // the step runs on the GPU, its device memory so planned
  StagePlan stage;
};

// The plan for `ram_bytes` of memory beside what is already held (B in memory counts in the
// stage's blocks but not against ram_bytes).
// On the GPU, blocks are also no larger than its memory holds (B resident when it does).
EnergyPlan plan_energy(const std::vector<EnergySpin>& spins, std::size_t naux, kernels::Backend backend,
                       kernels::Precision precision, std::size_t ram_bytes, Communicator& comm,
                       const EnergyDevice& device = {});

struct DistributedEnergy {
  // e_os, e_ss summed over ranks (UHF: E_OS = E_αβ, E_SS = E_αα + E_ββ); times are this rank's.
  kernels::EnergyResult energy;
  double e_aa = 0.0, e_bb = 0.0;  // UHF: E_SS by spin
  std::size_t peak_b_bytes = 0;   // B held by this rank at once: shares or blocks, and a visiting chunk
  std::size_t gpu_uploaded_bytes = 0;  // B copied to the GPU (more than B when blocks stream)
};

// The energy of one spin's B (RHF) or of UHF's α and β (beta not null), as planned. Collective.
DistributedEnergy distributed_mp2_energy(const BiaTensor& alpha, const BiaTensor* beta, const EnergyPlan& plan,
                                         MemoryBudget& budget, const std::function<void(double)>& progress,
                                         Communicator& comm);

}  // namespace dfmp2
