#include "src/integrals/one_electron.hpp"

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/libint.hpp"

namespace dfmp2 {
namespace {

using libint2::Engine;
using libint2::Operator;

// The matrices of an operator's first `components` results (emultipole1: overlap, x, y, z),
// OpenMP over shell pairs (s1 ≥ s2).
template <std::size_t components = 1>
std::array<Eigen::MatrixXd, components> one_body_components(const libint2::BasisSet& obs, const Engine& prototype) {
  const auto shell2bf = obs.shell2bf();
  const std::size_t nshell = obs.size();
  std::array<Eigen::MatrixXd, components> M;
  for (Eigen::MatrixXd& m : M) m = Eigen::MatrixXd::Zero(obs.nbf(), obs.nbf());
  auto engines = engines_per_thread(prototype);
#pragma omp parallel for schedule(dynamic)
  for (std::size_t s1 = 0; s1 < nshell; ++s1) {
    Engine& engine = engines[omp_get_thread_num()];
    const auto& buf = engine.results();
    for (std::size_t s2 = 0; s2 <= s1; ++s2) {
      engine.compute1(obs[s1], obs[s2]);
      if (buf[0] == nullptr) continue;
      const std::size_t n1 = obs[s1].size(), n2 = obs[s2].size();
      const std::size_t b1 = shell2bf[s1], b2 = shell2bf[s2];
      for (std::size_t c = 0; c < components; ++c)
        for (std::size_t f1 = 0; f1 < n1; ++f1)
          for (std::size_t f2 = 0; f2 < n2; ++f2)
            M[c](b1 + f1, b2 + f2) = M[c](b2 + f2, b1 + f1) = buf[c][f1 * n2 + f2];
    }
  }
  return M;
}

Eigen::MatrixXd one_body(const libint2::BasisSet& obs, const Engine& prototype) {
  return one_body_components(obs, prototype)[0];
}

}  // namespace

Eigen::MatrixXd overlap_matrix(const libint2::BasisSet& obs) {
  return one_body(obs, Engine(Operator::overlap, obs.max_nprim(), obs.max_l()));
}

Eigen::MatrixXd core_hamiltonian(const libint2::BasisSet& obs, const Molecule& mol) {
  Engine nuclear(Operator::nuclear, obs.max_nprim(), obs.max_l());
  std::vector<std::pair<double, std::array<double, 3>>> charges;
  for (const Atom& atom : mol.atoms)
    if (!atom.ghost) charges.push_back({static_cast<double>(nuclear_charge(atom)), atom.r});
  nuclear.set_params(charges);
  return one_body(obs, Engine(Operator::kinetic, obs.max_nprim(), obs.max_l())) + one_body(obs, nuclear);
}

std::array<Eigen::MatrixXd, 3> position_matrices(const libint2::BasisSet& obs) {
  // emultipole1's origin is (0, 0, 0) unless set.
  const auto all = one_body_components<4>(obs, Engine(Operator::emultipole1, obs.max_nprim(), obs.max_l()));
  return {all[1], all[2], all[3]};
}

Eigen::Vector3d dipole_moment(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& D) {
  Eigen::Vector3d mu = Eigen::Vector3d::Zero();
  for (const Atom& atom : mol.atoms)
    if (!atom.ghost) mu += static_cast<double>(nuclear_charge(atom)) * Eigen::Vector3d(atom.r[0], atom.r[1], atom.r[2]);
  const std::array<Eigen::MatrixXd, 3> r = position_matrices(obs);
  for (Eigen::Index k = 0; k < 3; ++k) mu(k) -= D.cwiseProduct(r[static_cast<std::size_t>(k)]).sum();
  return mu;
}

}  // namespace dfmp2
