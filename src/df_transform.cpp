#include "src/df_transform.hpp"

#include <algorithm>
#include <vector>

#include "src/density_fitting.hpp"
#include "src/errors.hpp"
#include "src/memory.hpp"

namespace dfmp2 {

DFTensor build_df_tensor(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                         const ShellPairs& pairs, const Eigen::MatrixXd& C_occ,
                         const Eigen::MatrixXd& C_vir, const Eigen::VectorXd& eps_occ,
                         const Eigen::VectorXd& eps_vir, std::size_t memory_bytes,
                         const std::function<void(double)>& progress) {
  const std::size_t nbf = obs.nbf(), naux = aux.nbf();
  const std::size_t nocc = C_occ.cols(), nvir = C_vir.cols(), nov = nocc * nvir;

  // (Q|ia) and its transpose B are held whole: the energy step needs all of B.
  const std::size_t held = 2 * sizeof(double) * naux * nov;
  const std::size_t slab = sizeof(double) * nbf * nbf;
  std::size_t largest_shell = 0;
  for (const auto& shell : aux) largest_shell = std::max(largest_shell, shell.size());
  if (held + slab * largest_shell > memory_bytes)
    throw InputError("the DF-MP2 tensor needs " + format_bytes(held) + ", more than --memory " +
                     format_bytes(memory_bytes) + " allows; raise --memory");
  const std::size_t batch_functions = std::max<std::size_t>(1, (memory_bytes - held) / slab);

  std::vector<double> Qia(naux * nov);
  std::vector<double> ao;  // (Q|μν) for one batch of auxiliary shells
  const auto batches = aux_shell_batches(aux, batch_functions);
  const auto aux2bf = aux.shell2bf();
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto [first, last] = batches[b];
    const std::size_t q_first = aux2bf[first];
    const std::size_t q_count = (last < aux.size() ? aux2bf[last] : naux) - q_first;
    ao.resize(q_count * nbf * nbf);
    three_index_integrals(aux, first, last, obs, pairs, ao.data());
#pragma omp parallel for schedule(dynamic)
    for (std::size_t q = 0; q < q_count; ++q) {
      const Eigen::Map<const Eigen::MatrixXd> Q_mn(ao.data() + q * nbf * nbf, nbf, nbf);
      // Column-major nvir × nocc is row-major [i][a].
      Eigen::Map<Eigen::MatrixXd> Q_ia(Qia.data() + (q_first + q) * nov, nvir, nocc);
      Q_ia.noalias() = C_vir.transpose() * (Q_mn * C_occ);
    }
    if (progress) progress(static_cast<double>(b + 1) / static_cast<double>(batches.size()));
  }
  ao = {};

  CoulombFitting(coulomb_metric(aux)).apply(Qia.data(), nov);

  DFTensor df;
  df.nocc = nocc;
  df.nvir = nvir;
  df.naux = naux;
  df.B64.resize(nov * naux);
  // [P][ia] → [ia][P], in tiles that stay in cache.
  constexpr std::size_t kTile = 64;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::size_t p0 = 0; p0 < naux; p0 += kTile)
    for (std::size_t x0 = 0; x0 < nov; x0 += kTile)
      for (std::size_t x = x0; x < std::min(nov, x0 + kTile); ++x)
        for (std::size_t p = p0; p < std::min(naux, p0 + kTile); ++p)
          df.B64[x * naux + p] = Qia[p * nov + x];
  df.eps_occ.assign(eps_occ.data(), eps_occ.data() + nocc);
  df.eps_vir.assign(eps_vir.data(), eps_vir.data() + nvir);
  return df;
}

}  // namespace dfmp2
