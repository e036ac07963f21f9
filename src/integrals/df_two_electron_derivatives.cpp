#include "src/integrals/df_two_electron_derivatives.hpp"

#include <algorithm>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/block_packed.hpp"
#include "kernels/compute_engine.hpp"
#include "src/common/matrix_view.hpp"
#include "src/common/row_store.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {
namespace {

// Auxiliary functions in one batch of squares (squares_batch_bytes).
std::size_t squares_per_batch(std::size_t nbf, std::size_t naux, std::size_t largest_shell, int ranks,
                              std::size_t block_bytes) {
  const std::size_t share = share_of(naux, 0, ranks).size();  // the largest
  return std::max(largest_shell, std::min(share, block_bytes / (sizeof(double) * nbf * nbf)));
}

// The JK set's metric, its fit, and the metric term's naux × naux weights.
std::size_t fit_and_weights_bytes(std::size_t naux) {
  return CoulombFitting::peak_bytes(naux) + sizeof(double) * naux * naux;
}
constexpr const char* kFitAndWeights = "the JK set's metric, its fit and the metric term's weights";
constexpr const char* kSweepBuffers = "the sweep's two blocks of c^P C_σ's columns, then a batch of Γ^P squares";

std::string store_name(std::size_t set, std::size_t sets) {
  return sets == 1 ? std::string("c^P C_occ, then A c^P C_occ")
                   : std::string(set == 0 ? "c^P C_α, then A_α c^P C_α" : "c^P C_β, then A_β c^P C_β");
}

}  // namespace

std::size_t SeparableTermSizes::sweep_orbitals(std::size_t block_bytes) const {
  std::size_t widest = 1, total = 0;
  for (std::size_t o : occupied) {
    widest = std::max(widest, o);
    total += o;
  }
  const std::size_t fit = block_bytes / std::max<std::size_t>(sizeof(double) * naux * nbf, 1);
  const std::size_t per_rank = std::max<std::size_t>(1, total / std::size_t(std::max(ranks, 1)));
  return std::max<std::size_t>(1, std::min({fit, widest, per_rank}));
}

std::size_t squares_batch_bytes(std::size_t nbf, std::size_t naux, std::size_t largest_shell, int ranks,
                                std::size_t block_bytes) {
  return MemoryBudget::double_array_bytes(squares_per_batch(nbf, naux, largest_shell, ranks, block_bytes) * nbf * nbf);
}

StagePlan separable_term_plan(const SeparableTermSizes& sizes, const SeparableTermLayout& layout) {
  StagePlan plan;
  const std::size_t ram_rows = std::min(layout.ram_rows, sizes.naux), disk_rows = sizes.naux - ram_rows,
                    sets = sizes.occupied.size();
  for (std::size_t s = 0; s < sets; ++s) {
    const std::size_t row = sizes.nbf * sizes.occupied[s];
    plan.ram(store_name(s, sets), MemoryBudget::double_array_bytes(ram_rows * row));
    plan.disk(store_name(s, sets) + ", its other rows", sizeof(double) * disk_rows * row);
    plan.read_bytes += 2 * sizeof(double) * disk_rows * row;
  }
  if (plan.read_bytes > 0) plan.read_per = "gradient (the JK set's sweep and Γ^P squares)";
  plan.ram(kFitAndWeights, fit_and_weights_bytes(sizes.naux));
  const std::size_t sweep_elements = 2 * sizes.naux * sizes.nbf * sizes.sweep_orbitals(layout.block_bytes);
  plan.ram(kSweepBuffers,
           std::max(MemoryBudget::double_array_bytes(sweep_elements),
                    squares_batch_bytes(sizes.nbf, sizes.naux, sizes.largest_shell, sizes.ranks, layout.block_bytes)));
  return plan;
}

