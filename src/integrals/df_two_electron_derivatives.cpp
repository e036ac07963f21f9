#include "src/integrals/df_two_electron_derivatives.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "kernels/block_packed.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {
namespace {

// Auxiliary functions in one batch when each holds `row_elements` doubles: at most 64 MiB and a
// rank's share of the naux, at least one function.
std::size_t functions_per_batch(std::size_t row_elements, std::size_t naux, const Communicator& comm) {
  constexpr std::size_t kBatchBytes = std::size_t(64) << 20;
  const std::size_t share = share_of(naux, 0, comm.size()).size();  // the largest
  return std::max<std::size_t>(1, std::min(share, kBatchBytes / (sizeof(double) * row_elements)));
}

}  // namespace

Eigen::MatrixXd three_centre_gradient_of_squares(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                                 const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                 const Molecule& mol,
                                                 const std::function<void(Eigen::Index P, double* square)>& gamma,
                                                 Communicator& comm, const std::function<void(double done)>& progress,
                                                 StageWork* work, double square_flops) {
  // The squares of one batch of auxiliary shells at a time (at most 64 MiB).
  const std::size_t n = obs.nbf(), square = n * n;
  const std::size_t batch_functions = functions_per_batch(square, aux.nbf(), comm);
  std::vector<double> squares;
  std::size_t batch_first = 0;
  ThreeCentreDensity density;
  density.batches = round_robin_share(shell_batches(aux, {0, aux.size()}, batch_functions), comm.rank(), comm.size());
  density.load = [&](ShellRange batch) {
    batch_first = first_function(aux, batch.first);
    const auto count = static_cast<Eigen::Index>(function_count(aux, batch));
    squares.resize(static_cast<std::size_t>(count) * square);
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

Eigen::MatrixXd density_fitted_two_electron_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                                     const ShellPairs& pairs, const ThreeCentreScreening& screening,
                                                     FittedTensorStore& factors,
                                                     const Molecule& mol, const SeparableDensities& densities,
                                                     Communicator& comm,
                                                     const std::function<void(double done)>& progress,
                                                     StageWork* work, const double* occupied_products) {
  const kernels::BlockPackedLayout& layout = pairs.layout;
  const auto nbf = static_cast<Eigen::Index>(obs.nbf()), naux = static_cast<Eigen::Index>(aux.nbf());
  const std::size_t stored = layout.size();
  const Eigen::MatrixXd& D = densities.density;
  const Eigen::MatrixXd& A = densities.coulomb_partner;

  // d_P and c^P C_s from the SCF's fitted factors B^Q = Σ_P M_QP (P|μν), block by block as the
  // store serves them, and Mᵀ (it mixes only Q) applied afterwards, c^P = Σ_Q M_QP B^Q = J⁻¹ (P|μν):
  // c^P_μν itself, as large as the SCF's tensor, is never held.
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  const std::vector<double> D_weights = kernels::pack_weighted(layout, D.data());
  const std::vector<double> A_weights = kernels::pack_weighted(layout, A.data());
  // This rank's rows fill their Q; the others' stay zero for the sum over ranks.
  Eigen::VectorXd d_D = Eigen::VectorXd::Zero(naux), d_A = Eigen::VectorXd::Zero(naux);
  // Per spin, column P: c^P C_s (first B^Q C_s) and A_s c^P C_s, each nbf × nocc_s.
  std::vector<Eigen::MatrixXd> cC, AcC;
  for (const Eigen::MatrixXd& C : densities.occupied) {
    cC.push_back(Eigen::MatrixXd::Zero(nbf * C.cols(), naux));
    AcC.emplace_back(nbf * C.cols(), naux);
  }
  if (occupied_products != nullptr && densities.occupied.size() != 1)
    throw std::logic_error("the occupied products are of one set of orbitals");
  factors.for_each_block([&](std::size_t first_row, std::size_t nrows, const double* rows) {
    const auto first = static_cast<Eigen::Index>(factors.q().begin + first_row);
    const auto count = static_cast<Eigen::Index>(nrows);
#pragma omp parallel
    {
      Eigen::MatrixXd square(nbf, nbf);
#pragma omp for schedule(dynamic)
      for (Eigen::Index f = 0; f < count; ++f) {
        const double* row = rows + static_cast<std::size_t>(f) * stored;
        const Eigen::Index Q = first + f;
        d_D(Q) = std::inner_product(row, row + stored, D_weights.begin(), 0.0);
        d_A(Q) = std::inner_product(row, row + stored, A_weights.begin(), 0.0);
        if (occupied_products != nullptr) {
          const Eigen::Index o = densities.occupied[0].cols();
          const double* BC = occupied_products + static_cast<std::size_t>((first_row + f) * (nbf * o + o * o));
          std::copy(BC, BC + nbf * o, cC[0].col(Q).data());
          continue;
        }
        kernels::unpack_symmetric(layout, row, square.data());
        for (std::size_t s = 0; s < densities.occupied.size(); ++s) {
          const Eigen::MatrixXd& C = densities.occupied[s];
          Eigen::Map<Eigen::MatrixXd>(cC[s].col(Q).data(), nbf, C.cols()).noalias() = square * C;
        }
      }
    }
  });
  comm.allreduce_sum(d_D.data(), static_cast<std::size_t>(naux));
  comm.allreduce_sum(d_A.data(), static_cast<std::size_t>(naux));
  for (Eigen::MatrixXd& cC_s : cC) comm.allreduce_sum(cC_s.data(), static_cast<std::size_t>(cC_s.size()));
  const CoulombFitting fit(metric);
  fit.apply_transpose(d_D.data(), 1);
  fit.apply_transpose(d_A.data(), 1);
  for (Eigen::MatrixXd& cC_s : cC) fit.apply_transpose(cC_s.data(), static_cast<std::size_t>(cC_s.rows()));
  // Every P's nbf × nocc block side by side is cC's own storage: A_s c^P C_s for all P is one GEMM.
  for (std::size_t s = 0; s < cC.size(); ++s) {
    const Eigen::Index columns = cC[s].size() / nbf;
    Eigen::Map<Eigen::MatrixXd>(AcC[s].data(), nbf, columns).noalias() =
        densities.exchange_partners[s] * Eigen::Map<const Eigen::MatrixXd>(cC[s].data(), nbf, columns);
  }
  Eigen::MatrixXd metric_weights = -0.5 * (d_A * d_D.transpose() + d_D * d_A.transpose());
  // Σ_s tr(c^P A_s c^Q C_s C_sᵀ), symmetric in P and Q as c^P, c^Q and A_s are: its lower triangle
  // by blocks of rows P, dealt round-robin to the ranks, then mirrored.
  constexpr Eigen::Index kExchangeRows = 256;
  Eigen::MatrixXd exchange = Eigen::MatrixXd::Zero(naux, naux);
  double exchange_elements = 0.0;  // this rank's P, Q ≤ its block's last
  for (Eigen::Index first = kExchangeRows * comm.rank(); first < naux; first += kExchangeRows * comm.size()) {
    const Eigen::Index count = std::min(kExchangeRows, naux - first);
    for (std::size_t s = 0; s < cC.size(); ++s)
      exchange.block(first, 0, count, first + count).noalias() +=
          AcC[s].middleCols(first, count).transpose() * cC[s].leftCols(first + count);
    exchange_elements += double(count) * double(first + count);
  }
  comm.allreduce_sum(exchange.data(), static_cast<std::size_t>(exchange.size()));
  exchange.triangularView<Eigen::StrictlyUpper>() = exchange.transpose().eval();
  metric_weights += exchange;
  // Per spin: c^P C_s (2 n² nocc per row Q) and its fit, A_s c^P C_s, the exchange weights; each
  // Γ^P two n × nocc × n products.
  double square_flops = 0.0;
  if (work != nullptr)
    for (const Eigen::MatrixXd& C : densities.occupied) {
      const double n = double(nbf), o = double(C.cols()), columns = n * o;
      const double made = occupied_products != nullptr ? 0.0 : 2.0 * n * columns * double(factors.q().size());
      work->flops_fp64 += made + fit.flops(C.size()) + 2.0 * n * columns * double(naux) +
                          2.0 * exchange_elements * columns;
      square_flops += 4.0 * n * columns;
    }

  const auto gamma = [&](Eigen::Index P, double* square) {
    Eigen::Map<Eigen::MatrixXd> gamma_P(square, nbf, nbf);
    gamma_P = d_D(P) * A + d_A(P) * D;
    for (std::size_t s = 0; s < cC.size(); ++s) {
      const Eigen::MatrixXd& C = densities.occupied[s];
      const Eigen::Map<const Eigen::MatrixXd> AcC_P(AcC[s].col(P).data(), nbf, C.cols());
      gamma_P.noalias() -= AcC_P * C.transpose();
      gamma_P.noalias() -= C * AcC_P.transpose();
    }
  };
  const Eigen::MatrixXd three_centre =
      three_centre_gradient_of_squares(aux, obs, pairs, screening, mol, gamma, comm, progress, work, square_flops);
  return three_centre + metric_gradient(aux, mol, metric_weights);
}

}  // namespace dfmp2
