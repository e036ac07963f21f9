// What the Molden and TREXIO readers and writers share: orbitals with their basis as such a file
// holds them (the file's order and normalisation of the functions), and the passage to and from
// the run's, libint2's, convention (src/io/ao_conventions.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/io/ao_conventions.hpp"
#include "src/molecule/basis.hpp"
#include "src/molecule/molecule.hpp"
#include "src/molecule/orbital_basis.hpp"
#include "src/run/run_input.hpp"

namespace dfmp2 {

// The orbitals' overlap must be the unit matrix to this (Cᵀ S C in our overlap S).
inline constexpr double kOrthonormalityTolerance = 1e-8;

// A contracted shell of the file on one of its atoms.
struct FileShell {
  int atom = 0;
  ContractedShell shell;  // coefficients of normalised primitives
  bool pure = false;      // spherical (l ≥ 2)
};

// One spin block of orbitals as the file holds them. RHF files have one; a second (β) block is
// refused by the readers for now.
struct FileOrbitals {
  Eigen::MatrixXd C;  // file functions × orbitals
  Eigen::VectorXd eps, occupation;
};

struct OrbitalFileData {
  std::string path;
  Molecule molecule;  // charge as the file's electrons give it
  std::vector<FileShell> shells;  // in the file's order
  bool pure = false;  // the file's choice for d and up: the DF-SCF fitting set follows it
  FileOrbitals orbitals;
};

// The file's shells as libint2 shells, in the file's order. Throws InputError for an angular
// momentum beyond libint2's.
OrbitalBasis file_basis(const OrbitalFileData& file);

// Maps file functions to libint2's, shell after shell in `order` (indices into basis), each
// shell's functions as shell_map(shell index) says.
FunctionMap function_map(const libint2::BasisSet& basis, const std::vector<std::size_t>& order,
                         const std::function<ShellMap(std::size_t shell)>& shell_map);

// The run's input from a file: the orbitals through the one of `readings` (candidate maps of the
// file's functions onto `basis`, its file_basis) that makes them orthonormal, sorted by energy,
// checked closed-shell (occupations 2 and 0) with virtual orbitals. All occupations zero: the
// orbitals come unoccupied (RunInput::unoccupied). Throws InputError naming the file.
RunInput orbitals_input(const OrbitalFileData& file, OrbitalBasis basis, const std::vector<FunctionMap>& readings);

// Unoccupied orbitals (a file without occupations) occupied by energy: the lowest half of the
// electrons the molecule has with this charge (and multiplicity, which must be 1) doubly
// occupied. Returns the note that says so, for stderr. Throws InputError when the electrons do
// not fit or leave no virtual orbital.
std::string occupy_by_energy(RunInput& input, int charge, int multiplicity);

// The occupations of closed-shell orbitals: 2 for the nocc lowest, 0 for the rest.
Eigen::VectorXd closed_shell_occupations(const Orbitals& orbitals);

// Whether the basis's shells of angular momentum l are spherical (the basis's choice when it has
// none). Throws std::runtime_error when they disagree.
bool shells_pure(const OrbitalBasis& basis, int l);

// The basis's shells grouped by atom in atom order (libint2's order within an atom), and the atom
// of each; shells are matched to atoms by position.
struct ShellsByAtom {
  std::vector<std::size_t> order;
  std::vector<int> atom;  // of shell order[k]
};
ShellsByAtom shells_by_atom(const libint2::BasisSet& basis, const Molecule& mol);

}  // namespace dfmp2
