#include "src/integrals/three_index.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/libint.hpp"

namespace dfmp2 {
namespace {

using libint2::BraKet;
using libint2::Operator;

// One shell triplet's block into the stored rows: values[(fP n1 + f1) n2 + f2], or zeros when
// the triplet was screened (values == nullptr). A diagonal block (s1 == s2) stores f2 ≤ f1 only.
void write_block(const double* values, std::size_t nP, const kernels::BlockPackedLayout& layout,
                 const kernels::StoredBlock& block, std::size_t column_base, std::size_t columns, double* rows) {
  for (std::size_t fP = 0; fP < nP; ++fP)
    for (std::size_t f1 = 0; f1 < block.rows; ++f1) {
      double* out = rows + fP * columns + layout.row_offset(block.row + f1) - column_base + block.position;
      const std::size_t count = block.diagonal() ? f1 + 1 : block.cols;
      if (values == nullptr)
        std::fill(out, out + count, 0.0);
      else
        std::copy(values + (fP * block.rows + f1) * block.cols, values + (fP * block.rows + f1) * block.cols + count,
                  out);
    }
}

libint2::Engine three_index_engine(const libint2::BasisSet& aux, const libint2::BasisSet& obs) {
  return coulomb_engine(std::max(aux.max_nprim(), obs.max_nprim()), std::max(aux.max_l(), obs.max_l()), BraKet::xs_xx);
}


}  // namespace

ThreeIndexIntegrals::ThreeIndexIntegrals(const libint2::BasisSet& aux, const libint2::BasisSet& obs,
                                         const ShellPairs& pairs, const Eigen::MatrixXd& metric,
                                         double threshold)
    : aux_(aux), obs_(obs), pairs_(pairs), threshold_(threshold) {
  const libint2::Shell& unit = libint2::Shell::unit();
  for (std::size_t s = 0; s < aux.size(); ++s) {
    const std::size_t first = first_function(aux, s);
    aux_bound_.push_back(std::sqrt(metric.diagonal().segment(first, aux[s].size()).maxCoeff()));
    aux_data_.push_back(shell_pair_data(aux[s], unit));
  }
}

std::size_t ThreeIndexIntegrals::columns(ShellRange rows) const {
  return pairs_.layout.row_block_offset(rows.last) - pairs_.layout.row_block_offset(rows.first);
}

bool ThreeIndexIntegrals::significant(std::size_t aux_shell, long pair) const {
  if (pair < 0) return false;
  const auto [s1, s2] = pairs_.pairs[static_cast<std::size_t>(pair)];
  return aux_bound_[aux_shell] * pairs_.schwarz(s1, s2) >= threshold_;
}

void ThreeIndexIntegrals::compute(ShellRange aux_shells, ShellRange rows, double* out, std::size_t stride) const {
  const std::size_t ncols = stride > 0 ? stride : columns(rows);
  const std::size_t column_base = pairs_.layout.row_block_offset(rows.first);
  const std::size_t p_first = first_function(aux_, aux_shells.first);
  auto engines = engines_per_thread(three_index_engine(aux_, obs_));
  const libint2::Shell& unit = libint2::Shell::unit();
#pragma omp parallel for schedule(dynamic)
  for (std::size_t sP = aux_shells.first; sP < aux_shells.last; ++sP) {
    libint2::Engine& engine = engines[omp_get_thread_num()];
    double* P_rows = out + (first_function(aux_, sP) - p_first) * ncols;
    for (std::size_t s1 = rows.first; s1 < rows.last; ++s1)
      for (std::size_t s2 = 0; s2 <= s1; ++s2) {
        const long pair = pairs_.find(s1, s2);
        if (pair < 0) continue;  // not stored
        const double* values = nullptr;
        if (significant(sP, pair)) {
          engine.compute2<Operator::coulomb, BraKet::xs_xx, 0>(
              aux_[sP], unit, obs_[s1], obs_[s2], &aux_data_[sP], &pairs_.data[static_cast<std::size_t>(pair)]);
          values = engine.results()[0];
        }
        write_block(values, aux_[sP].size(), pairs_.layout, pairs_.layout.blocks()[static_cast<std::size_t>(pair)],
                    column_base, ncols, P_rows);
      }
  }
}

double ThreeIndexIntegrals::libint_seconds(ShellRange aux_shells, ShellRange rows) const {
  struct Triplet {
    std::size_t aux_shell;
    long pair;
  };
  std::vector<Triplet> sample;
  std::size_t computed = 0;
  for (std::size_t sP = aux_shells.first; sP < aux_shells.last; ++sP)
    for (std::size_t s1 = rows.first; s1 < rows.last; ++s1)
      for (std::size_t s2 = 0; s2 <= s1; ++s2) {
        const long pair = pairs_.find(s1, s2);
        if (significant(sP, pair) && computed++ % kLibintSampleStride == 0) sample.push_back({sP, pair});
      }
  if (sample.empty()) return 0.0;
  libint2::Engine engine = three_index_engine(aux_, obs_);
  const libint2::Shell& unit = libint2::Shell::unit();
  const auto start = std::chrono::steady_clock::now();
  for (const auto& [sP, pair] : sample) {
    const auto [s1, s2] = pairs_.pairs[static_cast<std::size_t>(pair)];
    engine.compute2<Operator::coulomb, BraKet::xs_xx, 0>(aux_[sP], unit, obs_[s1], obs_[s2], &aux_data_[sP],
                                                         &pairs_.data[static_cast<std::size_t>(pair)]);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return seconds * double(computed) / double(sample.size()) / double(omp_get_max_threads());
}

}  // namespace dfmp2