Eigen::MatrixXd three_centre_gradient_of_squares(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                                 const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                 const Molecule& mol,
                                                 const std::function<void(Eigen::Index P, double* square)>& gamma,
                                                 MemoryBudget& budget, std::size_t block_bytes, Communicator& comm,
                                                 const std::function<void(double done)>& progress, StageWork* work,
                                                 double square_flops) {
  const std::size_t n = obs.nbf(), square = n * n;
  const std::size_t batch_functions = squares_per_batch(n, aux.nbf(), largest_shell(aux), comm.size(), block_bytes);
  LargeArray<double> squares = budget.allocate<double>(batch_functions * square, "a batch of Γ^P squares");
  std::size_t batch_first = 0;
  ThreeCentreDensity density;
  density.batches = round_robin_share(shell_batches(aux, {0, aux.size()}, batch_functions), comm.rank(), comm.size());
  density.load = [&](ShellRange batch) {
    batch_first = first_function(aux, batch.first);
    const auto count = static_cast<Eigen::Index>(function_count(aux, batch));
    if (work != nullptr) work->flops_fp64 += static_cast<double>(count) * square_flops;
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index f = 0; f < count; ++f)
      gamma(static_cast<Eigen::Index>(batch_first) + f, squares.data() + static_cast<std::size_t>(f) * square);
  };
  density.block = [&](std::size_t p, std::size_t s1, std::size_t s2, double* out) {
    for (std::size_t P = first_function(aux, p); P < first_function(aux, p + 1); ++P)
      for (std::size_t m = first_function(obs, s1); m < first_function(obs, s1 + 1); ++m) {
        const double* from = squares.data() + (P - batch_first) * square + m * n;
        out = std::copy(from + first_function(obs, s2), from + first_function(obs, s2 + 1), out);
      }
  };
  density.progress = progress;
  density.work = work;
  Eigen::MatrixXd gradient = three_centre_gradient(aux, obs, pairs, screening, mol, density);
  comm.allreduce_sum(gradient.data(), static_cast<std::size_t>(gradient.size()));
  return gradient;
}

