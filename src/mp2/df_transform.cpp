#include "src/mp2/df_transform.hpp"

#include <algorithm>
#include <vector>

#include "src/integrals/density_fitting.hpp"
#include "src/common/errors.hpp"
#include "src/common/memory.hpp"

namespace dfmp2 {

DFTensor build_df_tensor(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                         const ShellPairs& pairs, const Eigen::MatrixXd& C_occ,
                         const Eigen::MatrixXd& C_vir, const Eigen::VectorXd& eps_occ,
                         const Eigen::VectorXd& eps_vir, std::size_t memory_bytes,
                         const std::function<void(double)>& progress, Communicator& comm) {
  const std::size_t nbf = obs.nbf(), naux = aux.nbf();
  const std::size_t nocc = C_occ.cols(), nvir = C_vir.cols(), nov = nocc * nvir;
  // This rank computes (Q|ia) for its auxiliary shells and ends up with B for its occupied block.
  const auto [first_shell, last_shell] = shell_block(aux, comm.rank(), comm.size());
  const Range my_q{first_function(aux, first_shell), first_function(aux, last_shell)};
  auto occ_block = [&](int rank) { return block_of(nocc, rank, comm.size()); };
  const Range my_occ = occ_block(comm.rank());

  // (Q|ia) for my Q, then for my i, and B for my i, are held whole.
  const std::size_t held = sizeof(double) * (my_q.size() * nov + 2 * naux * my_occ.size() * nvir);
  const std::size_t slab = sizeof(double) * nbf * nbf;
  std::size_t largest_shell = 0;
  for (const auto& shell : aux) largest_shell = std::max(largest_shell, shell.size());
  if (held + slab * largest_shell > memory_bytes)
    throw InputError("the DF-MP2 tensor needs " + format_bytes(held + slab * largest_shell) +
                     ", more than --memory " + format_bytes(memory_bytes) + "; raise --memory");
  const std::size_t batch_functions = std::max<std::size_t>(1, (memory_bytes - held) / slab);

  std::vector<double> Qia(my_q.size() * nov);
  std::vector<double> ao;  // (Q|μν) for one batch of auxiliary shells
  const auto batches = shell_batches(aux, first_shell, last_shell, batch_functions);
  for (std::size_t b = 0; b < batches.size(); ++b) {
    const auto [first, last] = batches[b];
    const std::size_t q_first = first_function(aux, first);
    const std::size_t q_count = first_function(aux, last) - q_first;
    ao.resize(q_count * nbf * nbf);
    three_index_integrals(aux, first, last, obs, pairs, ao.data());
#pragma omp parallel for schedule(dynamic)
    for (std::size_t q = 0; q < q_count; ++q) {
      const Eigen::Map<const Eigen::MatrixXd> Q_mn(ao.data() + q * nbf * nbf, nbf, nbf);
      // Column-major nvir × nocc is row-major [i][a].
      Eigen::Map<Eigen::MatrixXd> Q_ia(Qia.data() + (q_first - my_q.begin + q) * nov, nvir, nocc);
      Q_ia.noalias() = C_vir.transpose() * (Q_mn * C_occ);
    }
    if (progress) progress(static_cast<double>(b + 1) / static_cast<double>(batches.size()));
  }
  ao = {};

  // Fit: B^P_ia for this rank's i, row-major [P][i a]. Over MPI the ranks first trade blocks so
  // that each holds every P for its i (the metric mixes P).
  if (comm.size() > 1) {
    auto q_of = [&](int rank) {
      const auto [first, last] = shell_block(aux, rank, comm.size());
      return Range{first_function(aux, first), first_function(aux, last)};
    };
    auto ia_of = [&](int rank) {
      const Range occ = occ_block(rank);
      return Range{occ.begin * nvir, occ.end * nvir};
    };
    Qia = redistribute(
        comm, Qia, [&](int rank) { return Block{q_of(rank), {0, nov}}; },
        [&](int rank) { return Block{{0, naux}, ia_of(rank)}; });
  }
  CoulombFitting(coulomb_metric(aux)).apply(Qia.data(), my_occ.size() * nvir);

  DFTensor df;
  df.nocc = my_occ.size();
  df.occ_begin = my_occ.begin;
  df.nvir = nvir;
  df.naux = naux;
  const std::size_t my_nov = df.nocc * nvir;
  df.B64.resize(my_nov * naux);
  // [P][ia] → [ia][P], in tiles that stay in cache.
  constexpr std::size_t kTile = 64;
#pragma omp parallel for collapse(2) schedule(static)
  for (std::size_t p0 = 0; p0 < naux; p0 += kTile)
    for (std::size_t x0 = 0; x0 < my_nov; x0 += kTile)
      for (std::size_t x = x0; x < std::min(my_nov, x0 + kTile); ++x)
        for (std::size_t p = p0; p < std::min(naux, p0 + kTile); ++p)
          df.B64[x * naux + p] = Qia[p * my_nov + x];
  df.eps_occ.assign(eps_occ.data(), eps_occ.data() + nocc);
  df.eps_vir.assign(eps_vir.data(), eps_vir.data() + nvir);
  return df;
}

}  // namespace dfmp2
