#include "src/mp2/distributed_energy.hpp"

#include <algorithm>
#include <functional>
#include <span>
#include <vector>

namespace dfmp2 {
namespace {

// Visiting shares arrive in chunks of at most 1/8 of the largest share (at least one orbital),
// so a rank holds little more than its own share of B.
std::size_t chunk_rows(std::size_t nocc_total, int ranks) {
  return std::max<std::size_t>(1, share_of(nocc_total, 0, ranks).size() / 8);
}

}  // namespace

std::size_t visiting_chunk_bytes(std::size_t nocc_total, std::size_t nvir, std::size_t naux, std::size_t elem_bytes,
                                 const Communicator& comm) {
  return comm.size() == 1 ? 0 : chunk_rows(nocc_total, comm.size()) * nvir * naux * elem_bytes;
}

namespace {

using ProgressFn = std::function<void(double)>;

void add(kernels::EnergyResult& sum, const kernels::EnergyResult& part) {
  sum.e_os += part.e_os;
  sum.e_ss += part.e_ss;
  sum.backend = part.backend;
  sum.gemm_seconds += part.gemm_seconds;
  sum.reduce_seconds += part.reduce_seconds;
  sum.total_seconds += part.total_seconds;
  sum.workspace_bytes = std::max(sum.workspace_bytes, part.workspace_bytes);
}

// This rank's share of one spin's B (all of it for RHF), rows [df.nocc][df.nvir][df.naux].
template <typename Real>
struct Share {
  const Real* B;
  const DFTensor& df;

  std::size_t row() const { return df.nvir * df.naux; }
  Range all() const { return {0, df.nocc}; }
  kernels::DFTensorView<Real> rows(Range r) const { return {B + r.begin * row(), r.size(), df.nvir, df.naux}; }
  std::span<const double> eps(Range r) const {
    return std::span<const double>(df.eps_occ).subspan(df.occ_begin + r.begin, r.size());
  }
};

// Other ranks' shares of one spin's B, arriving in chunks (chunk_rows).
template <typename Real>
class Visitors {
 public:
  Visitors(const Share<Real>& mine, Communicator& comm)
      : mine_(mine),
        comm_(comm),
        nocc_total_(mine.df.eps_occ.size()),
        chunk_(chunk_rows(nocc_total_, comm.size())),
        chunks_((share_of(nocc_total_, 0, comm.size()).size() + chunk_ - 1) / chunk_),
        buffer_(chunk_ * mine.row()) {}

  std::size_t chunks() const { return chunks_; }
  std::size_t bytes() const { return sizeof(Real) * buffer_.size(); }
  // The share of rank r + k.
  Range share(int k) const { return share_of(nocc_total_, (comm_.rank() + k) % comm_.size(), comm_.size()); }

  struct Chunk {
    kernels::DFTensorView<Real> B;
    std::span<const double> eps_occ;
  };
  // Chunk t of the exchange k steps round the ring: sends chunk t of rows `sent` of this rank's
  // share to rank r − k while receiving chunk t of rows `summed` of rank r + k's share.
  Chunk exchange(int k, Range sent, Range summed, std::size_t t) {
    const int N = comm_.size(), r = comm_.rank();
    auto chunk_of = [&](Range rows) {
      const std::size_t begin = std::min(rows.end, rows.begin + t * chunk_);
      return Range{begin, std::min(rows.end, begin + chunk_)};
    };
    const Range out = chunk_of(sent), in = chunk_of(summed), visitor = share(k);
    const std::size_t row = mine_.row();
    comm_.sendrecv(mine_.B + out.begin * row, sizeof(Real) * out.size() * row, (r - k + N) % N, buffer_.data(),
                   sizeof(Real) * in.size() * row, (r + k) % N);
    return {{buffer_.data(), in.size(), mine_.df.nvir, mine_.df.naux},
            std::span<const double>(mine_.df.eps_occ).subspan(visitor.begin + in.begin, in.size())};
  }