namespace {

// Σ_μν (P|μν) D_μν and the same with A, each fitted (J⁻¹ on P), summed over ranks.
struct FittedTraces {
  Eigen::VectorXd d_D, d_A;
};

// d_P and B^Q C_s from the SCF's fitted factors B^Q = Σ_P M_QP (P|μν), block by block as the store
// serves them, the rows Q of every set written to cC (every rank's, broadcast); Mᵀ (it mixes only
// Q) comes later, c^P = Σ_Q M_QP B^Q = J⁻¹ (P|μν). occupied_products, when given, holds B^Q C.
FittedTraces first_products(FittedTensorStore& factors, const kernels::BlockPackedLayout& packed,
                            const SeparableDensities& densities, const double* occupied_products,
                            std::vector<RowStore>& cC, std::span<double> buffers, Communicator& comm) {
  const auto nbf = densities.density.rows(), naux = static_cast<Eigen::Index>(cC[0].rows());
  const std::size_t stored = packed.size();
  const std::vector<double> D_weights = kernels::pack_weighted(packed, densities.density.data());
  const std::vector<double> A_weights = kernels::pack_weighted(packed, densities.coulomb_partner.data());
  // This rank's rows fill their Q; the others' stay zero for the sum over ranks.
  FittedTraces t{Eigen::VectorXd::Zero(naux), Eigen::VectorXd::Zero(naux)};
  // The rows are made into the buffers a chunk at a time and then written (a scratch file's
  // failure is thrown outside the threads).
  std::size_t row_width = 0;  // of all sets' rows Q side by side
  for (const RowStore& store : cC) row_width += store.cols();
  const std::size_t chunk_rows = buffers.size() / row_width;
  if (chunk_rows == 0) throw std::logic_error("the JK set's sweep buffers must hold a row of every set");
  factors.for_each_block([&](std::size_t first_row, std::size_t nrows, const double* rows) {
    for (std::size_t chunk = 0; chunk < nrows; chunk += chunk_rows) {
      const auto count = static_cast<Eigen::Index>(std::min(chunk_rows, nrows - chunk));
#pragma omp parallel
      {
        Eigen::MatrixXd square(nbf, nbf);
#pragma omp for schedule(dynamic)
        for (Eigen::Index f = 0; f < count; ++f) {
          const std::size_t row_index = first_row + chunk + static_cast<std::size_t>(f);
          const double* row = rows + (chunk + static_cast<std::size_t>(f)) * stored;
          const auto Q = static_cast<Eigen::Index>(factors.q().begin + row_index);
          t.d_D(Q) = std::inner_product(row, row + stored, D_weights.begin(), 0.0);
          t.d_A(Q) = std::inner_product(row, row + stored, A_weights.begin(), 0.0);
          double* out = buffers.data() + static_cast<std::size_t>(f) * row_width;
          if (occupied_products != nullptr) {
            const Eigen::Index o = densities.occupied[0].cols();
            const double* BC = occupied_products + row_index * static_cast<std::size_t>(nbf * o + o * o);
            std::copy(BC, BC + nbf * o, out);
            continue;
          }
          kernels::unpack_symmetric(packed, row, square.data());
          for (const Eigen::MatrixXd& C : densities.occupied) {
            kernels::cpu_engine().gemm(kernels::Op::none, kernels::Op::none, 1.0, host_view(square), host_view(C), 0.0,
                                       host_view(Eigen::Map<Eigen::MatrixXd>(out, nbf, C.cols())));
            out += nbf * C.cols();
          }
        }
      }
      const std::size_t Q = factors.q().begin + first_row + chunk;
      for (std::size_t s = 0, offset = 0; s < cC.size(); offset += cC[s].cols(), ++s)
        cC[s].write(Q, static_cast<std::size_t>(count), 0, cC[s].cols(), buffers.data() + offset, row_width);
    }
  });
  comm.allreduce_sum(t.d_D.data(), static_cast<std::size_t>(naux));
  comm.allreduce_sum(t.d_A.data(), static_cast<std::size_t>(naux));
  const std::vector<double> q_begins = comm.allgather(double(factors.q().begin)),
                            q_ends = comm.allgather(double(factors.q().end));
  for (RowStore& store : cC)
    for (int r = 0; r < comm.size(); ++r)
      broadcast_rows(store, static_cast<std::size_t>(q_begins[r]), static_cast<std::size_t>(q_ends[r] - q_begins[r]),
                     r, buffers, comm);
  return t;
}

// The sweep: each block of occupied orbitals' columns of every row P, dealt round-robin to the
// ranks, read, fitted, X = c^P C_s; Y = A_s X (every P's nbf × block side by side is one GEMM)
// written in its place; and Σ_s tr(c^P A_s c^Q C_s C_sᵀ) = Σ_s Σ_μi Y^P_μi X^Q_μi summed over
// the block's columns, symmetric in P and Q: its lower triangle by blocks of rows P, then
// mirrored (returned, summed over ranks). Then each block's columns go from their rank to the others.
Eigen::MatrixXd exchange_sweep(const SeparableDensities& densities, const CoulombFitting& fit, std::vector<RowStore>& cC,
                               std::size_t sweep_orbitals, std::span<double> buffers, Communicator& comm,
                               double& sweep_flops) {
  const auto nbf = densities.density.rows(), naux = static_cast<Eigen::Index>(cC[0].rows());
  const std::size_t sweep_width = std::size_t(nbf) * sweep_orbitals;
  struct ColumnBlock {
    std::size_t set, first, width;  // columns [first, first + width) of set `set`
  };
  std::vector<ColumnBlock> blocks;
  for (std::size_t s = 0; s < cC.size(); ++s)
    for (std::size_t i = 0; i < std::size_t(densities.occupied[s].cols()); i += sweep_orbitals)
      blocks.push_back({s, nbf * i, nbf * std::min(sweep_orbitals, std::size_t(densities.occupied[s].cols()) - i)});
  constexpr Eigen::Index kExchangeRows = 256;
  Eigen::MatrixXd exchange = Eigen::MatrixXd::Zero(naux, naux);
  for (const ColumnBlock& b : round_robin_share(blocks, comm.rank(), comm.size())) {
    double* X = buffers.data();
    double* Y = X + naux * sweep_width;
    cC[b.set].read(0, naux, b.first, b.width, X, b.width);
    fit.apply_transpose(X, b.width);
    const auto width = static_cast<Eigen::Index>(b.width);
    kernels::ComputeEngine& engine = kernels::cpu_engine();
    engine.gemm(kernels::Op::none, kernels::Op::none, 1.0, host_view(densities.exchange_partners[b.set]),
                host_view(Eigen::Map<const Eigen::MatrixXd>(X, nbf, width / nbf * naux)), 0.0,
                host_view(Eigen::Map<Eigen::MatrixXd>(Y, nbf, width / nbf * naux)));
    const Eigen::Map<const Eigen::MatrixXd> X_columns(X, width, naux), Y_columns(Y, width, naux);
    double exchange_elements = 0.0;
    for (Eigen::Index first = 0; first < naux; first += kExchangeRows) {
      const Eigen::Index count = std::min(kExchangeRows, naux - first);
      engine.gemm(kernels::Op::transpose, kernels::Op::none, 1.0, host_view(Y_columns.middleCols(first, count)),
                  host_view(X_columns.leftCols(first + count)), 1.0,
                  host_view(exchange.block(first, 0, count, first + count)));
      exchange_elements += double(count) * double(first + count);
    }
    cC[b.set].write(0, naux, b.first, b.width, Y, b.width);
    sweep_flops += fit.flops(b.width) + 2.0 * double(nbf) * double(width) * double(naux) +
                   2.0 * exchange_elements * double(width);
  }
  for (std::size_t k = 0; k < blocks.size(); ++k)
    broadcast_columns(cC[blocks[k].set], blocks[k].first, blocks[k].width, round_robin_owner(k, comm.size()),
                      buffers.data(), comm);
  comm.allreduce_sum(exchange.data(), static_cast<std::size_t>(exchange.size()));
  for (Eigen::Index Q = 1; Q < naux; ++Q) exchange.col(Q).head(Q) = exchange.row(Q).head(Q).transpose();
  return exchange;
}

// Γ^P = d_D(P) A + d_A(P) D − Σ_s [Y^P_s C_sᵀ + C_s Y^P_sᵀ], Y^P_s = A_s c^P C_s (row P of cC
// after the sweep), into `square` (nbf × nbf, column-major).
void gamma_square(Eigen::Index P, const FittedTraces& t, const SeparableDensities& densities,
                  const std::vector<RowStore>& cC, double* square) {
  const Eigen::Index nbf = densities.density.rows();
  Eigen::Map<Eigen::MatrixXd> gamma_P(square, nbf, nbf);
  gamma_P = t.d_D(P) * densities.coulomb_partner + t.d_A(P) * densities.density;
  std::vector<double> buffer;
  kernels::ComputeEngine& engine = kernels::cpu_engine();
  for (std::size_t s = 0; s < cC.size(); ++s) {
    const Eigen::MatrixXd& C = densities.occupied[s];
    const Eigen::Map<const Eigen::MatrixXd> Y_P(cC[s].row(static_cast<std::size_t>(P), buffer), nbf, C.cols());
    engine.gemm(kernels::Op::none, kernels::Op::transpose, -1.0, host_view(Y_P), host_view(C), 1.0,
                host_view(gamma_P));
    engine.gemm(kernels::Op::none, kernels::Op::transpose, -1.0, host_view(C), host_view(Y_P), 1.0,
                host_view(gamma_P));
  }
}

}  // namespace

