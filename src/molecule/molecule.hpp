// Molecule: nuclei (atomic numbers, positions in bohr), charge and multiplicity.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <Eigen/Core>

namespace dfmp2 {

// CODATA 2014, as Psi4 1.3 uses.
inline constexpr double kBohrPerAngstrom = 1.0 / 0.52917721067;

struct Atom {
  int Z = 0;
  std::array<double, 3> r{};  // bohr
  // A ghost atom carries its element's basis functions (orbital and auxiliary) but no nuclear
  // charge and no electrons: a monomer in the dimer's basis, for the counterpoise correction.
  bool ghost = false;
  // Core electrons an effective core potential of the orbital basis replaces (assign_ecp_cores):
  // they are neither in the nuclear charge the valence electrons see nor among the electrons.
  int ecp_electrons = 0;
};

// The charge of the nucleus as the electrons see it: Z less the ECP's core, 0 for a ghost.
inline int nuclear_charge(const Atom& atom) { return atom.ghost ? 0 : atom.Z - atom.ecp_electrons; }

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
// The element symbol, "Gh(O)" for a ghost atom (as Psi4 writes it).
std::string atom_label(const Atom& atom);
bool has_ghost_atoms(const Molecule& mol);

// Closer than this no two nuclei of a molecule come (H2's bond is 1.4 bohr); closer atoms are a
// geometry in the wrong units or a typing error.
constexpr double kMinAtomDistance = 0.2;  // bohr
// Electron counts stay where α and β counts fit an int (and far beyond any basis we can hold).
constexpr std::int64_t kMaxElectrons = 1'000'000'000;

// Throws InputError for: no atoms, no real (non-ghost) atom, Z out of range, non-finite
// coordinates, two atoms closer than kMinAtomDistance, no electrons or more than kMaxElectrons,
// or a multiplicity 2S+1 the
// electron count cannot have (below 1, of the wrong parity — an odd count with multiplicity 1
// among them — or more unpaired electrons than electrons).
void validate(const Molecule& mol);

// In 64 bits: a charge near INT_MIN must not overflow. Ghost atoms count for nothing here, in
// the nuclear repulsion and in the frozen core; the electrons of an ECP's core are not counted.
std::int64_t electron_count(const Molecule& mol);
// Electrons of each spin, the unpaired ones α: nα = (n + 2S)/2, nβ = (n − 2S)/2.
int alpha_electrons(const Molecule& mol);
int beta_electrons(const Molecule& mol);
double nuclear_repulsion(const Molecule& mol);
// ∂V_nn/∂R_A = −Σ_{B≠A} Z_A Z_B (R_A − R_B)/|R_A − R_B|³ over the real atoms (a ghost has no
// charge, its row is zero): natom × 3 (x, y, z), Eh/bohr.
Eigen::MatrixXd nuclear_repulsion_gradient(const Molecule& mol);
// Orbitals frozen by Psi4's `freeze_core true`: the previous noble-gas shell of each atom, and
// from Hf on (period 6 past the lanthanides) the 4f shell too, less what an ECP already replaces
// (Psi4 ≥ 1.4's count; see frozen_core_electrons).
int frozen_core_orbitals(const Molecule& mol);
// Empirical formula in Hill order, e.g. "CH4", "H2O", of the real atoms.
std::string formula(const Molecule& mol);

}  // namespace dfmp2
