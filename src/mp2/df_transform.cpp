#include "src/mp2/df_transform.hpp"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/blas.hpp"
#include "kernels/packed.hpp"
#include "src/common/errors.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {
namespace {

using kernels::Transpose;

// Unpacked (Q|μν) per thread: a few Q that stay in cache between the unpack and the GEMM.
constexpr std::size_t kUnpackBytes = std::size_t(4) << 20;

std::size_t q_per_unpack(std::size_t nbf) {
  return std::max<std::size_t>(1, kUnpackBytes / (sizeof(double) * nbf * nbf));
}

// (Q|ia) = C_virᵀ (Q|μν) C_occ for q_count rows of packed (Q|μν), into Qia rows [Q][i][a].
void transform_rows(const double* packed, std::size_t q_count, const Eigen::MatrixXd& C_occ,
                    const Eigen::MatrixXd& C_vir, double* Qia) {
  const std::size_t nbf = C_occ.rows(), nocc = C_occ.cols(), nvir = C_vir.cols();
  const std::size_t npacked = kernels::packed_size(nbf), per_unpack = q_per_unpack(nbf);
  const std::size_t groups = (q_count + per_unpack - 1) / per_unpack;
#pragma omp parallel
  {
    std::vector<double> unpacked(per_unpack * nbf * nbf), X(per_unpack * nbf * nocc);
#pragma omp for schedule(dynamic)
    for (std::size_t g = 0; g < groups; ++g) {
      const std::size_t first = g * per_unpack, count = std::min(per_unpack, q_count - first);
      for (std::size_t q = 0; q < count; ++q)
        kernels::unpack_symmetric(packed + (first + q) * npacked, nbf, unpacked.data() + q * nbf * nbf);
      // Rows (q, μ) of the stacked (Q|μν) times C_occ: X^q_μi at X[q nbf + μ + count nbf i].
      kernels::gemm(Transpose::yes, Transpose::no, count * nbf, nocc, nbf, 1.0, unpacked.data(), nbf, C_occ.data(),
                    nbf, 0.0, X.data(), count * nbf);
      for (std::size_t q = 0; q < count; ++q)  // column-major nvir × nocc is row-major [i][a]
        kernels::gemm(Transpose::yes, Transpose::no, nvir, nocc, nbf, 1.0, C_vir.data(), nbf, X.data() + q * nbf,
                      count * nbf, 0.0, Qia + (first + q) * nocc * nvir, nvir);
    }
  }
}

// [P][x] → [x][P] in tiles that stay in cache.
void transpose(const double* in, std::size_t rows, std::size_t cols, double* out) {
  constexpr std::size_t kTile = 64;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile)
    for (std::size_t c0 = 0; c0 < cols; c0 += kTile)
      for (std::size_t c = c0; c < std::min(cols, c0 + kTile); ++c)
        for (std::size_t r = r0; r < std::min(rows, r0 + kTile); ++r) out[c * rows + r] = in[r * cols + c];
}

}  // namespace

