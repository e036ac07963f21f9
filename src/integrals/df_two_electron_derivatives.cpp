#include "src/integrals/df_two_electron_derivatives.hpp"

#include <algorithm>
#include <numeric>

#include "kernels/block_packed.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/three_index.hpp"
#include "src/integrals/two_electron_derivatives.hpp"

namespace dfmp2 {

Eigen::MatrixXd density_fitted_two_electron_gradient(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                                                     const ShellPairs& pairs, const Molecule& mol,
                                                     const std::vector<Eigen::MatrixXd>& occupied) {
  const kernels::BlockPackedLayout& layout = pairs.layout;
  const auto nbf = static_cast<Eigen::Index>(obs.nbf()), naux = static_cast<Eigen::Index>(aux.nbf());
  const std::size_t stored = layout.size();
  // Σ over α and β: a closed shell's one set stands for both.
  const double spin_weight = occupied.size() == 1 ? 2.0 : 1.0;
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(nbf, nbf);
  for (const Eigen::MatrixXd& C : occupied) D += spin_weight * C * C.transpose();

  // c^P_μν, row P block-packed as the SCF's tensor.
  const Eigen::MatrixXd metric = coulomb_metric(aux);
  std::vector<double> c(static_cast<std::size_t>(naux) * stored);
  ThreeIndexIntegrals(aux, obs, pairs, metric).compute({0, aux.size()}, {0, obs.size()}, c.data());
  CoulombFitting(metric).apply_inverse(c.data(), stored);

  const std::vector<double> D_weights = kernels::pack_weighted(layout, D.data());
  Eigen::VectorXd d(naux);
  std::vector<Eigen::MatrixXd> Y;  // per spin, column P: Y^P_s, nocc_s × nocc_s
  for (const Eigen::MatrixXd& C : occupied) Y.emplace_back(C.cols() * C.cols(), naux);
#pragma omp parallel
  {
    Eigen::MatrixXd c_P(nbf, nbf);
#pragma omp for schedule(dynamic)
    for (Eigen::Index P = 0; P < naux; ++P) {
      const double* row = c.data() + static_cast<std::size_t>(P) * stored;
      d(P) = std::inner_product(row, row + stored, D_weights.begin(), 0.0);
      kernels::unpack_symmetric(layout, row, c_P.data());
      for (std::size_t s = 0; s < occupied.size(); ++s) {
        const Eigen::MatrixXd& C = occupied[s];
        Eigen::Map<Eigen::MatrixXd>(Y[s].col(P).data(), C.cols(), C.cols()).noalias() = C.transpose() * c_P * C;
      }
    }
  }
  Eigen::MatrixXd metric_weights = -0.5 * d * d.transpose();
  for (const Eigen::MatrixXd& Y_s : Y) metric_weights.noalias() += 0.5 * spin_weight * Y_s.transpose() * Y_s;

  // Γ^P as dense squares, made for one batch of auxiliary shells at a time (at most 64 MiB).
  const std::size_t square = static_cast<std::size_t>(nbf * nbf);
  const std::size_t batch_functions = std::max<std::size_t>(1, (std::size_t(64) << 20) / (sizeof(double) * square));
  std::vector<double> gamma;
  std::size_t batch_first = 0;  // Γ's first function
  ThreeCentreDensity density;
  density.batches = shell_batches(aux, {0, aux.size()}, batch_functions);
  density.load = [&](ShellRange batch) {
    batch_first = first_function(aux, batch.first);
    const auto count = static_cast<Eigen::Index>(function_count(aux, batch));
    gamma.resize(static_cast<std::size_t>(count) * square);
#pragma omp parallel for schedule(dynamic)
    for (Eigen::Index f = 0; f < count; ++f) {
      const Eigen::Index P = static_cast<Eigen::Index>(batch_first) + f;
      Eigen::Map<Eigen::MatrixXd> gamma_P(gamma.data() + static_cast<std::size_t>(f) * square, nbf, nbf);
      gamma_P = d(P) * D;
      for (std::size_t s = 0; s < occupied.size(); ++s) {
        const Eigen::MatrixXd& C = occupied[s];
        const Eigen::Map<const Eigen::MatrixXd> Y_P(Y[s].col(P).data(), C.cols(), C.cols());
        gamma_P.noalias() -= spin_weight * C * (Y_P * C.transpose());
      }
    }
  };
  density.block = [&](std::size_t p, std::size_t s1, std::size_t s2, double* out) {
    const std::size_t n = static_cast<std::size_t>(nbf);
    for (std::size_t P = first_function(aux, p); P < first_function(aux, p + 1); ++P)
      for (std::size_t m = first_function(obs, s1); m < first_function(obs, s1 + 1); ++m) {
        const double* from = gamma.data() + (P - batch_first) * square + m * n;
        out = std::copy(from + first_function(obs, s2), from + first_function(obs, s2 + 1), out);
      }
  };
  return three_centre_gradient(aux, obs, pairs, mol, density) + metric_gradient(aux, mol, metric_weights);
}

}  // namespace dfmp2
