#include "src/molecule/basis.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <set>
#include <stdexcept>
#include <utility>

#include <libecpint/config.hpp>
#include <libint2/util/generated/libint2_params.h>

#include "src/common/errors.hpp"
#include "src/common/text.hpp"

#ifndef DFMP2_BASIS_DIR
#error "DFMP2_BASIS_DIR must name the directory of the shipped basis sets"
#endif

namespace dfmp2 {
namespace {

namespace fs = std::filesystem;

// Psi4's file names: "6-31+G*" → "6-31pgs", "cc-pVDZ" → "cc-pvdz".
std::string file_stem(const std::string& name) {
  std::string stem;
  for (char c : lowercase(name)) {
    if (c == '*') stem += 's';
    else if (c == '+') stem += 'p';
    else if (c == '(' || c == ')' || c == ',') stem += '_';
    else stem += c;
  }
  return stem;
}

// An installed executable (cmake --install, or the pip package's dfmp2/bin/dfmp2) reads the sets
// installed beside it, in ../share/dfmp2/basis; a build tree's reads the source tree's.
std::string basis_dir() {
  if (const char* env = std::getenv("DFMP2_BASIS_PATH"); env && *env) return env;
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    const fs::path installed = executable.parent_path().parent_path() / "share" / "dfmp2" / "basis";
    if (fs::is_directory(installed, error)) return installed.string();
  }
  return DFMP2_BASIS_DIR;
}

// The highest angular momentum the installed libint2 computes in each role. An orbital set enters
// the one-electron integrals, the four-centre Coulomb integrals (Schwarz bounds, exact SCF,
// atomic guess) and the two orbital centres of the three-centre ones; an auxiliary set the
// two-centre metric and the fitting centre of the three-centre integrals.
#if LIBINT2_CENTER_DEPENDENT_MAX_AM_3eri
constexpr int kThreeCentreOrbitalMaxL = LIBINT2_MAX_AM_default;
#else
constexpr int kThreeCentreOrbitalMaxL = LIBINT2_MAX_AM_3eri;
#endif
constexpr int kOrbitalMaxL = std::min({LIBINT2_MAX_AM_overlap, LIBINT2_MAX_AM_kinetic,
                                       LIBINT2_MAX_AM_elecpot, LIBINT2_MAX_AM_eri,
                                       kThreeCentreOrbitalMaxL});
constexpr int kAuxiliaryMaxL = std::min(LIBINT2_MAX_AM_2eri, LIBINT2_MAX_AM_3eri);

const std::string kShellLetters = "spdfghik";

// The highest channel of a potential libecpint integrates.
constexpr int kMaxEcpL = LIBECPINT_MAX_L;

// Published basis sets keep their exponents within 1e-5..1e10; far beyond that, past about
// 1e±50 here, libint2's double arithmetic overflows into NaN integrals.
constexpr double kMinExponent = 1e-20, kMaxExponent = 1e20;

int angular_momentum(char letter) {
  const auto pos = kShellLetters.find(static_cast<char>(std::tolower(letter)));
  return pos == std::string::npos ? -1 : static_cast<int>(pos);
}

// A whole token as a number, Fortran's "1.0D+01" included; nullopt when it is not one.
std::optional<double> parse_number(std::string token) {
  std::replace(token.begin(), token.end(), 'D', 'E');
  std::replace(token.begin(), token.end(), 'd', 'e');
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(token.c_str(), &end);
  if (token.empty() || end != token.c_str() + token.size() || errno == ERANGE) return std::nullopt;
  return value;
}

// A primitive count: decimal digits only, so "3.7" or "3e0" is not taken for 3.
std::optional<int> parse_count(const std::string& token) {
  int value = 0;
  const char* end = token.data() + token.size();
  const auto [stop, error] = std::from_chars(token.data(), end, value);
  if (error != std::errc() || stop != end || value < 1) return std::nullopt;
  return value;
}

// A non-negative whole number (ECP header counts, powers of r).
std::optional<int> parse_whole(const std::string& token) {
  if (token == "0") return 0;
  return parse_count(token);
}

double largest_magnitude(const std::vector<double>& values) {
  double largest = 0.0;
  for (double v : values) largest = std::max(largest, std::abs(v));
  return largest;
}

// ⟨φ|φ⟩ of a contraction over normalized primitives, next to the same sum taken in absolute
// values: a norm that vanishes beside its parts means the coefficients are zero or cancel.
// Written so that no exponent or coefficient a double holds overflows it.
bool contraction_vanishes(const ContractedShell& shell) {
  const double largest = largest_magnitude(shell.coefficients);
  if (largest == 0.0) return true;
  double norm = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < shell.exponents.size(); ++i)
    for (std::size_t j = 0; j < shell.exponents.size(); ++j) {
      const double a = shell.exponents[i], b = shell.exponents[j];
      // ⟨g_a|g_b⟩ = (2√(ab)/(a+b))^(l+3/2)
      const double overlap = std::pow(2.0 / (std::sqrt(a / b) + std::sqrt(b / a)), shell.l + 1.5);
      const double term =
          shell.coefficients[i] / largest * (shell.coefficients[j] / largest) * overlap;
      norm += term;
      scale += std::abs(term);
    }
  return !(norm > 1e-10 * scale);
}

