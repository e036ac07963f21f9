#include "src/io/molden.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "src/common/errors.hpp"
#include "src/common/text.hpp"
#include "src/io/orbital_file.hpp"

namespace dfmp2 {
namespace {

constexpr int kMaxMoldenL = 4;  // Molden defines shells s … g
constexpr const char* kMoldenShellLetters = "spdfg";
// Molden files name an atom's core electrons at most ([Core], [Pseudo], [Nval], or a charge less
// the core in [Atoms]), never the potential that replaces them.
constexpr const char* kNoPotentials =
    "an effective core potential, whose terms Molden files do not hold: run the TREXIO file of the same "
    "orbitals (--trexio writes one, potentials included) or the molecule with --basis";

struct Line {
  int number = 0;
  std::string text;
};

// One "[Name] rest" header and the lines up to the next one; name in lower case.
struct Section {
  std::string name, rest;
  Line header;
  std::vector<Line> lines;
};

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A number as Fortran programs print it too (1.0D-03).
std::optional<double> to_number(std::string token) {
  std::replace_if(token.begin(), token.end(), [](char c) { return c == 'D' || c == 'd'; }, 'E');
  try {
    std::size_t used = 0;
    const double value = std::stod(token, &used);
    if (used == token.size()) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<long> to_integer(const std::string& token) {
  if (token.empty() || token.find_first_not_of("+-0123456789") != std::string::npos) return std::nullopt;
  try {
    return std::stol(token);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

class MoldenReader {
 public:
  explicit MoldenReader(std::string path) : path_(std::move(path)) {}
  [[noreturn]] void fail(const std::string& why) const { throw InputError("'" + path_ + "': " + why); }
  [[noreturn]] void fail(const Line& line, const std::string& why) const {
    fail("line " + std::to_string(line.number) + ": " + why);
  }
  double number(const Line& line, const std::string& token) const {
    const auto value = to_number(token);
    if (!value || !std::isfinite(*value)) fail(line, "expected a number, found '" + token + "'");
    return *value;
  }
  long integer(const Line& line, const std::string& token) const {
    const auto value = to_integer(token);
    if (!value) fail(line, "expected an integer, found '" + token + "'");
    return *value;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<Section> read_sections(const MoldenReader& in) {
  std::ifstream file(in.path());
  if (!file) in.fail("cannot open the file");
  std::vector<Section> sections;
  std::string text;
  for (int number = 1; std::getline(file, text); ++number) {
    const std::string t = trim(text);
    const Line line{number, text};
    if (!t.empty() && t.front() == '[' && t.find(']') != std::string::npos) {
      const auto close = t.find(']');
      sections.push_back({lowercase(trim(t.substr(1, close - 1))), trim(t.substr(close + 1)), line, {}});
    } else if (!t.empty()) {
      if (sections.empty()) in.fail(line, "not a Molden file: the first line must be [Molden Format]");
      sections.back().lines.push_back(line);
    }
  }
  if (sections.empty() || sections.front().name != "molden format")
    in.fail("not a Molden file: the first line must be [Molden Format]");
  return sections;
}

// Spherical (true) or Cartesian d, f, g functions as the flags say; Molden's default is Cartesian,
// and a lone [5D] means spherical d and f.
std::array<bool, kMaxMoldenL + 1> spherical_flags(const std::vector<Section>& sections) {
  std::array<bool, kMaxMoldenL + 1> pure{};
  const std::map<std::string, std::vector<std::pair<int, bool>>> flags = {
      {"5d", {{2, true}, {3, true}}}, {"5d7f", {{2, true}, {3, true}}}, {"5d10f", {{2, true}, {3, false}}},
      {"7f", {{3, true}}},            {"9g", {{4, true}}},              {"6d", {{2, false}}},
      {"10f", {{3, false}}},          {"15g", {{4, false}}}};
  for (const Section& s : sections)
    if (const auto flag = flags.find(s.name); flag != flags.end())
      for (const auto& [l, spherical] : flag->second) pure[static_cast<std::size_t>(l)] = spherical;
  return pure;
}

// The element an [Atoms] label names ("I", "Au1"), 0 when it names none.
int element_of_label(const std::string& label) {
  const std::string letters = label.substr(0, label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"));
  try {
    return atomic_number(letters);
  } catch (const InputError&) {
    return 0;
  }
}

Molecule read_atoms(const MoldenReader& in, const Section& atoms, std::map<long, int>& index_of) {
  const std::string units = lowercase(atoms.rest);
  double scale = 0.0;
  if (units.find("au") != std::string::npos) scale = 1.0;
  if (units.find("ang") != std::string::npos) scale = kBohrPerAngstrom;
  if (scale == 0.0) in.fail(atoms.header, "[Atoms] must give its units, (AU) or (Angs)");
  Molecule mol;
  for (const Line& line : atoms.lines) {
    const auto w = words(line.text);
    if (w.size() < 6) in.fail(line, "expected 'element number Z x y z'");
    const long Z = in.integer(line, w[2]);
    if (Z < 1 || Z > kMaxAtomicNumber) in.fail(line, "atomic number " + w[2] + " is not an element (ghost atoms are not supported)");
    // ORCA and PySCF write an ECP atom's charge less its core here: refused, not read as another element.
    if (const int named = element_of_label(w[0]); named != 0 && named != Z)
      in.fail(line, "element " + w[0] + " has charge " + w[2] + ": " + kNoPotentials);
    if (!index_of.emplace(in.integer(line, w[1]), static_cast<int>(mol.atoms.size())).second)
      in.fail(line, "atom number " + w[1] + " appears twice");
    Atom atom;
    atom.Z = static_cast<int>(Z);
    for (int c = 0; c < 3; ++c) atom.r[static_cast<std::size_t>(c)] = scale * in.number(line, w[3 + c]);
    mol.atoms.push_back(atom);
  }
  if (mol.atoms.empty()) in.fail(atoms.header, "[Atoms] lists no atom");
  return mol;
}

// The shells of [GTO], on the atoms [Atoms] numbers; `sp` shells become an s and a p shell.
std::vector<FileShell> read_gto(const MoldenReader& in, const Section& gto, const std::map<long, int>& index_of) {
  std::vector<FileShell> shells;
  int atom = -1;
  const auto& lines = gto.lines;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto w = words(lines[i].text);
    if (to_integer(w[0])) {  // "atom_number 0"
      const auto found = index_of.find(*to_integer(w[0]));
      if (found == index_of.end()) in.fail(lines[i], "[GTO] names atom " + w[0] + ", which [Atoms] does not list");
      atom = found->second;
      continue;
    }
    if (atom < 0) in.fail(lines[i], "a shell before any atom number");
    const std::string label = lowercase(w[0]);
    std::vector<int> ls;
    for (char c : label) {
      const char* letter = std::strchr(kMoldenShellLetters, c);
      if (letter == nullptr) in.fail(lines[i], "unknown shell label '" + w[0] + "' (Molden has s, p, sp, d, f, g)");
      ls.push_back(static_cast<int>(letter - kMoldenShellLetters));
    }
    if (w.size() < 2 || ls.size() > 2 || (ls.size() == 2 && label != "sp")) in.fail(lines[i], "bad shell line");
    const long nprim = in.integer(lines[i], w[1]);
    if (nprim < 1) in.fail(lines[i], "a shell needs at least one primitive");
    if (w.size() > 2 && in.number(lines[i], w[2]) != 1.0) in.fail(lines[i], "scale factors other than 1 are not supported");
    std::vector<FileShell> group(ls.size());
    for (std::size_t s = 0; s < ls.size(); ++s) group[s] = {atom, {ls[s], {}, {}}, false};
    for (long p = 0; p < nprim; ++p) {
      if (++i >= lines.size()) in.fail(lines[i - 1], "[GTO] ends inside a shell");
      const auto prim = words(lines[i].text);
      if (prim.size() != ls.size() + 1) in.fail(lines[i], "expected an exponent and " + std::to_string(ls.size()) + " coefficient(s)");
      for (std::size_t s = 0; s < ls.size(); ++s) {
        group[s].shell.exponents.push_back(in.number(lines[i], prim[0]));
        group[s].shell.coefficients.push_back(in.number(lines[i], prim[s + 1]));
      }
    }
    shells.insert(shells.end(), group.begin(), group.end());
  }
  if (shells.empty()) in.fail(gto.header, "[GTO] holds no shell");
  return shells;
}

struct MoldenOrbital {
  Line header;
  std::optional<double> energy, occupation;
  std::string spin = "Alpha";
  std::vector<std::pair<long, double>> coefficients;  // (1-based function, value)
  std::vector<Line> lines;                            // of the coefficients
};

std::vector<MoldenOrbital> read_mo_blocks(const MoldenReader& in, const Section& mo) {
  std::vector<MoldenOrbital> orbitals;
  for (const Line& line : mo.lines) {
    const auto equals = line.text.find('=');
    if (equals != std::string::npos) {  // "Key= value": a new orbital after coefficients
      if (orbitals.empty() || !orbitals.back().coefficients.empty()) orbitals.push_back({line, {}, {}, "Alpha", {}, {}});
      MoldenOrbital& orbital = orbitals.back();
      const std::string key = lowercase(trim(line.text.substr(0, equals)));
      const std::string value = trim(line.text.substr(equals + 1));
      if (key == "ene") orbital.energy = in.number(line, value);
      if (key == "occup") orbital.occupation = in.number(line, value);
      if (key == "spin") orbital.spin = value;
      continue;
    }
    const auto w = words(line.text);
    if (orbitals.empty() || w.size() != 2) in.fail(line, "expected 'function coefficient' in [MO]");
    orbitals.back().coefficients.emplace_back(in.integer(line, w[0]), in.number(line, w[1]));
    orbitals.back().lines.push_back(line);
  }
  if (orbitals.empty()) in.fail(mo.header, "[MO] holds no orbital");
  return orbitals;
}

// The closed-shell orbitals of [MO] as columns over the nbf functions, each listed once.
FileOrbitals read_mo(const MoldenReader& in, const Section& mo, Eigen::Index nbf) {
  const std::vector<MoldenOrbital> blocks = read_mo_blocks(in, mo);
  const auto nmo = static_cast<Eigen::Index>(blocks.size());
  FileOrbitals out{Eigen::MatrixXd::Zero(nbf, nmo), Eigen::VectorXd(nmo), Eigen::VectorXd(nmo)};
  for (Eigen::Index p = 0; p < nmo; ++p) {
    const MoldenOrbital& orbital = blocks[static_cast<std::size_t>(p)];
    const std::string which = "orbital " + std::to_string(p + 1);
    if (lowercase(orbital.spin) != "alpha")
      in.fail(orbital.header, which + " has Spin= " + orbital.spin +
                                  ": UHF orbitals are not supported yet, only closed-shell RHF ones");
    if (!orbital.energy) in.fail(orbital.header, which + " lacks Ene=");
    out.eps[p] = *orbital.energy;
    out.occupation[p] = orbital.occupation.value_or(0.0);  // all absent: occupied by energy later
    std::vector<bool> seen(static_cast<std::size_t>(nbf), false);
    for (std::size_t k = 0; k < orbital.coefficients.size(); ++k) {
      const auto [function, value] = orbital.coefficients[k];
      if (function < 1 || function > nbf)
        in.fail(orbital.lines[k], "function " + std::to_string(function) + " is outside 1.." + std::to_string(nbf) +
                                      ", the functions of [GTO] with its [5D]/[7F]/[9G] flags");
      if (seen[static_cast<std::size_t>(function - 1)]) in.fail(orbital.lines[k], "function listed twice");
      seen[static_cast<std::size_t>(function - 1)] = true;
      out.C(function - 1, p) = value;
    }
    if (static_cast<Eigen::Index>(orbital.coefficients.size()) != nbf)
      in.fail(orbital.header, which + " lists " + std::to_string(orbital.coefficients.size()) +
                                  " coefficients, but [GTO] with its [5D]/[7F]/[9G] flags gives " +
                                  std::to_string(nbf) + " functions (file truncated?)");
  }
  return out;
}

// Molden's Cartesian orders, from its documentation.
const std::vector<std::array<int, 3>>& molden_cartesian_order(int l) {
  static const auto orders = [] {
    const std::vector<std::vector<std::string>> names = {
        {"xx", "yy", "zz", "xy", "xz", "yz"},
        {"xxx", "yyy", "zzz", "xyy", "xxy", "xxz", "xzz", "yzz", "yyz", "xyz"},
        {"xxxx", "yyyy", "zzzz", "xxxy", "xxxz", "yyyx", "yyyz", "zzzx", "zzzy", "xxyy", "xxzz", "yyzz", "xxyz",
         "yyxz", "zzxy"}};
    std::vector<std::vector<std::array<int, 3>>> powers;
    for (const auto& list : names) {
      powers.emplace_back();
      for (const std::string& name : list)
        powers.back().push_back({static_cast<int>(std::count(name.begin(), name.end(), 'x')),
                                 static_cast<int>(std::count(name.begin(), name.end(), 'y')),
                                 static_cast<int>(std::count(name.begin(), name.end(), 'z'))});
    }
    return powers;
  }();
  return orders[static_cast<std::size_t>(l - 2)];
}

// s; p as x, y, z; spherical d, f, g as m = 0, +1, −1, …, unit-normalised like libint2's; Cartesian
// ones in Molden's order, normalised as `cartesian` says.
ShellMap molden_shell_map(int l, bool pure, CartesianNorm cartesian) {
  ShellMap map;
  if (l < 2) {
    map.index.resize(static_cast<std::size_t>(2 * l + 1));
    std::iota(map.index.begin(), map.index.end(), 0);
  } else if (pure) {
    map.index = plus_minus_order(l);
  } else {
    for (const auto& powers : molden_cartesian_order(l)) {
      map.index.push_back(cartesian_index(powers));
      // A unit-normalised component is libint2's divided by its norm.
      map.factor.push_back(cartesian == CartesianNorm::unit ? 1.0 / cartesian_norm(powers) : 1.0);
    }
  }
  map.factor.resize(map.index.size(), 1.0);
  return map;
}

// One spin block of [MO]: each orbital's energy, spin, occupation and coefficients.
void write_mo_block(std::ostream& out, const Eigen::MatrixXd& C, const Eigen::VectorXd& eps,
                    const Eigen::VectorXd& occupation, const char* spin) {
  char text[128];
  for (Eigen::Index p = 0; p < C.cols(); ++p) {
    std::snprintf(text, sizeof text, " Sym= A\n Ene= %.17e\n Spin= %s\n Occup= %.1f\n", eps[p], spin, occupation[p]);
    out << text;
    for (Eigen::Index mu = 0; mu < C.rows(); ++mu) {
      std::snprintf(text, sizeof text, " %5td %24.17e\n", mu + 1, C(mu, p));
      out << text;
    }
  }
}

// [Core] "atom : electrons" for the atoms whose core an effective core potential replaces, as
// Molden2AIM defines it and PySCF writes and reads it; [Atoms] keeps their atomic numbers.
void write_core_electrons(std::ostream& out, const Molecule& mol) {
  if (std::none_of(mol.atoms.begin(), mol.atoms.end(), [](const Atom& atom) { return atom.ecp_electrons > 0; })) return;
  out << "[Core]\n";
  for (std::size_t a = 0; a < mol.atoms.size(); ++a)
    if (mol.atoms[a].ecp_electrons > 0) out << " " << a + 1 << " : " << mol.atoms[a].ecp_electrons << "\n";
}

std::string title_of(const std::vector<Section>& sections) {
  for (const Section& s : sections)
    if (s.name == "title" && !s.lines.empty()) return trim(s.lines.front().text);
  return "";
}

}  // namespace

bool is_molden(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!trim(line).empty()) return lowercase(trim(line)) == "[molden format]";
  return false;
}

RunInput read_molden(const std::string& path) {
  const MoldenReader in(path);
  const std::vector<Section> sections = read_sections(in);
  std::map<std::string, const Section*> by_name;
  for (const Section& s : sections) {
    if (s.name == "sto") in.fail(s.header, "Slater-type orbitals ([STO]) are not supported");
    if (s.name == "pseudo" || s.name == "core" || s.name == "nval")
      in.fail(s.header, "[" + s.name + "] gives an atom " + kNoPotentials);
    by_name.emplace(s.name, &s);
  }
  for (const char* needed : {"Atoms", "GTO", "MO"})
    if (!by_name.count(lowercase(needed))) in.fail(std::string("no [") + needed + "] section");

  OrbitalFileData file;
  file.path = path;
  std::map<long, int> atom_index;
  file.molecule = read_atoms(in, *by_name["atoms"], atom_index);
  file.molecule.name = title_of(sections);
  file.shells = read_gto(in, *by_name["gto"], atom_index);
  const auto pure = spherical_flags(sections);
  file.pure = pure[2];
  bool cartesian_dfg = false;
  for (FileShell& s : file.shells) {
    s.pure = s.shell.l >= 2 && pure[static_cast<std::size_t>(s.shell.l)];
    cartesian_dfg = cartesian_dfg || (s.shell.l >= 2 && !s.pure);
  }
  OrbitalBasis basis = file_basis(file);
  file.orbitals = read_mo(in, *by_name["mo"], static_cast<Eigen::Index>(basis.shells.nbf()));
  const double electrons = file.orbitals.occupation.sum();
  int nuclear_charge = 0;
  for (const Atom& atom : file.molecule.atoms) nuclear_charge += atom.Z;
  // Without occupations the charge is the run's to give (occupy_by_energy).
  if (electrons != 0.0) file.molecule.charge = nuclear_charge - static_cast<int>(std::lround(electrons));

  // Molden's Cartesian functions are unit-normalised; Psi4 1.3 writes them normalised like x^l.
  std::vector<std::size_t> order(basis.shells.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::vector<FunctionMap> readings;
  for (CartesianNorm norm : {CartesianNorm::unit, CartesianNorm::like_xl}) {
    if (norm == CartesianNorm::like_xl && !cartesian_dfg) break;
    readings.push_back(function_map(basis.shells, order, [&](std::size_t s) {
      const auto& contraction = basis.shells[s].contr[0];
      return molden_shell_map(contraction.l, contraction.pure, norm);
    }));
  }
  return orbitals_input(file, std::move(basis), readings);
}

void write_molden(const std::string& path, const RunResult& r) {
  if (!r.geometry || !r.orbitals || !r.orbital_basis) throw std::runtime_error("the run has no orbitals to write");
  const Molecule& mol = *r.geometry;
  const OrbitalBasis& basis = *r.orbital_basis;
  const Orbitals& orbitals = *r.orbitals;
  for (const libint2::Shell& shell : basis.shells.shells())
    if (shell.contr[0].l > kMaxMoldenL)
      throw std::runtime_error(std::string("Molden files hold shells up to g; the basis has ") +
                               libint2::Shell::am_symbol(static_cast<std::size_t>(shell.contr[0].l)) + " functions");
  const ShellsByAtom grouped = shells_by_atom(basis.shells, mol);
  std::ostringstream out;
  char text[128];
  out << "[Molden Format]\n[Title]\n " << r.molecule << "\n[Atoms] AU\n";
  for (std::size_t a = 0; a < mol.atoms.size(); ++a) {
    const Atom& atom = mol.atoms[a];
    std::snprintf(text, sizeof text, "%-3s %4zu %4d %24.16f %24.16f %24.16f\n", element_symbol(atom.Z).c_str(), a + 1,
                  atom.Z, atom.r[0], atom.r[1], atom.r[2]);
    out << text;
  }
  out << "[GTO]\n";
  for (std::size_t k = 0; k < grouped.order.size(); ++k) {
    if (k == 0 || grouped.atom[k] != grouped.atom[k - 1]) out << (k == 0 ? "" : "\n") << "  " << grouped.atom[k] + 1 << " 0\n";
    const libint2::Shell& shell = basis.shells[grouped.order[k]];
    out << " " << libint2::Shell::am_symbol(static_cast<std::size_t>(shell.contr[0].l)) << " " << shell.nprim() << " 1.00\n";
    for (std::size_t p = 0; p < shell.nprim(); ++p) {
      std::snprintf(text, sizeof text, " %24.16e %24.16e\n", shell.alpha[p], shell.coeff_normalized(0, p));
      out << text;
    }
  }
  out << "\n";
  const bool d = shells_pure(basis, 2), f = shells_pure(basis, 3);
  if (d || f) out << (d && f ? "[5D7F]\n" : d ? "[5D10F]\n" : "[7F]\n");
  if (shells_pure(basis, 4)) out << "[9G]\n";
  write_core_electrons(out, mol);

  const FunctionMap map = function_map(basis.shells, grouped.order, [&](std::size_t s) {
    const auto& contraction = basis.shells[s].contr[0];
    return molden_shell_map(contraction.l, contraction.pure, CartesianNorm::unit);
  });
  out << "[MO]\n";
  write_mo_block(out, from_libint2(orbitals.C, map), orbitals.eps, closed_shell_occupations(orbitals), "Alpha");
  std::ofstream file(path);
  file << out.str();
  file.close();
  if (!file) throw std::runtime_error("cannot write the Molden file");
}

}  // namespace dfmp2
