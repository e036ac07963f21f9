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

// (Q|ia) = C_virᵀ (Q|μν) C_occ for q_count rows of packed (Q|μν), into Qia rows [Q][i][a].
void transform_rows(const double* packed, std::size_t q_count, const Eigen::MatrixXd& C_occ,
                    const Eigen::MatrixXd& C_vir, double* Qia) {
  const std::size_t nbf = C_occ.rows(), nocc = C_occ.cols(), nvir = C_vir.cols();
  const std::size_t npacked = kernels::packed_size(nbf);
#pragma omp parallel
  {
    std::vector<double> square(nbf * nbf), X(nbf * nocc);
#pragma omp for schedule(dynamic)
    for (std::size_t q = 0; q < q_count; ++q) {
      // X = (q|μν) C_occ by SYMM from one triangle: no mirrored, strided writes.
      kernels::unpack_upper(packed + q * npacked, nbf, square.data());
      kernels::symm_upper_left(nbf, nocc, square.data(), nbf, C_occ.data(), nbf, X.data(), nbf);
      // column-major nvir × nocc is row-major [i][a]
      kernels::gemm(Transpose::yes, Transpose::no, nvir, nocc, nbf, 1.0, C_vir.data(), nbf, X.data(), nbf, 0.0,
                    Qia + q * nocc * nvir, nvir);
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

// Which part of (Q|ia) and B a rank holds: (Q|ia) for its auxiliary shells, then B for its
// share of the occupied orbitals.
struct Layout {
  const libint2::BasisSet& aux;
  std::size_t nbf, nocc, nvir;
  int ranks;

  ShellRange shells_of(int rank) const { return shell_part(aux, rank, ranks); }
  Range q_of(int rank) const {
    const ShellRange shells = shells_of(rank);
    return {first_function(aux, shells.first), first_function(aux, shells.last)};
  }
  Range ia_of(int rank) const {
    const Range occ = share_of(nocc, rank, ranks);
    return {occ.begin * nvir, occ.end * nvir};
  }
  std::size_t nov() const { return nocc * nvir; }
  std::size_t naux() const { return static_cast<std::size_t>(aux.nbf()); }
  std::size_t row_bytes() const { return sizeof(double) * kernels::packed_size(nbf); }
  std::size_t workspace_bytes() const {
    return sizeof(double) * omp_get_max_threads() * nbf * (nbf + nocc);
  }
  // Beyond (Q|ia): after the batches, the exchange between ranks and B itself.
  std::size_t later_bytes(int rank) const {
    return sizeof(double) * (ranks > 1 ? 2 : 1) * naux() * ia_of(rank).size();
  }
};

// (Q|ia) for this rank's auxiliary shells, in batches of packed (Q|μν) as large as the budget
// allows.
LargeArray<double> transform_my_shells(const DFTransformInput& in, const Layout& layout, const ThreeIndexIntegrals& integrals,
                                       MemoryBudget& budget, const std::function<void(double)>& progress, int rank,
                                       DFTransformStats& stats) {
  const Range my_q = layout.q_of(rank);
  const std::size_t nbf = layout.nbf, nov = layout.nov();
  LargeArray<double> Qia = budget.allocate<double>(my_q.size() * nov, "the DF-MP2 tensor (Q|ia)");
  const auto workspace = budget.reserve(layout.workspace_bytes(), "the DF-MP2 transform's workspace");
  const auto batches = shell_batches(layout.aux, layout.shells_of(rank), budget.available() / layout.row_bytes());
  stats.batches = batches.size();
  std::size_t batch_rows = 0;
  for (const auto& batch : batches) batch_rows = std::max(batch_rows, function_count(layout.aux, batch));
  LargeArray<double> ao = budget.allocate<double>(batch_rows * kernels::packed_size(nbf), "the DF-MP2 integrals (Q|μν)");
  const ShellRange all_rows{0, in.obs.size()};
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const std::size_t q_first = first_function(layout.aux, batches[b].first);
    const std::size_t q_count = function_count(layout.aux, batches[b]);
    integrals.compute(batches[b], all_rows, ao.data());
    stats.work.libint_seconds += integrals.libint_seconds(batches[b], all_rows);
    transform_rows(ao.data(), q_count, in.C_occ, in.C_vir, Qia.data() + (q_first - my_q.begin) * nov);
    stats.work.flops_fp64 += 2.0 * double(q_count) * double(nbf) * double(layout.nocc) * double(nbf + layout.nvir);
    if (progress) progress(static_cast<double>(b + 1) / static_cast<double>(batches.size()));
  }
  return Qia;
}

}  // namespace

DFTensor build_df_tensor(const DFTransformInput& in, MemoryBudget& budget,
                         const std::function<void(double)>& progress, Communicator& comm, DFTransformStats& stats) {
  const Layout layout{in.aux, static_cast<std::size_t>(in.obs.nbf()), static_cast<std::size_t>(in.C_occ.cols()),
                      static_cast<std::size_t>(in.C_vir.cols()), comm.size()};
  const std::size_t naux = layout.naux(), my_nov = layout.ia_of(comm.rank()).size();
  const auto fit_memory = budget.reserve(CoulombFitting::peak_bytes(naux), "the DF-MP2 fitting metric");
  const Eigen::MatrixXd metric = coulomb_metric(in.aux);
  LargeArray<double> Qia =
      transform_my_shells(in, layout, ThreeIndexIntegrals(in.aux, in.obs, in.pairs, metric), budget, progress,
                          comm.rank(), stats);
  // Fit: B^P_ia for this rank's i, row-major [P][i a]. Over MPI the ranks first trade parts so
  // that each holds every P for its i (the metric mixes P).
  if (comm.size() > 1) {
    LargeArray<double> mine = budget.allocate<double>(naux * my_nov, "the DF-MP2 tensor (exchange between ranks)");
    redistribute(
        comm, Qia.data(), [&](int rank) { return MatrixPart{layout.q_of(rank), {0, layout.nov()}}; },
        [&](int rank) { return MatrixPart{{0, naux}, layout.ia_of(rank)}; }, mine.data());
    Qia = std::move(mine);
  }
  const CoulombFitting fitting(metric);
  fitting.apply(Qia.data(), my_nov);
  stats.work.flops_fp64 += fitting.flops(my_nov);

  DFTensor df;
  const Range my_occ = share_of(layout.nocc, comm.rank(), comm.size());
  df.nocc = my_occ.size();
  df.occ_begin = my_occ.begin;
  df.nvir = layout.nvir;
  df.naux = naux;
  df.B64 = budget.allocate<double>(my_nov * naux, "the DF-MP2 tensor B_ia^P");
  transpose(Qia.data(), naux, my_nov, df.B64.data());
  df.eps_occ.assign(in.eps_occ.data(), in.eps_occ.data() + layout.nocc);
  df.eps_vir.assign(in.eps_vir.data(), in.eps_vir.data() + layout.nvir);
  return df;
}

std::size_t df_transform_peak_bytes(const libint2::BasisSet& obs, const libint2::BasisSet& aux, std::size_t nocc,
                                    std::size_t nvir, const Communicator& comm) {
  const Layout layout{aux, static_cast<std::size_t>(obs.nbf()), nocc, nvir, comm.size()};
  std::size_t largest_shell = 0;
  for (const auto& shell : aux) largest_shell = std::max(largest_shell, shell.size());
  const std::size_t qia = sizeof(double) * layout.q_of(comm.rank()).size() * layout.nov();
  return CoulombFitting::peak_bytes(layout.naux()) + qia +
         std::max(layout.workspace_bytes() + largest_shell * layout.row_bytes(), layout.later_bytes(comm.rank()));
}

}  // namespace dfmp2
