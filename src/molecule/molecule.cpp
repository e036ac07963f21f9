#include "src/molecule/molecule.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "src/common/cell_grid.hpp"
#include "src/common/errors.hpp"
#include "src/common/text.hpp"

namespace dfmp2 {
namespace {

const std::array<std::string, kMaxAtomicNumber + 1> kSymbols = {
    "X",  "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si",
    "P",  "S",  "Cl", "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu",
    "Zn", "Ga", "Ge", "As", "Se", "Br", "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru",
    "Rh", "Pd", "Ag", "Cd", "In", "Sn", "Sb", "Te", "I",  "Xe", "Cs", "Ba", "La", "Ce", "Pr",
    "Nd", "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er", "Tm", "Yb", "Lu", "Hf", "Ta", "W",
    "Re", "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra", "Ac",
    "Th", "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr", "Rf",
    "Db", "Sg", "Bh", "Hs", "Mt", "Ds", "Rg", "Cn", "Nh", "Fl", "Mc", "Lv", "Ts", "Og"};

std::string normalize_symbol(const std::string& s) {
  std::string out = lowercase(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

// 2S unpaired electrons out of nelec: the rest pair up, so 2S has nelec's parity.
void validate_multiplicity(std::int64_t nelec, int multiplicity) {
  const std::string M = "multiplicity " + std::to_string(multiplicity), n = std::to_string(nelec);
  const std::string has = ", the molecule has " + n + " electrons";
  if (multiplicity < 1) throw InputError(M + " is not a spin multiplicity 2S+1 (at least 1)");
  if (nelec % 2 != 0 && multiplicity == 1)
    throw InputError("odd electron count (" + n +
                     ") cannot be a singlet: give the multiplicity, e.g. --multiplicity 2 for a doublet");
  if ((nelec + multiplicity - 1) % 2 != 0)
    throw InputError(M + " needs an " + (nelec % 2 != 0 ? "even" : "odd") + " electron count" + has);
  if (multiplicity - 1 > nelec)
    throw InputError(M + " needs " + std::to_string(multiplicity - 1) + " unpaired electrons" + has);
}

// The first atom (in file order) closer than kMinAtomDistance to an earlier one, and the first of
// those, refused; the earlier atoms near each are found in a grid of cells that size, so the
// check stays linear in the atom count.
void require_apart(const Molecule& mol, const std::vector<CellGrid::Point>& positions) {
  const CellGrid grid(positions, kMinAtomDistance);
  for (std::size_t a = 0; a < positions.size(); ++a) {
    std::size_t closest = a;
    double d = 0.0;
    grid.for_each_near(positions[a], [&](std::size_t b) {
      const auto& ra = positions[a];
      const auto& rb = positions[b];
      const double r = std::hypot(ra[0] - rb[0], ra[1] - rb[1], ra[2] - rb[2]);
      if (b < closest && r < kMinAtomDistance) {
        closest = b;
        d = r;
      }
    });
    if (closest == a) continue;
    char distance[64];
    std::snprintf(distance, sizeof distance, "%.3g bohr apart, closer than %g bohr", d, kMinAtomDistance);
    throw InputError("atoms " + std::to_string(closest + 1) + " (" + atom_label(mol.atoms[closest]) + ") and " +
                     std::to_string(a + 1) + " (" + atom_label(mol.atoms[a]) + ") are " + distance +
                     ": check the geometry and its units (XYZ files are in Angstrom)");
  }
}

}  // namespace

int atomic_number(const std::string& symbol) {
  const std::string want = normalize_symbol(symbol);
  for (int Z = 1; Z <= kMaxAtomicNumber; ++Z)
    if (kSymbols[Z] == want) return Z;
  throw InputError("unknown element symbol '" + symbol + "'");
}

const std::string& element_symbol(int Z) {
  if (Z < 1 || Z > kMaxAtomicNumber)
    throw InputError("atomic number " + std::to_string(Z) + " is out of range 1.." +
                     std::to_string(kMaxAtomicNumber));
  return kSymbols[Z];
}

std::string atom_label(const Atom& atom) {
  return atom.ghost ? "Gh(" + element_symbol(atom.Z) + ")" : element_symbol(atom.Z);
}

bool has_ghost_atoms(const Molecule& mol) {
  return std::any_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ghost; });
}

void validate(const Molecule& mol) {
  if (mol.atoms.empty()) throw InputError("the molecule has no atoms");
  if (std::all_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ghost; }))
    throw InputError("every atom of the molecule is a ghost atom: at least one must be real");
  std::vector<CellGrid::Point> positions;
  for (std::size_t a = 0; a < mol.atoms.size(); ++a) {
    const Atom& atom = mol.atoms[a];
    element_symbol(atom.Z);
    for (double c : atom.r)
      if (!std::isfinite(c))
        throw InputError("atom " + std::to_string(a + 1) + " (" + atom_label(atom) +
                         ") has a non-finite coordinate");
    positions.push_back(atom.r);
  }
  require_apart(mol, positions);
  const std::int64_t nelec = electron_count(mol);
  if (nelec <= 0)
    throw InputError("charge " + std::to_string(mol.charge) + " leaves " + std::to_string(nelec) + " electrons");
  if (nelec > kMaxElectrons)
    throw InputError("charge " + std::to_string(mol.charge) + " gives " + std::to_string(nelec) +
                     " electrons, more than dfmp2 takes (" + std::to_string(kMaxElectrons) + ")");
  validate_multiplicity(nelec, mol.multiplicity);
}

