#include "src/scf/sad_guess.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "src/common/parallel.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/four_index.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/exact_fock.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

namespace {

// The atom alone at the origin, its ECP's core kept (a ghost's element as a real atom).
Molecule lone_atom(const Atom& atom) {
  Molecule lone;
  lone.atoms = {Atom{atom.Z, {0.0, 0.0, 0.0}, false, atom.ecp_electrons}};
  return lone;
}

}  // namespace

std::size_t atomic_density_guess_bytes(const BasisSetData& basis, const Molecule& mol) {
  std::map<int, std::size_t> bytes_by_element;
  for (const Atom& atom : mol.atoms) {
    if (atom.ghost || bytes_by_element.count(atom.Z)) continue;  // a ghost has no guess to compute
    const libint2::BasisSet obs = place_on(basis, lone_atom(atom));
    bytes_by_element[atom.Z] = ExactFock::peak_bytes(obs.nbf(), 1) + StoredQuartets::bytes(obs, significant_shell_pairs(obs));
  }
  std::size_t most = 0;
  for (const auto& [Z, bytes] : bytes_by_element) most = std::max(most, bytes);
  return most;
}

Eigen::MatrixXd atomic_density_guess(const BasisSetData& basis, const Molecule& mol, MemoryBudget& budget) {
  // Keyed by element and ghostliness: a ghost atom's block has its functions but no electrons.
  std::map<std::pair<int, bool>, Eigen::MatrixXd> factor_by_element;
  const auto key = [](const Atom& atom) { return std::pair{atom.Z, atom.ghost}; };
  for (const Atom& atom : mol.atoms) {
    if (factor_by_element.count(key(atom))) continue;
    const Molecule lone = lone_atom(atom);
    const libint2::BasisSet obs = place_on(basis, lone);
    if (atom.ghost) {
      factor_by_element[key(atom)] = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(obs.nbf()), 0);
      continue;
    }
    const ShellPairs pairs = significant_shell_pairs(obs);
    Communicator this_process;  // every rank makes the same guess on its own
    ExactFock fock(obs, pairs, this_process, budget, 1, true);
    ScfOptions options;  // a guess: loose convergence is plenty
    options.e_convergence = 1e-8;
    options.d_convergence = 1e-5;
    options.max_iterations = 50;
    // An atom with an ECP: its valence electrons in the potential, as in the molecule.
    const Eigen::MatrixXd H = core_hamiltonian(obs, lone) + ecp_integrals(obs, basis, lone).U;
    factor_by_element[key(atom)] =
        spherical_atom_density_factor(overlap_matrix(obs), H, nuclear_charge(lone.atoms[0]), fock, options);
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
