#include "src/integrals/fitted_tensor_store.hpp"

#include <algorithm>

#include <omp.h>

#include "src/integrals/density_fitting.hpp"
#include "src/integrals/three_index.hpp"

namespace dfmp2 {

bool FittedTensorPlan::in_place() const {
  return ranks == 1 && ram_rows == q.size() && batch_columns >= stored;
}

std::size_t setup_exchange_bytes(const FittedTensorPlan& plan) {
  const std::size_t parts = std::max(plan.naux * plan.batch_columns, plan.q.size() * plan.exchange_columns);
  return redistribute_buffer_bytes(sizeof(double) * plan.exchange_columns, sizeof(double) * parts);
}

std::vector<ShellRange> fitted_tensor_batches(const libint2::BasisSet& obs, const ShellPairs& pairs,
                                              const FittedTensorPlan& plan, int rank, int ranks) {
  const kernels::BlockPackedLayout& layout = pairs.layout;
  return shell_batches(shell_part_of_rows(obs, layout, rank, ranks), plan.batch_columns, [&layout](std::size_t shell) {
    return layout.row_block_offset(shell + 1) - layout.row_block_offset(shell);
  });
}

namespace {

// One round of the set-up over MPI: every rank's batch of columns (fitted, all P) becomes this
// rank's rows Q of all of them, which go to their places in the store.
void trade_round(Communicator& comm, const FittedTensorPlan& plan, const kernels::BlockPackedLayout& layout,
                 const std::vector<ShellRange>& batch_of_rank, const double* mine, double* traded, RowStore& store) {
  const int N = comm.size();
  std::vector<std::size_t> offset(static_cast<std::size_t>(N) + 1, 0);  // of each rank's columns in the round
  for (int r = 0; r < N; ++r) {
    const ShellRange b = batch_of_rank[static_cast<std::size_t>(r)];
    offset[r + 1] = offset[r] + layout.row_block_offset(b.last) - layout.row_block_offset(b.first);
  }
  const std::size_t width = offset.back();
  redistribute(
      comm, mine, [&](int r) { return MatrixPart{{0, plan.naux}, {offset[r], offset[r + 1]}}; },
      [&](int r) { return MatrixPart{share_of(plan.naux, r, N), {0, width}}; }, traded);
  if (traded == store.ram()) return;  // one round straight into the rows in memory
  for (int r = 0; r < N; ++r)
    if (offset[r + 1] > offset[r])
      store.write(0, store.rows(), layout.row_block_offset(batch_of_rank[static_cast<std::size_t>(r)].first),
                  offset[r + 1] - offset[r], traded + offset[r], width);
}

// Computes and fits the integrals of a batch of shell rows into out, rows `stride` apart (0: the
// batch's own columns).
using ComputeAndFit = std::function<void(ShellRange rows, double* out, std::size_t stride)>;

// Straight into the rows in memory, still by batches of shell rows (about 16, each a few fitting
// blocks per thread wide) so that the stage shows its progress.
void fill_in_place(const libint2::BasisSet& obs, const ShellPairs& pairs, const FittedTensorPlan& plan, RowStore& store,
                   const ComputeAndFit& compute_and_fit, const std::function<void(double)>& progress) {
  FittedTensorPlan by_rows = plan;
  by_rows.batch_columns = std::max(plan.stored / 16, std::size_t{8192} * static_cast<std::size_t>(omp_get_max_threads()));
  const std::vector<ShellRange> batches = fitted_tensor_batches(obs, pairs, by_rows, 0, 1);
  for (std::size_t k = 0; k < batches.size(); ++k) {
    compute_and_fit(batches[k], store.ram() + pairs.layout.row_block_offset(batches[k].first), plan.stored);
    if (progress) progress(double(k + 1) / double(batches.size()));
  }
}

// Batch by batch into a buffer, then into the store: this rank's rows in memory and on disk, or
// over MPI traded round by round so each rank keeps its rows Q of every batch.
void fill_by_rounds(const libint2::BasisSet& obs, const ShellPairs& pairs, const FittedTensorPlan& plan,
                    const ThreeIndexIntegrals& integrals, RowStore& store, MemoryBudget& budget, Communicator& comm,
                    const ComputeAndFit& compute_and_fit, const std::function<void(double)>& progress) {
  const int N = comm.size();
  std::vector<std::vector<ShellRange>> batches;
  std::size_t rounds = 0;
  for (int r = 0; r < N; ++r) {
    batches.push_back(fitted_tensor_batches(obs, pairs, plan, r, N));
    rounds = std::max(rounds, batches.back().size());
  }
  LargeArray<double> batch =
      budget.allocate<double>(plan.naux * plan.batch_columns, "the DF-SCF integrals of a batch of shell rows");
  // Over MPI one round straight into the rows in memory, when it is the whole tensor.
  const bool direct = N > 1 && rounds == 1 && store.disk_rows() == 0;
  LargeArray<double> traded;
  MemoryBudget::Reservation slabs;
  if (N > 1) {
    if (!direct) traded = budget.allocate<double>(plan.q.size() * plan.exchange_columns, "the DF-SCF tensor traded");
    slabs = budget.reserve(setup_exchange_bytes(plan), "the exchange between ranks");
  }
  const kernels::BlockPackedLayout& layout = pairs.layout;
  for (std::size_t k = 0; k < rounds; ++k) {
    std::vector<ShellRange> batch_of_rank;
    for (const auto& b : batches) batch_of_rank.push_back(k < b.size() ? b[k] : ShellRange{});
    const ShellRange mine = batch_of_rank[static_cast<std::size_t>(comm.rank())];
    compute_and_fit(mine, batch.data(), 0);
    if (N == 1) {
      const std::size_t columns = integrals.columns(mine);
      store.write(0, plan.naux, layout.row_block_offset(mine.first), columns, batch.data(), columns);
    } else {
      trade_round(comm, plan, layout, batch_of_rank, batch.data(), direct ? store.ram() : traded.data(), store);
    }
    if (progress) progress(double(k + 1) / double(rounds));
  }
}

}  // namespace

FittedTensorStore::FittedTensorStore(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                                     const FittedTensorPlan& plan, MemoryBudget& budget,
                                     const ScratchDirectory* scratch, Communicator& comm,
                                     const std::function<void(double)>& progress)
    : q_(plan.q), store_(plan.q.size(), plan.stored, plan.ram_rows, budget, scratch, "the DF-SCF three-index tensor") {
  fill(obs, aux, pairs, plan, budget, comm, progress);
  // After the metric and the batch are given back: the builder's plan holds the read buffers, and
  // beside them here they could pass the integrals stage's plan by a page.
  if (store_.disk_rows() > 0)
    read_buffers_ = budget.allocate<double>(2 * plan.read_rows * plan.stored, "the DF-SCF tensor's read buffers");
}

void FittedTensorStore::fill(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                             const FittedTensorPlan& plan, MemoryBudget& budget, Communicator& comm,
                             const std::function<void(double)>& progress) {
  const auto fit_memory = budget.reserve(CoulombFitting::peak_bytes(plan.naux), "the DF-SCF fitting metric");
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  const ThreeIndexIntegrals integrals(aux, obs, pairs, metric);
  CoulombFitting fitting(metric);
  std::optional<GpuFit> gpu_fit;
  if (plan.gpu_fit) fitting.use_engine(gpu_fit.emplace(*plan.gpu_fit, "the DF-SCF tensor's fit").engine());
  const ShellRange all_aux{0, aux.size()};
  const ComputeAndFit compute_and_fit = [&](ShellRange rows, double* out, std::size_t stride) {
    const std::size_t columns = integrals.columns(rows);
    if (columns == 0) return;
    integrals.compute(all_aux, rows, out, stride);
    work_.libint_seconds += integrals.libint_seconds(all_aux, rows);
    fitting.apply(out, columns, stride);
    work_.add_fp64_flops(fitting.flops(columns), gpu_fit.has_value(), plan.gpu_gflops);
  };
  if (plan.in_place())
    fill_in_place(obs, pairs, plan, store_, compute_and_fit, progress);
  else
    fill_by_rounds(obs, pairs, plan, integrals, store_, budget, comm, compute_and_fit, progress);
}

void FittedTensorStore::for_each_block(const RowStore::Visit& visit) {
  const std::size_t half = read_buffers_.size() / 2;
  store_.for_each_block({read_buffers_.data(), half}, {read_buffers_.data() + half, half}, visit);
}

}  // namespace dfmp2