DFTensor build_df_tensor(const DFTransformInput& in, MemoryBudget& budget,
                         const std::function<void(double)>& progress, Communicator& comm, StageWork& work) {
  const std::size_t nbf = in.obs.nbf(), naux = in.aux.nbf(), npacked = kernels::packed_size(nbf);
  const std::size_t nocc = in.C_occ.cols(), nvir = in.C_vir.cols(), nov = nocc * nvir;
  // This rank computes (Q|ia) for its auxiliary shells and ends up with B for its occupied block.
  const ShellRange my_shells = shell_part(in.aux, comm.rank(), comm.size());
  const Range my_q{first_function(in.aux, my_shells.first), first_function(in.aux, my_shells.last)};
  auto occ_share = [&](int rank) { return share_of(nocc, rank, comm.size()); };
  const Range my_occ = occ_share(comm.rank());
  const std::size_t my_nov = my_occ.size() * nvir;

  const Eigen::MatrixXd metric = coulomb_metric(in.aux);
  const ThreeIndexIntegrals integrals(in.aux, in.obs, in.pairs, metric);
  LargeArray<double> Qia = budget.allocate<double>(my_q.size() * nov, "the DF-MP2 tensor (Q|ia)");
  {
    // Batches of (Q|μν) as large as the budget allows once the exchange between ranks and B
    // itself (both made after the batches are freed) are set aside.
    const std::size_t later = sizeof(double) * (comm.size() > 1 ? 2 : 1) * naux * my_nov;
    const std::size_t workspace = sizeof(double) * omp_get_max_threads() * q_per_unpack(nbf) * nbf * (nbf + nocc);
    std::size_t largest_shell = 0;
    for (const auto& shell : in.aux) largest_shell = std::max(largest_shell, shell.size());
    const std::size_t row_bytes = sizeof(double) * npacked, free = budget.available();
    budget.require(later + workspace + largest_shell * row_bytes, "the DF-MP2 transform");
    const auto reserved = budget.reserve(workspace, "the DF-MP2 transform's workspace");
    const auto batches = shell_batches(in.aux, my_shells, (free - later - workspace) / row_bytes);
    std::size_t batch_rows = 0;
    for (const auto& batch : batches) batch_rows = std::max(batch_rows, function_count(in.aux, batch));
    LargeArray<double> ao = budget.allocate<double>(batch_rows * npacked, "the DF-MP2 integrals (Q|μν)");
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const std::size_t q_first = first_function(in.aux, batches[b].first);
      const std::size_t q_count = function_count(in.aux, batches[b]);
      const ShellRange all_rows{0, in.obs.size()};
      integrals.compute(batches[b], all_rows, ao.data());
      work.libint_seconds += integrals.libint_seconds(batches[b], all_rows);
      transform_rows(ao.data(), q_count, in.C_occ, in.C_vir, Qia.data() + (q_first - my_q.begin) * nov);
      work.flops_fp64 += 2.0 * double(q_count) * double(nbf) * double(nocc) * double(nbf + nvir);
      if (progress) progress(static_cast<double>(b + 1) / static_cast<double>(batches.size()));
    }
  }

  // Fit: B^P_ia for this rank's i, row-major [P][i a]. Over MPI the ranks first trade parts so
  // that each holds every P for its i (the metric mixes P).
  if (comm.size() > 1) {
    auto q_of = [&](int rank) {
      const ShellRange shells = shell_part(in.aux, rank, comm.size());
      return Range{first_function(in.aux, shells.first), first_function(in.aux, shells.last)};
    };
    auto ia_of = [&](int rank) {
      const Range occ = occ_share(rank);
      return Range{occ.begin * nvir, occ.end * nvir};
    };
    LargeArray<double> mine = budget.allocate<double>(naux * my_nov, "the DF-MP2 tensor (exchange between ranks)");
    redistribute(
        comm, Qia.data(), [&](int rank) { return MatrixPart{q_of(rank), {0, nov}}; },
        [&](int rank) { return MatrixPart{{0, naux}, ia_of(rank)}; }, mine.data());
    Qia = std::move(mine);
  }
  const CoulombFitting fitting(metric);
  fitting.apply(Qia.data(), my_nov);
  work.flops_fp64 += fitting.flops(my_nov);

  DFTensor df;
  df.nocc = my_occ.size();
  df.occ_begin = my_occ.begin;
  df.nvir = nvir;
  df.naux = naux;
  df.B64 = budget.allocate<double>(my_nov * naux, "the DF-MP2 tensor B_ia^P");
  transpose(Qia.data(), naux, my_nov, df.B64.data());
  df.eps_occ.assign(in.eps_occ.data(), in.eps_occ.data() + nocc);
  df.eps_vir.assign(in.eps_vir.data(), in.eps_vir.data() + nvir);
  return df;
}

}  // namespace dfmp2