// Psi4's G94 dialect, a line at a time: a "spherical"/"cartesian" header, element blocks
// ("H 0", shells, "****"), then optional effective core potentials ("I 0", "I-ECP 3 28",
// channels). Every error names the file and line.
class GbsReader {
 public:
  GbsReader(const std::string& text, const std::string& name, const std::string& path, BasisRole role)
      : in_(text), role_(role) {
    basis_.name = name;
    basis_.path = path;
  }

  BasisSetData read() {
    std::string line;
    while (next_data_line(line)) {
      std::istringstream fields(line);
      std::string word;
      fields >> word;
      if (read_keyword(word, line)) continue;
      if (current_Z_ == 0) {
        start_element(word);
        continue;
      }
      auto& list = basis_.shells_by_Z[current_Z_];
      const std::vector<ContractedShell> shells = read_shell(word, fields, line);
      list.insert(list.end(), shells.begin(), shells.end());
    }
    if (!header_seen_) fail("missing 'spherical' or 'cartesian' header");
    if (basis_.shells_by_Z.empty()) fail("no elements defined");
    for (const auto& [Z, line] : ecp_line_)
      if (!basis_.shells_by_Z.count(Z)) {
        line_no_ = line;
        fail("the effective core potential of " + element_symbol(Z) + " is for an element the file has no functions for");
      }
    return std::move(basis_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw InputError("basis '" + basis_.name + "' (" + basis_.path + "), line " + std::to_string(line_no_) + ": " +
                     why);
  }

  // The next line that is neither blank nor a '!' comment (or the one handed back).
  bool next_data_line(std::string& out) {
    if (pushed_back_) {
      out = *std::exchange(pushed_back_, std::nullopt);
      line_no_ = pushed_back_line_;
      return true;
    }
    while (std::getline(in_, out)) {
      ++line_no_;
      const auto first = out.find_first_not_of(" \t\r");
      if (first != std::string::npos && out[first] != '!') return true;
    }
    return false;
  }

  void push_back(const std::string& line) {
    pushed_back_ = line;
    pushed_back_line_ = line_no_;
  }

  // The header, an element's end ("****") or an ECP block: true when `word` was one.
  bool read_keyword(const std::string& word, const std::string& line) {
    const std::string lower = lowercase(word);
    if (!header_seen_ && (lower == "spherical" || lower == "cartesian")) {
      basis_.pure = lower == "spherical";
      header_seen_ = true;
      return true;
    }
    if (word.find_first_not_of('*') == std::string::npos) {
      if (word == "****") current_Z_ = 0;
      return true;
    }
    if (is_ecp_header(word)) {
      read_ecp(line, 0);
      return true;
    }
    return false;
  }

  static bool is_ecp_header(const std::string& word) {
    const std::string lower = lowercase(word);
    const auto ecp = lower.rfind("-ecp");
    return ecp != std::string::npos && ecp > 0 && ecp + 4 == lower.size();
  }

  // An element header, "H 0": the start of its functions, or of its potential when an "H-ECP"
  // line follows (Psi4's files name the element again before each potential).
  void start_element(const std::string& word) {
    int Z = 0;
    try {
      Z = atomic_number(word);
    } catch (const InputError&) {
      fail("expected an element symbol, got '" + word + "'");
    }
    const int element_line = line_no_;
    if (std::string next; next_data_line(next)) {
      std::istringstream fields(next);
      std::string first;
      fields >> first;
      if (is_ecp_header(first)) return read_ecp(next, Z);
      push_back(next);
    }
    line_no_ = element_line;
    // A second block would silently add its functions to the first.
    if (const auto [first, added] = element_line_.emplace(Z, line_no_); !added)
      fail("element " + element_symbol(Z) + " is given twice (first on line " + std::to_string(first->second) + ")");
    current_Z_ = Z;
    basis_.shells_by_Z[current_Z_];
  }

  // A shell header ("S 3 1.00", "SP 3 1.00": type, primitive count, scale) and its primitives:
  // one contracted shell per letter.
  std::vector<ContractedShell> read_shell(const std::string& word, std::istringstream& fields,
                                          const std::string& line) {
    std::string count_text, scale_text, extra;
    fields >> count_text >> scale_text >> extra;
    const std::optional<int> nprim = parse_count(count_text);
    std::vector<ContractedShell> shells;
    for (char c : word) shells.push_back({angular_momentum(c), {}, {}});
    if (scale_text.empty() || !extra.empty() ||
        std::any_of(shells.begin(), shells.end(), [](const ContractedShell& s) { return s.l < 0; }))
      fail("bad shell header '" + line + "' (expected e.g. 'S 3 1.00': shell type, primitive count, scale factor)");
    if (!nprim) fail("the primitive count '" + count_text + "' is not a positive whole number");
    // Psi4 and Gaussian read the scale factor differently (contraction or exponents): only the
    // value both agree on is accepted.
    if (parse_number(scale_text) != 1.0) fail("scale factor '" + scale_text + "' is not supported, only 1.00");
    for (const ContractedShell& shell : shells) check_angular_momentum(shell.l);
    const int header_line = line_no_;
    for (int p = 0; p < *nprim; ++p) {
      const std::vector<double> values = read_primitive(shells.size() + 1);
      for (std::size_t s = 0; s < shells.size(); ++s) {
        shells[s].exponents.push_back(values[0]);
        shells[s].coefficients.push_back(values[s + 1]);
      }
    }
    for (const ContractedShell& shell : shells)
      if (contraction_vanishes(shell)) {
        line_no_ = header_line;  // the message points at the shell, not its last primitive
        fail("the contracted function is zero: its coefficients are all zero or cancel out");
      }
    return shells;
  }

  // "I-ECP 3 28" (element, lmax, core electrons), then lmax + 1 channels, the local one (l =
  // lmax) first: "f-ul potential", its term count, and per term "power exponent coefficient".
  // `named_Z` is the element of the "I 0" line before it, 0 without one.
  void read_ecp(const std::string& line, int named_Z) {
    std::istringstream fields(line);
    std::string word, lmax_text, core_text, extra;
    fields >> word >> lmax_text >> core_text >> extra;
    int Z = 0;
    try {
      Z = atomic_number(word.substr(0, word.size() - 4));
    } catch (const InputError&) {
      fail("bad ECP header '" + line + "' (expected e.g. 'I-ECP 3 28': element, highest l, core electrons)");
    }
    const std::optional<int> lmax = parse_whole(lmax_text), core = parse_whole(core_text);
    if (!lmax || !core || !extra.empty())
      fail("bad ECP header '" + line + "' (expected e.g. 'I-ECP 3 28': element, highest l, core electrons)");
    if (named_Z != 0 && named_Z != Z)
      fail("the ECP header '" + line + "' follows the element line of " + element_symbol(named_Z));
    if (const auto [first, added] = ecp_line_.emplace(Z, line_no_); !added)
      fail("the effective core potential of " + element_symbol(Z) + " is given twice (first on line " +
           std::to_string(first->second) + ")");
    if (*lmax > kMaxEcpL) fail("ECP highest angular momentum " + lmax_text + " is above " + std::to_string(kMaxEcpL) + ", the most libecpint computes");
    if (*core <= 0 || *core >= Z || *core % 2 != 0)
      fail("ECP core electrons '" + core_text + "' must be an even number between 2 and " + std::to_string(Z - 1) +
           " for " + element_symbol(Z));
    ElementEcp ecp{*core, *lmax, {}};
    std::set<int> channels;
    for (int channel = 0; channel <= *lmax; ++channel) read_ecp_channel(ecp, channel == 0, channels);
    basis_.ecp_by_Z[Z] = std::move(ecp);
    current_Z_ = 0;
  }

  // One channel: "d-ul potential" (or "d potential", "d-f potential"), its term count, its terms.
  void read_ecp_channel(ElementEcp& ecp, bool local, std::set<int>& channels) {
    std::string line, count_line;
    if (!next_data_line(line)) fail("file ends inside an effective core potential (expected " + std::to_string(ecp.lmax + 1) + " channels)");
    std::istringstream fields(line);
    std::string label, potential;
    fields >> label >> potential;
    const int l = label.empty() ? -1 : angular_momentum(label[0]);
    // "d", "d-ul" or "d-f" (d less the local f channel): the letter is the channel.
    const std::string rest = lowercase(label.substr(std::min<std::size_t>(1, label.size())));
    if (lowercase(potential) != "potential" || l < 0 ||
        !(rest.empty() || rest == "-ul" || rest == std::string("-") + kShellLetters[static_cast<std::size_t>(ecp.lmax)]))
      fail("expected an ECP channel such as 'd-ul potential', got '" + line + "'");
    if (local && l != ecp.lmax)
      fail("the first ECP channel must be the local one, l = " + std::to_string(ecp.lmax) + ": '" + line + "'");
    if (l > ecp.lmax) fail("ECP channel '" + line + "' is above the header's highest l " + std::to_string(ecp.lmax));
    if (!channels.insert(l).second) fail("ECP channel '" + line + "' is given twice");
    if (!next_data_line(count_line)) fail("file ends inside an effective core potential");
    std::istringstream count_fields(count_line);
    std::string count_text, extra;
    count_fields >> count_text >> extra;
    const std::optional<int> count = parse_count(count_text);
    if (!count || !extra.empty()) fail("the ECP term count '" + count_line + "' is not a positive whole number");
    for (int t = 0; t < *count; ++t) ecp.terms.push_back(read_ecp_term(l));
  }

  // "2  3.84  -12.3": the power of r (r^(power−2)), exponent, coefficient.
  EcpTerm read_ecp_term(int l) {
    std::string line;
    if (!next_data_line(line)) fail("file ends inside an effective core potential");
    std::istringstream fields(line);
    std::string power_text, exponent_text, coefficient_text, extra;
    fields >> power_text >> exponent_text >> coefficient_text >> extra;
    const std::optional<int> power = parse_whole(power_text);
    const std::optional<double> exponent = parse_number(exponent_text), coefficient = parse_number(coefficient_text);
    if (!power || !exponent || !coefficient || !extra.empty())
      fail("expected an ECP term 'power exponent coefficient': '" + line + "'");
    if (*power > 2) fail("ECP power " + power_text + " is not 0, 1 or 2 (r^-2, r^-1, r^0): '" + line + "'");
    if (!(*exponent >= kMinExponent && *exponent <= kMaxExponent) || !std::isfinite(*coefficient))
      fail("ECP exponent must be a finite number between 1e-20 and 1e+20 and its coefficient finite: '" + line + "'");
    return {l, *power, *exponent, *coefficient};
  }

  void check_angular_momentum(int l) const {
    const int limit = max_angular_momentum(role_);
    if (l > limit)
      fail("angular momentum " + std::to_string(l) + " (" + static_cast<char>(std::toupper(kShellLetters[l])) +
           " shell) is above " + std::to_string(limit) + ", the most libint2 computes for " +
           (role_ == BasisRole::orbital ? "an orbital" : "an auxiliary") + " basis");
  }

  // One primitive line: its exponent and one coefficient per shell letter.
  std::vector<double> read_primitive(std::size_t count) {
    std::string line;
    if (!next_data_line(line)) fail("file ends inside a shell");
    std::istringstream prim(line);
    std::string token;
    std::vector<double> values;
    while (prim >> token) {
      const std::optional<double> value = parse_number(token);
      if (!value) fail("bad number '" + token + "' in '" + line + "'");
      values.push_back(*value);
    }
    if (values.size() != count) fail("expected exponent and coefficients: '" + line + "'");
    // libint2 takes these as given: a NaN or non-positive exponent crashes or reads out of
    // bounds inside it.
    if (!(values[0] >= kMinExponent && values[0] <= kMaxExponent)) {
      std::ostringstream why;
      why << "the exponent must be a finite number between " << kMinExponent << " and " << kMaxExponent << ": '"
          << line << "'";
      fail(why.str());
    }
    if (!std::all_of(values.begin() + 1, values.end(), [](double c) { return std::isfinite(c); }))
      fail("a contraction coefficient is not finite: '" + line + "'");
    return values;
  }

  std::istringstream in_;
  BasisRole role_;
  BasisSetData basis_;
  int line_no_ = 0;
  int current_Z_ = 0;  // the element whose block is open, 0 between blocks
  bool header_seen_ = false;
  std::map<int, int> element_line_;  // where each element's block starts
  std::map<int, int> ecp_line_;      // where each element's potential starts
  std::optional<std::string> pushed_back_;  // a line read ahead, handed back
  int pushed_back_line_ = 0;
};

// s and p functions are the same in both conventions; libint2 wants them flagged Cartesian.
bool spherical(const ContractedShell& shell, bool pure) { return pure && shell.l >= 2; }

}  // namespace