std::int64_t electron_count(const Molecule& mol) {
  std::int64_t n = -static_cast<std::int64_t>(mol.charge);
  for (const Atom& atom : mol.atoms) n += nuclear_charge(atom);
  return n;
}

int alpha_electrons(const Molecule& mol) { return static_cast<int>((electron_count(mol) + mol.multiplicity - 1) / 2); }
int beta_electrons(const Molecule& mol) { return static_cast<int>((electron_count(mol) - mol.multiplicity + 1) / 2); }

double nuclear_repulsion(const Molecule& mol) {
  double e = 0.0;
  for (std::size_t a = 0; a < mol.atoms.size(); ++a)
    for (std::size_t b = 0; b < a; ++b) {
      if (mol.atoms[a].ghost || mol.atoms[b].ghost) continue;
      const auto& ra = mol.atoms[a].r;
      const auto& rb = mol.atoms[b].r;
      e += nuclear_charge(mol.atoms[a]) * nuclear_charge(mol.atoms[b]) /
           std::hypot(ra[0] - rb[0], ra[1] - rb[1], ra[2] - rb[2]);
    }
  return e;
}

Eigen::MatrixXd nuclear_repulsion_gradient(const Molecule& mol) {
  const auto natom = static_cast<Eigen::Index>(mol.atoms.size());
  Eigen::MatrixXd g = Eigen::MatrixXd::Zero(natom, 3);
  for (Eigen::Index a = 0; a < natom; ++a)
    for (Eigen::Index b = 0; b < a; ++b) {
      if (mol.atoms[a].ghost || mol.atoms[b].ghost) continue;
      const Eigen::Vector3d r_ab = Eigen::Vector3d(mol.atoms[a].r.data()) - Eigen::Vector3d(mol.atoms[b].r.data());
      const Eigen::Vector3d force =
          nuclear_charge(mol.atoms[a]) * nuclear_charge(mol.atoms[b]) * r_ab / std::pow(r_ab.norm(), 3);
      g.row(a) -= force;
      g.row(b) += force;
    }
  return g;
}

namespace {

// An atom's frozen electrons: its previous noble-gas shell (He, Ne, Ar, Kr, Xe, Rn), plus the 4f
// (5f) shell from 18 electrons past Xe (Rn) on, less the ECP's core, and never below 0 (an ECP
// may take more). Psi4 1.3.2 lacks the f shell, so for Hf–Rn with def2's 60-electron ECP its
// count goes negative (−6 an atom); Psi4 1.4 and later freeze the 5s5p here, as this does.
int frozen_core_electrons(const Atom& atom) {
  static constexpr std::array<int, 6> kNobleGas = {2, 10, 18, 36, 54, 86};
  int core = 0;
  for (int shell : kNobleGas)
    if (atom.Z > shell) core = shell;
  if (core >= 54 && atom.Z - core >= 18) core += 14;
  return std::max(0, core - atom.ecp_electrons);
}

}  // namespace

int frozen_core_orbitals(const Molecule& mol) {
  int frozen_electrons = 0;
  for (const Atom& atom : mol.atoms)
    if (!atom.ghost) frozen_electrons += frozen_core_electrons(atom);
  return frozen_electrons / 2;
}

std::string formula(const Molecule& mol) {
  std::map<std::string, int> counts;
  for (const Atom& atom : mol.atoms)
    if (!atom.ghost) ++counts[element_symbol(atom.Z)];
  std::string out;
  auto append = [&](const std::string& el) {
    const int n = counts[el];
    out += el + (n > 1 ? std::to_string(n) : "");
    counts.erase(el);
  };
  const bool has_carbon = counts.count("C") > 0;
  if (has_carbon) append("C");
  if (has_carbon && counts.count("H")) append("H");
  for (const auto& [el, n] : std::map<std::string, int>(counts)) append(el);
  return out;
}

}  // namespace dfmp2
