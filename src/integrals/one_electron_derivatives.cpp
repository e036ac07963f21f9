#include "src/integrals/one_electron_derivatives.hpp"

#include <vector>

#include <libint2.hpp>
#include <omp.h>

#include "src/integrals/centre_derivatives.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/thread_gradients.hpp"
#include "src/molecule/basis.hpp"

namespace dfmp2 {
namespace {

using libint2::Engine;
using libint2::Operator;

// 2 Σ_{μ∈a} Σ_ν D_μν (∂μ/∂A|O|ν), O the engine's operator: how Σ_μν D_μν O_μν changes as shell
// a's centre A moves (D symmetric and O Hermitian, so moving the ν of a gives the same again).
Eigen::Vector3d shell_force(Engine& engine, const libint2::BasisSet& obs, std::size_t a, const CentreDerivative& da,
                            const Eigen::MatrixXd& D) {
  const auto& shell2bf = obs.shell2bf();
  CentreContraction contract;
  std::vector<double> weights;
  Eigen::Vector3d force = Eigen::Vector3d::Zero();
  const std::size_t na = obs[a].size();
  for (std::size_t b = 0; b < obs.size(); ++b) {
    const std::size_t nb = obs[b].size();
    weights.resize(na * nb);
    for (std::size_t fa = 0; fa < na; ++fa)
      for (std::size_t fb = 0; fb < nb; ++fb) weights[fa * nb + fb] = D(shell2bf[a] + fa, shell2bf[b] + fb);
    force += contract(obs[a], da, 1, nb, weights.data(), [&](const libint2::Shell& shifted) {
      engine.compute1(shifted, obs[b]);
      return engine.results()[0];
    });
  }
  return 2.0 * force;
}

// Σ over the orbital shells a (OpenMP, one engine per thread) of add(engine, a, ∂a, g): each
// adds shell a's share to its thread's gradient g.
template <typename Add>
Eigen::MatrixXd sum_over_shells(const libint2::BasisSet& obs, const Molecule& mol, const Engine& prototype, Add&& add) {
  auto engines = engines_per_thread(prototype);
  ThreadGradients g(mol.atoms.size());
#pragma omp parallel for schedule(dynamic)
  for (std::size_t a = 0; a < obs.size(); ++a)
    add(engines[static_cast<std::size_t>(omp_get_thread_num())], a, CentreDerivative(obs[a]), g.mine());
  return g.sum();
}

// Σ_μν D_μν ∂O_μν/∂R_A for an operator that does not depend on the nuclei (overlap, kinetic).
Eigen::MatrixXd basis_centre_gradient(const libint2::BasisSet& obs, const Molecule& mol, Operator op,
                                      const Eigen::MatrixXd& D) {
  const std::vector<std::size_t> atoms = shell_atoms(obs, mol);
  return sum_over_shells(obs, mol, Engine(op, obs.max_nprim(), obs.max_l() + 1),
                         [&](Engine& engine, std::size_t a, const CentreDerivative& da, Eigen::MatrixXd& g) {
                           g.row(atoms[a]) += shell_force(engine, obs, a, da, D).transpose();
                         });
}

// Σ_μν D_μν ∂V_μν/∂R_A, V = Σ_C V_C with V_C = −Z_C/|r − C|. Translational invariance of each
// (μ|V_C|ν) gives its Hellmann–Feynman part: ∂/∂C = −(∂/∂A + ∂/∂B), A and B the functions' centres.
Eigen::MatrixXd nuclear_attraction_gradient(const libint2::BasisSet& obs, const Molecule& mol,
                                            const Eigen::MatrixXd& D) {
  const std::vector<std::size_t> atoms = shell_atoms(obs, mol);
  Engine prototype(Operator::nuclear, obs.max_nprim(), obs.max_l() + 1);
  prototype.set_params(std::vector<std::pair<double, std::array<double, 3>>>{{0.0, {0.0, 0.0, 0.0}}});
  return sum_over_shells(obs, mol, prototype,
                         [&](Engine& engine, std::size_t a, const CentreDerivative& da, Eigen::MatrixXd& g) {
                           for (std::size_t C = 0; C < mol.atoms.size(); ++C) {
                             const Atom& nucleus = mol.atoms[C];
                             if (nucleus.ghost) continue;  // no charge: its functions move, nothing else
                             engine.set_params(std::vector<std::pair<double, std::array<double, 3>>>{
                                 {static_cast<double>(nuclear_charge(nucleus)), nucleus.r}});
                             const Eigen::Vector3d force = shell_force(engine, obs, a, da, D);
                             g.row(atoms[a]) += force.transpose();
                             g.row(C) -= force.transpose();
                           }
                         });
}

}  // namespace

Eigen::MatrixXd overlap_gradient(const libint2::BasisSet& obs, const Molecule& mol, const Eigen::MatrixXd& W) {
  require_max_l(obs, max_differentiable_l(), "the overlap derivative");
  return basis_centre_gradient(obs, mol, Operator::overlap, W);
}

Eigen::MatrixXd core_hamiltonian_gradient(const libint2::BasisSet& obs, const Molecule& mol,
                                          const Eigen::MatrixXd& D) {
  require_max_l(obs, max_differentiable_l(), "the core Hamiltonian derivative");
  return basis_centre_gradient(obs, mol, Operator::kinetic, D) + nuclear_attraction_gradient(obs, mol, D);
}

}  // namespace dfmp2
