// Molecule: nuclei (atomic numbers, positions in bohr), charge and multiplicity.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace dfmp2 {

// CODATA 2014, as Psi4 1.3 uses.
inline constexpr double kBohrPerAngstrom = 1.0 / 0.52917721067;

struct Atom {
  int Z = 0;
  std::array<double, 3> r{};  // bohr
};

struct Molecule {
  std::string name;
  std::vector<Atom> atoms;
  int charge = 0;
  int multiplicity = 1;
};

constexpr int kMaxAtomicNumber = 118;

// "O", "o", "Cl" → Z; throws InputError naming the symbol when unknown.
int atomic_number(const std::string& symbol);
const std::string& element_symbol(int Z);

// Throws InputError for: no atoms, Z out of range, non-finite coordinates, two atoms closer
// than 1e-3 bohr, no electrons, or a multiplicity 2S+1 the electron count cannot have (below 1,
// of the wrong parity — an odd count with multiplicity 1 among them — or more unpaired electrons
// than electrons).
void validate(const Molecule& mol);

int electron_count(const Molecule& mol);
// Electrons of each spin, the unpaired ones α: nα = (n + 2S)/2, nβ = (n − 2S)/2.
int alpha_electrons(const Molecule& mol);
int beta_electrons(const Molecule& mol);
double nuclear_repulsion(const Molecule& mol);
// Orbitals frozen by Psi4's `freeze_core true`: the previous noble-gas shell of each atom.
int frozen_core_orbitals(const Molecule& mol);
// Empirical formula in Hill order, e.g. "CH4", "H2O".
std::string formula(const Molecule& mol);

}  // namespace dfmp2
