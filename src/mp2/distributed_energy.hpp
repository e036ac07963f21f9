// The MP2 energy step over MPI ranks. Rank r holds B for its share I_r of the occupied orbitals
// (of each spin, for UHF).
// Same spin (RHF, and UHF's αα and ββ): rank r sums its diagonal pairs (i ≥ j in I_r), then for
// k = 1 … ⌊N/2⌋ receives the share of rank r + k from that rank, a few orbitals at a time (≤ 1/8
// of a share), and sums the cross pairs (I_r, I_{r+k}); every pair of shares is summed by
// exactly one rank (for N even, the two ranks that meet at k = N/2 sum half of their pair each).
// Opposite spin (UHF's αβ, no i ≥ j symmetry): rank r sums its α share against its own β share,
// then for k = 1 … N − 1 against the β share of rank r + k, arriving in the same chunks.
// No rank holds more than its own shares and one visiting chunk. With one rank this is just the
// kernels.
#pragma once

#include <cstddef>

#include "kernels/mp2_energy.hpp"
#include "src/mp2/df_tensor.hpp"
#include "src/common/parallel.hpp"

namespace dfmp2 {

struct DistributedEnergy {
  // e_os, e_ss summed over ranks (UHF: E_OS = E_αβ, E_SS = E_αα + E_ββ); times are this rank's.
  kernels::EnergyResult energy;
  double e_aa = 0.0, e_bb = 0.0;  // UHF: E_SS by spin
  std::size_t peak_b_bytes = 0;   // B held by this rank at once: its shares plus a visiting chunk
};

// B held beyond this rank's own share: one visiting chunk (bytes; 0 on one rank).
std::size_t visiting_chunk_bytes(std::size_t nocc_total, std::size_t nvir, std::size_t naux, std::size_t elem_bytes,
                                 const Communicator& comm);

// B: this rank's share, row-major [df.nocc][df.nvir][df.naux], of the precision Real.
template <typename Real>
DistributedEnergy distributed_mp2_energy(kernels::Backend backend, const Real* B, const DFTensor& df,
                                         const kernels::EnergyOptions& options,
                                         Communicator& comm);

// UHF: the three pair blocks from this rank's α share (B_alpha, alpha) and β share (B_beta, beta):
// E_αα = ½ e_ss of the α pairs, E_ββ likewise, E_αβ of the opposite-spin pairs.
template <typename Real>
DistributedEnergy distributed_ump2_energy(kernels::Backend backend, const Real* B_alpha, const DFTensor& alpha,
                                          const Real* B_beta, const DFTensor& beta,
                                          const kernels::EnergyOptions& options, Communicator& comm);

}  // namespace dfmp2
