// Gaussian basis sets: the shipped library (basis/*.gbs, Psi4's G94 dialect from the Basis Set
// Exchange) and placing its shells on a molecule as libint2 shells.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <libint2/basis.h>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

struct ContractedShell {
  int l = 0;
  std::vector<double> exponents;
  std::vector<double> coefficients;
};

// One Gaussian of an effective core potential: coefficient · r^(power−2) · exp(−exponent r²) in
// angular momentum channel l (G94's convention; libecpint takes `power` as written).
struct EcpTerm {
  int l = 0, power = 0;
  double exponent = 0.0, coefficient = 0.0;
  bool operator==(const EcpTerm&) const = default;
};

// An element's effective core potential: the local part is channel lmax (G94's "f-ul" block for
// lmax 3), the others semilocal (U_l − U_lmax); it replaces `core_electrons` of the atom's.
struct ElementEcp {
  int core_electrons = 0, lmax = 0;
  std::vector<EcpTerm> terms;
  bool operator==(const ElementEcp&) const = default;
};

struct BasisSetData {
  std::string name;  // as the user gave it
  std::string path;  // the file it came from
  bool pure = true;  // spherical (true) or Cartesian functions, as the file's header says
  std::map<int, std::vector<ContractedShell>> shells_by_Z;
  std::map<int, ElementEcp> ecp_by_Z;  // elements whose core the set replaces by a potential
};

// What a set is used for: an auxiliary (fitting) set may go to a higher angular momentum.
enum class BasisRole { orbital, auxiliary };
// The highest l the installed libint2 computes dfmp2's integrals for, in this role.
int max_angular_momentum(BasisRole role);
// The highest channel l of an effective core potential libecpint computes.
int max_ecp_angular_momentum();

// A name ("cc-pVDZ", "6-31G*", case-insensitive) looked up in the basis directory, or a path to
// a .gbs file. The directory is $DFMP2_BASIS_PATH when set, else ../share/dfmp2/basis beside
// the executable when it exists (an installed dfmp2), else the source tree's basis/.
// Throws InputError naming the basis, and the file and line, when it is unknown or malformed:
// also for what libint2 cannot take (exponents ≤ 0 or not finite, coefficients not finite, a
// zero contraction, l above max_angular_momentum(role)), an element given twice, and an
// effective core potential that is malformed (counts, channels, powers, numbers), given twice,
// or for an element the file has no functions for.
BasisSetData load_basis(const std::string& name_or_path, BasisRole role);
BasisSetData parse_gbs(const std::string& text, const std::string& name, const std::string& path,
                       BasisRole role);

// Psi4's defaults: X → X-ri for DF-MP2, X → X-jkfit for DF-SCF (Pople and STO sets borrow).
std::string default_df_basis(const std::string& orbital_basis);
std::string default_jk_basis(const std::string& orbital_basis);

// One contracted shell at `origin` as libint2 builds it: coefficients are those of normalised
// primitives (libint2 normalises the contraction); spherical when `pure` and l ≥ 2.
libint2::Shell make_shell(const ContractedShell& shell, bool pure, const std::array<double, 3>& origin);

// Throws InputError naming the first element of the molecule (in atom order) the set lacks.
void require_elements(const BasisSetData& basis, const Molecule& mol);

// Each real atom's Atom::ecp_electrons from the set's potentials (0 without one; a ghost atom
// has no core to replace).
void assign_ecp_cores(const BasisSetData& basis, Molecule& mol);

// The shells and functions place_on would make, counted without making them (a large molecule's
// sets are sized before they are built). Throws as require_elements.
struct BasisCount {
  std::size_t shells = 0, functions = 0;
};
BasisCount count_on(const BasisSetData& basis, const Molecule& mol, std::optional<bool> pure = std::nullopt);

// Shells on every atom, in atom order, spherical or Cartesian as the set says unless `pure`
// overrides it. Throws InputError naming the element the set lacks.
libint2::BasisSet place_on(const BasisSetData& basis, const Molecule& mol,
                           std::optional<bool> pure = std::nullopt);

// The atom each shell of `basis` sits on (its origin is that atom's position), per shell: a
// derivative with respect to a shell's centre is one with respect to that atom. Throws
// std::runtime_error when a shell sits on no atom.
std::vector<std::size_t> shell_atoms(const libint2::BasisSet& basis, const Molecule& mol);

}  // namespace dfmp2
