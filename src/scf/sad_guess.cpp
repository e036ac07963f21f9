#include "src/scf/sad_guess.hpp"

#include <map>
#include <utility>

#include "src/common/parallel.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/exact_fock.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

Eigen::MatrixXd atomic_density_guess(const BasisSetData& basis, const Molecule& mol, MemoryBudget& budget) {
  // Keyed by element and ghostliness: a ghost atom's block has its functions but no electrons.
  std::map<std::pair<int, bool>, Eigen::MatrixXd> factor_by_element;
  const auto key = [](const Atom& atom) { return std::pair{atom.Z, atom.ghost}; };
  for (const Atom& atom : mol.atoms) {
    if (factor_by_element.count(key(atom))) continue;
    Molecule lone_atom;
    lone_atom.atoms = {Atom{atom.Z, {0.0, 0.0, 0.0}}};
    const libint2::BasisSet obs = place_on(basis, lone_atom);
    if (atom.ghost) {
      factor_by_element[key(atom)] = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(obs.nbf()), 0);
      continue;
    }
    const ShellPairs pairs = significant_shell_pairs(obs);
    Communicator this_process;  // every rank makes the same guess on its own
    ExactFock fock(obs, pairs, this_process, budget);
    ScfOptions options;  // a guess: loose convergence is plenty
    options.e_convergence = 1e-8;
    options.d_convergence = 1e-5;
    options.max_iterations = 50;
    factor_by_element[key(atom)] = spherical_atom_density_factor(
        overlap_matrix(obs), core_hamiltonian(obs, lone_atom), atom.Z, fock, options);
  }

  Eigen::Index rows = 0, cols = 0;
  for (const Atom& atom : mol.atoms) {
    rows += factor_by_element[key(atom)].rows();
    cols += factor_by_element[key(atom)].cols();
  }
  Eigen::MatrixXd guess = Eigen::MatrixXd::Zero(rows, cols);
  Eigen::Index row = 0, col = 0;
  for (const Atom& atom : mol.atoms) {
    const Eigen::MatrixXd& block = factor_by_element[key(atom)];
    guess.block(row, col, block.rows(), block.cols()) = block;
    row += block.rows();
    col += block.cols();
  }
  return guess;
}

}  // namespace dfmp2
