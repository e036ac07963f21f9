#include "src/integrals/one_electron.hpp"

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/libint.hpp"

namespace dfmp2 {
namespace {

using libint2::Engine;
using libint2::Operator;

// One-electron operator matrix, OpenMP over shell pairs (s1 ≥ s2).
Eigen::MatrixXd one_body(const libint2::BasisSet& obs, const Engine& prototype) {
  const auto shell2bf = obs.shell2bf();
  const std::size_t nshell = obs.size();
  Eigen::MatrixXd M = Eigen::MatrixXd::Zero(obs.nbf(), obs.nbf());
  auto engines = engines_per_thread(prototype);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute(obs[s1], obs[s2]);
      if (buf[0] == nullptr) continue;
      const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size();
      const std::size_t b1 = shell2bf[s1], b2 = shell2bf[s2];
      for (std::size_t f1 = 0; f1 < n1; ++f1)
        for (std::size_t f2 = 0; f2 < n2; ++f2) M(b1 + f1, b2 + f2) = M(b2 + f2, b1 + f1) = buf[0][f1 * n2 + f2];
    }
  }
  return M;
}

}  // namespace

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs) {
  return one_body(obs, Engine(Operator::overlap, obs.max_nprim(), obs.max_l()));
}

Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol) {
  Engine nuclear(Operator::nuclear, obs.max_nprim(), obs.max_l());
  std::vector<std::pair<double, std::array<double, 3>>> charges;
  for (const Atom& atom : mol.atoms)
    if (!atom.ghost) charges.push_back({static_cast<double>(atom.Z), atom.r});
  nuclear.set_params(charges);
  return one_body(obs, Engine(Operator::kinetic, obs.max_nprim(), obs.max_l())) + one_body(obs, nuclear);
}

}  // namespace dfmp2
