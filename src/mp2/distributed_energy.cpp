#include "src/mp2/distributed_energy.hpp"

#include <algorithm>
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

template <typename Real>
DistributedEnergy distributed_mp2_energy(kernels::Backend backend, const Real* B, const DFTensor& df,
                                         const kernels::EnergyOptions& options,
                                         Communicator& comm) {
  const int N = comm.size(), r = comm.rank();
  const std::size_t nocc_total = df.eps_occ.size(), row = df.nvir * df.naux;
  const std::span<const double> eps_occ(df.eps_occ);
  DistributedEnergy result;
  result.peak_b_bytes = sizeof(Real) * df.nocc * row;
  kernels::EnergyOptions kernel_options = options;
  if (N > 1) kernel_options.progress = nullptr;  // progress is per exchange step below
  auto add = [&](const kernels::EnergyResult& part) {
    result.energy.e_os += part.e_os;
    result.energy.e_ss += part.e_ss;
    result.energy.backend = part.backend;
    result.energy.gemm_seconds += part.gemm_seconds;
    result.energy.reduce_seconds += part.reduce_seconds;
    result.energy.total_seconds += part.total_seconds;
    result.energy.workspace_bytes = std::max(result.energy.workspace_bytes, part.workspace_bytes);
  };
  const kernels::DFTensorView<Real> mine{B, df.nocc, df.nvir, df.naux};
  const auto my_eps = eps_occ.subspan(df.occ_begin, df.nocc);
  if (df.nocc > 0)
    add(kernels::mp2_energy<Real>(backend, mine, my_eps, df.eps_vir, kernel_options));
  if (N == 1) return result;

  const std::size_t largest_share = share_of(nocc_total, 0, N).size();
  const std::size_t chunk = chunk_rows(nocc_total, N);
  const std::size_t chunks = (largest_share + chunk - 1) / chunk;
  std::vector<Real> visiting(chunk * row);
  result.peak_b_bytes += sizeof(Real) * visiting.size();
  const int steps = N / 2;
  for (int k = 1; k <= steps; ++k) {
    const int source = (r + k) % N, destination = (r - k + N) % N;
    const Range visitor = share_of(nocc_total, source, N);
    // Rows of my share I send, rows of the visitor's share I sum against, and my rows in them.
    Range sent{0, df.nocc}, summed{0, visitor.size()}, own{0, df.nocc};
    // With N even, ranks r and r + N/2 meet at k = N/2 from both sides and split the
    // pair: the lower sums I_lo × (first half of I_hi), the higher (second half of I_hi) × I_lo.
    if (N % 2 == 0 && k == N / 2) {
      if (r < N / 2) {
        summed.end = visitor.size() / 2;
      } else {
        sent.end = df.nocc / 2;
        own.begin = df.nocc / 2;
      }
    }
    const kernels::DFTensorView<Real> own_rows{B + own.begin * row, own.size(), df.nvir, df.naux};
    for (std::size_t t = 0; t < chunks; ++t) {
      auto chunk_of = [&](Range rows) {
        const std::size_t begin = std::min(rows.end, rows.begin + t * chunk);
        return Range{begin, std::min(rows.end, begin + chunk)};
      };
      const Range out = chunk_of(sent), in = chunk_of(summed);
      comm.sendrecv(B + out.begin * row, sizeof(Real) * out.size() * row, destination,
                    visiting.data(), sizeof(Real) * in.size() * row, source);
      if (in.size() > 0 && own.size() > 0)
        add(kernels::mp2_energy_cross<Real>(
            backend, own_rows, my_eps.subspan(own.begin, own.size()),
            {visiting.data(), in.size(), df.nvir, df.naux},
            eps_occ.subspan(visitor.begin + in.begin, in.size()), df.eps_vir, kernel_options));
      if (options.progress && comm.is_root())
        options.progress(static_cast<double>((k - 1) * chunks + t + 1) /
                         static_cast<double>(steps * chunks));
    }
  }
  double sums[2] = {result.energy.e_os, result.energy.e_ss};
  comm.allreduce_sum(sums, 2);
  result.energy.e_os = sums[0];
  result.energy.e_ss = sums[1];
  return result;
}

template DistributedEnergy distributed_mp2_energy<double>(kernels::Backend, const double*,
                                                          const DFTensor&,
                                                          const kernels::EnergyOptions&,
                                                          Communicator&);
template DistributedEnergy distributed_mp2_energy<float>(kernels::Backend, const float*,
                                                         const DFTensor&,
                                                         const kernels::EnergyOptions&,
                                                         Communicator&);

}  // namespace dfmp2
