#include "src/integrals/shell_pairs.hpp"

#include <algorithm>
#include <cmath>

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/libint.hpp"

namespace dfmp2 {

std::size_t ShellPairs::bytes() const {
  std::size_t total = sizeof(double) * static_cast<std::size_t>(schwarz.size()) + sizeof(long) * index.size() +
                      sizeof(kernels::StoredBlock) * layout.blocks().size() + 4 * sizeof(std::size_t) * layout.n();
  for (const auto& pair : data) total += sizeof(pair) + pair.primpairs.size() * sizeof(pair.primpairs[0]);
  return total;
}

ShellPairs significant_shell_pairs(const libint2::BasisSet& obs, double threshold) {
  using libint2::Operator;
  const std::size_t nshell = obs.size();
  ShellPairs result;
  result.schwarz = Eigen::MatrixXd::Zero(nshell, nshell);
  auto engines = engines_per_thread(libint2::Engine(Operator::coulomb, obs.max_nprim(), obs.max_l()));
  for (auto& engine : engines) engine.set_precision(0.0);  // the bounds must not be screened
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    libint2::Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute2<Operator::coulomb, libint2::BraKet::xx_xx, 0>(obs[s1], obs[s2], obs[s1], obs[s2]);
      double largest = 0.0;
      if (buf[0] != nullptr) {
        const std::size_t n12 = obs[s1].size() * obs[s2].size();
        for (std::size_t k = 0; k < n12; ++k) largest = std::max(largest, std::abs(buf[0][k * n12 + k]));
      }
      result.schwarz(s1, s2) = result.schwarz(s2, s1) = std::sqrt(largest);
    }
  }
  const double largest = result.schwarz.maxCoeff();
  result.index.assign(nshell * nshell, -1);
  for (std::size_t s1 = 0; s1 < nshell; ++s1)
    for (std::size_t s2 = 0; s2 <= s1; ++s2)
      if (result.schwarz(s1, s2) * largest >= threshold) {
        result.index[s1 * nshell + s2] = static_cast<long>(result.pairs.size());
        result.pairs.emplace_back(s1, s2);
      }
  const auto& starts = obs.shell2bf();
  result.layout = kernels::BlockPackedLayout(starts, obs.nbf(), result.pairs);
  result.data.resize(result.pairs.size());
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t p = 0; p < result.pairs.size(); ++p)
    result.data[p] = shell_pair_data(obs[result.pairs[p].first], obs[result.pairs[p].second]);
  return result;
}

}  // namespace dfmp2