int max_angular_momentum(BasisRole role) {
  return role == BasisRole::orbital ? kOrbitalMaxL : kAuxiliaryMaxL;
}

int max_ecp_angular_momentum() { return kMaxEcpL; }

BasisSetData parse_gbs(const std::string& text, const std::string& name, const std::string& path,
                       BasisRole role) {
  return GbsReader(text, name, path, role).read();
}

BasisSetData load_basis(const std::string& name_or_path, BasisRole role) {
  fs::path path = name_or_path;
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || path.extension() == ".gbs";
  if (!looks_like_path) path = fs::path(basis_dir()) / (file_stem(name_or_path) + ".gbs");
  std::ifstream in(path);
  if (!in) {
    if (looks_like_path) throw InputError("cannot open basis file '" + path.string() + "'");
    throw InputError("unknown basis set '" + name_or_path + "' (no " + path.string() + ")");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse_gbs(text.str(), name_or_path, path.string(), role);
}

std::string default_df_basis(const std::string& orbital_basis) {
  const std::string stem = file_stem(orbital_basis);
  if (stem == "sto-3g") return "def2-svp-ri";
  if (stem.rfind("6-31", 0) == 0) return "cc-pvdz-ri";
  return stem + "-ri";
}

std::string default_jk_basis(const std::string& orbital_basis) {
  const std::string stem = file_stem(orbital_basis);
  if (stem == "sto-3g") return "def2-svp-jkfit";
  if (stem.rfind("6-31", 0) == 0) return "cc-pvdz-jkfit";
  return stem + "-jkfit";
}

void require_elements(const BasisSetData& basis, const Molecule& mol) {
  std::set<int> checked;
  for (const Atom& atom : mol.atoms) {
    if (!checked.insert(atom.Z).second) continue;  // each element once
    if (!basis.shells_by_Z.count(atom.Z))
      throw InputError("basis '" + basis.name + "' has no functions for element " + element_symbol(atom.Z));
  }
}

void assign_ecp_cores(const BasisSetData& basis, Molecule& mol) {
  for (Atom& atom : mol.atoms) {
    const auto ecp = basis.ecp_by_Z.find(atom.Z);
    atom.ecp_electrons = atom.ghost || ecp == basis.ecp_by_Z.end() ? 0 : ecp->second.core_electrons;
  }
}

BasisCount count_on(const BasisSetData& basis, const Molecule& mol, std::optional<bool> pure) {
  require_elements(basis, mol);
  std::map<int, BasisCount> per_element;
  for (const auto& [Z, shells] : basis.shells_by_Z)
    for (const ContractedShell& shell : shells) {
      ++per_element[Z].shells;
      const auto l = static_cast<std::size_t>(shell.l);
      per_element[Z].functions += spherical(shell, pure.value_or(basis.pure)) ? 2 * l + 1 : (l + 1) * (l + 2) / 2;
    }
  BasisCount count;
  for (const Atom& atom : mol.atoms) {
    count.shells += per_element[atom.Z].shells;
    count.functions += per_element[atom.Z].functions;
  }
  return count;
}

libint2::BasisSet place_on(const BasisSetData& basis, const Molecule& mol, std::optional<bool> pure) {
  require_elements(basis, mol);
  const bool use_pure = pure.value_or(basis.pure);
  std::vector<libint2::Shell> shells;
  for (const Atom& atom : mol.atoms)
    for (const ContractedShell& cs : basis.shells_by_Z.at(atom.Z)) shells.push_back(make_shell(cs, use_pure, atom.r));
  return libint2::BasisSet(std::move(shells));
}

std::vector<std::size_t> shell_atoms(const libint2::BasisSet& basis, const Molecule& mol) {
  std::vector<std::size_t> atoms;
  for (const libint2::Shell& shell : basis) {
    const auto on = std::find_if(mol.atoms.begin(), mol.atoms.end(), [&](const Atom& atom) { return atom.r == shell.O; });
    if (on == mol.atoms.end()) throw std::runtime_error("a basis shell sits on no atom of the molecule");
    atoms.push_back(static_cast<std::size_t>(on - mol.atoms.begin()));
  }
  return atoms;
}

libint2::Shell make_shell(const ContractedShell& shell, bool pure, const std::array<double, 3>& origin) {
  libint2::svector<double> alpha(shell.exponents.begin(), shell.exponents.end());
  // Normalization removes any common factor of the coefficients; dividing it out first keeps
  // libint2's sums of their products (1e300² in a valid file) from overflowing.
  const double largest = largest_magnitude(shell.coefficients);
  libint2::svector<double> coeff;
  for (double c : shell.coefficients) coeff.push_back(c / largest);
  return libint2::Shell(std::move(alpha),
                        libint2::svector<libint2::Shell::Contraction>{{shell.l, spherical(shell, pure), coeff}}, origin);
}

}  // namespace dfmp2