Eigen::MatrixXd density_fitted_two_electron_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                                     const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                     FittedTensorStore& factors,
                                                     const Molecule& mol, const SeparableDensities& densities,
                                                     const SeparableTermLayout& layout, MemoryBudget& budget,
                                                     const ScratchDirectory* scratch, Communicator& comm,
                                                     const std::function<void(double done)>& progress,
                                                     StageWork* work, const double* occupied_products) {
  const auto nbf = static_cast<Eigen::Index>(obs.nbf());
  const std::size_t sets = densities.occupied.size();
  if (occupied_products != nullptr && sets != 1)
    throw std::logic_error("the occupied products are of one set of orbitals");
  SeparableTermSizes sizes{std::size_t(obs.nbf()), std::size_t(aux.nbf()), largest_shell(aux), {}, comm.size()};
  for (const Eigen::MatrixXd& C : densities.occupied) sizes.occupied.push_back(static_cast<std::size_t>(C.cols()));

  const MemoryBudget::Reservation fit_memory = budget.reserve(fit_and_weights_bytes(aux.nbf()), kFitAndWeights);
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  // Per set, row P: c^P C_s (first B^Q C_s), then A_s c^P C_s, each nbf × nocc_s column-major.
  std::vector<RowStore> cC;
  for (std::size_t s = 0; s < sets; ++s)
    cC.emplace_back(aux.nbf(), obs.nbf() * sizes.occupied[s], layout.ram_rows, budget, scratch, store_name(s, sets));
  const std::size_t sweep_orbitals = sizes.sweep_orbitals(layout.block_bytes);
  LargeArray<double> buffers = budget.allocate<double>(2 * aux.nbf() * obs.nbf() * sweep_orbitals, kSweepBuffers);
  FittedTraces t = first_products(factors, pairs.layout, densities, occupied_products, cC,
                                  {buffers.data(), buffers.size()}, comm);
  const CoulombFitting fit(metric);
  fit.apply_transpose(t.d_D.data(), 1);
  fit.apply_transpose(t.d_A.data(), 1);
  double sweep_flops = 0.0;
  Eigen::MatrixXd metric_weights =
      exchange_sweep(densities, fit, cC, sweep_orbitals, {buffers.data(), buffers.size()}, comm, sweep_flops);
  buffers = LargeArray<double>();
  metric_weights.noalias() -= 0.5 * (t.d_A * t.d_D.transpose() + t.d_D * t.d_A.transpose());
  // Per set: B^Q C_s (2 n² nocc per row Q, unless given) and the sweep's; each Γ^P two
  // n × nocc × n products.
  double square_flops = 0.0;
  if (work != nullptr) {
    work->flops_fp64 += sweep_flops;
    for (std::size_t s = 0; s < sets; ++s) {
      const double n = double(nbf), o = double(sizes.occupied[s]);
      if (occupied_products == nullptr) work->flops_fp64 += 2.0 * n * n * o * double(factors.q().size());
      square_flops += 4.0 * n * n * o;
    }
  }
  const auto gamma = [&](Eigen::Index P, double* square) { gamma_square(P, t, densities, cC, square); };
  const Eigen::MatrixXd three_centre = three_centre_gradient_of_squares(
      aux, obs, pairs, screening, mol, gamma, budget, layout.block_bytes, comm, progress, work, square_flops);
  return three_centre + metric_gradient(aux, mol, metric_weights);
}

}  // namespace dfmp2