 private:
  const Share<Real>& mine_;
  Communicator& comm_;
  std::size_t nocc_total_, chunk_, chunks_;
  std::vector<Real> buffer_;
};

// One pair block's sum on this rank (before the sum over ranks) and the visiting chunk it held.
struct BlockSum {
  kernels::EnergyResult energy;
  std::size_t visiting_bytes = 0;
};

// Over MPI the kernels' own progress would count one rank's part only: progress is per exchange
// step instead.
kernels::EnergyOptions kernel_options(const kernels::EnergyOptions& options, const ProgressFn& progress, int ranks) {
  kernels::EnergyOptions kernel = options;
  kernel.progress = ranks > 1 ? nullptr : progress;
  return kernel;
}

// The same-spin pairs of one spin's B (see distributed_energy.hpp).
template <typename Real>
BlockSum same_spin_pairs(kernels::Backend backend, const Share<Real>& mine, const kernels::EnergyOptions& options,
                         const ProgressFn& progress, Communicator& comm) {
  const int N = comm.size(), r = comm.rank();
  const kernels::EnergyOptions kernel = kernel_options(options, progress, N);
  BlockSum sum;
  if (mine.df.nocc > 0)
    add(sum.energy, kernels::mp2_energy<Real>(backend, mine.rows(mine.all()), mine.eps(mine.all()), mine.df.eps_vir,
                                               kernel));
  if (N == 1) return sum;
  Visitors<Real> visitors(mine, comm);
  sum.visiting_bytes = visitors.bytes();
  const int steps = N / 2;
  for (int k = 1; k <= steps; ++k) {
    // Rows of my share I send, rows of the visitor's share I sum against, and my rows in them.
    Range sent = mine.all(), summed{0, visitors.share(k).size()}, own = mine.all();
    // With N even, ranks r and r + N/2 meet at k = N/2 from both sides and split the
    // pair: the lower sums I_lo × (first half of I_hi), the higher (second half of I_hi) × I_lo.
    if (N % 2 == 0 && k == N / 2) {
      if (r < N / 2) {
        summed.end = summed.size() / 2;
      } else {
        sent.end = mine.df.nocc / 2;
        own.begin = mine.df.nocc / 2;
      }
    }
    for (std::size_t t = 0; t < visitors.chunks(); ++t) {
      const auto in = visitors.exchange(k, sent, summed, t);
      if (in.B.nocc > 0 && own.size() > 0)
        add(sum.energy, kernels::mp2_energy_cross<Real>(backend, mine.rows(own), mine.eps(own), in.B, in.eps_occ,
                                                        mine.df.eps_vir, kernel));
      if (progress && comm.is_root())
        progress(static_cast<double>((k - 1) * visitors.chunks() + t + 1) /
                 static_cast<double>(steps * visitors.chunks()));
    }
  }
  return sum;
}

// The opposite-spin pairs: this rank's α share against every rank's β share.
template <typename Real>
BlockSum opposite_spin_pairs(kernels::Backend backend, const Share<Real>& alpha, const Share<Real>& beta,
                             const kernels::EnergyOptions& options, const ProgressFn& progress, Communicator& comm) {
  const int N = comm.size();
  const kernels::EnergyOptions kernel = kernel_options(options, progress, N);
  const auto pairs_with = [&](const kernels::DFTensorView<Real>& B_beta, std::span<const double> eps_beta) {
    return kernels::mp2_energy_opposite_spin<Real>(backend, alpha.rows(alpha.all()), alpha.eps(alpha.all()),
                                                   alpha.df.eps_vir, B_beta, eps_beta, beta.df.eps_vir, kernel);
  };
  BlockSum sum;
  if (alpha.df.nocc > 0 && beta.df.nocc > 0) add(sum.energy, pairs_with(beta.rows(beta.all()), beta.eps(beta.all())));
  if (N == 1) return sum;
  Visitors<Real> visitors(beta, comm);
  sum.visiting_bytes = visitors.bytes();
  for (int k = 1; k < N; ++k)
    for (std::size_t t = 0; t < visitors.chunks(); ++t) {
      const auto in = visitors.exchange(k, beta.all(), {0, visitors.share(k).size()}, t);
      if (in.B.nocc > 0 && alpha.df.nocc > 0) add(sum.energy, pairs_with(in.B, in.eps_occ));
      if (progress && comm.is_root())
        progress(static_cast<double>((k - 1) * visitors.chunks() + t + 1) /
                 static_cast<double>((N - 1) * visitors.chunks()));
    }
  return sum;
}

// Progress of one part of the step: its fractions mapped onto [offset, offset + share).
ProgressFn part_of(const ProgressFn& progress, double offset, double share) {
  if (!progress) return {};
  return [&progress, offset, share](double done) { progress(offset + share * done); };
}

}  // namespace

template <typename Real>
DistributedEnergy distributed_mp2_energy(kernels::Backend backend, const Real* B, const DFTensor& df,
                                         const kernels::EnergyOptions& options, Communicator& comm) {
  const Share<Real> mine{B, df};
  const BlockSum sum = same_spin_pairs(backend, mine, options, options.progress, comm);
  DistributedEnergy result;
  result.energy = sum.energy;
  result.peak_b_bytes = sizeof(Real) * df.nocc * mine.row() + sum.visiting_bytes;
  double sums[2] = {result.energy.e_os, result.energy.e_ss};
  comm.allreduce_sum(sums, 2);
  result.energy.e_os = sums[0];
  result.energy.e_ss = sums[1];
  return result;
}

template <typename Real>
DistributedEnergy distributed_ump2_energy(kernels::Backend backend, const Real* B_alpha, const DFTensor& alpha,
                                          const Real* B_beta, const DFTensor& beta,
                                          const kernels::EnergyOptions& options, Communicator& comm) {
  const Share<Real> a{B_alpha, alpha}, b{B_beta, beta};
  // Progress in proportion to each block's work.
  const std::size_t na = alpha.eps_occ.size(), nb = beta.eps_occ.size(), naux = alpha.naux;
  const double total = kernels::needed_flops_unrestricted(na, alpha.nvir, nb, beta.nvir, naux);
  const double share_aa = kernels::needed_flops(na, alpha.nvir, naux) / total;
  const double share_bb = kernels::needed_flops(nb, beta.nvir, naux) / total;
  const BlockSum aa = same_spin_pairs(backend, a, options, part_of(options.progress, 0.0, share_aa), comm);
  const BlockSum bb = same_spin_pairs(backend, b, options, part_of(options.progress, share_aa, share_bb), comm);
  const BlockSum ab = opposite_spin_pairs(backend, a, b, options,
                                          part_of(options.progress, share_aa + share_bb, 1.0 - share_aa - share_bb),
                                          comm);
  DistributedEnergy result;
  for (const BlockSum* block : {&aa, &bb, &ab}) add(result.energy, block->energy);
  result.peak_b_bytes = sizeof(Real) * (alpha.nocc * a.row() + beta.nocc * b.row()) +
                        std::max({aa.visiting_bytes, bb.visiting_bytes, ab.visiting_bytes});
  // One spin's e_ss sums both orderings of its exchange-antisymmetrised pairs: twice E_σσ.
  double sums[3] = {0.5 * aa.energy.e_ss, 0.5 * bb.energy.e_ss, ab.energy.e_os};
  comm.allreduce_sum(sums, 3);
  result.e_aa = sums[0];
  result.e_bb = sums[1];
  result.energy.e_ss = sums[0] + sums[1];
  result.energy.e_os = sums[2];
  return result;
}

#define DFMP2_INSTANTIATE_DISTRIBUTED(Real)                                                                     \
  template DistributedEnergy distributed_mp2_energy<Real>(kernels::Backend, const Real*, const DFTensor&,       \
                                                          const kernels::EnergyOptions&, Communicator&);        \
  template DistributedEnergy distributed_ump2_energy<Real>(kernels::Backend, const Real*, const DFTensor&,      \
                                                           const Real*, const DFTensor&,                        \
                                                           const kernels::EnergyOptions&, Communicator&);
DFMP2_INSTANTIATE_DISTRIBUTED(double)
DFMP2_INSTANTIATE_DISTRIBUTED(float)

}  // namespace dfmp2
