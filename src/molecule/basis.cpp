#include "src/molecule/basis.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/common/errors.hpp"

#ifndef DFMP2_BASIS_DIR
#error "DFMP2_BASIS_DIR must name the directory of the shipped basis sets"
#endif

namespace dfmp2 {
namespace {

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

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

std::string basis_dir() {
  if (const char* env = std::getenv("DFMP2_BASIS_PATH"); env && *env) return env;
  return DFMP2_BASIS_DIR;
}

int angular_momentum(char letter) {
  static const std::string kLetters = "spdfghik";
  const auto pos = kLetters.find(static_cast<char>(std::tolower(letter)));
  return pos == std::string::npos ? -1 : static_cast<int>(pos);
}

double parse_number(std::string token) {
  std::replace(token.begin(), token.end(), 'D', 'E');
  std::replace(token.begin(), token.end(), 'd', 'e');
  std::size_t used = 0;
  const double value = std::stod(token, &used);
  if (used != token.size()) throw std::invalid_argument(token);
  return value;
}

}  // namespace

BasisSetData parse_gbs(const std::string& text, const std::string& name, const std::string& path) {
  BasisSetData basis;
  basis.name = name;
  basis.path = path;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  int current_Z = 0;
  bool header_seen = false;
  bool in_ecp_section = false;
  auto fail = [&](const std::string& why) {
    throw InputError("basis '" + name + "' (" + path + "), line " + std::to_string(line_no) +
                     ": " + why);
  };
  auto next_data_line = [&](std::string& out) {
    while (std::getline(in, out)) {
      ++line_no;
      const auto first = out.find_first_not_of(" \t\r");
      if (first != std::string::npos && out[first] != '!') return true;
    }
    return false;
  };
  while (next_data_line(line)) {
    std::istringstream fields(line);
    std::string word;
    fields >> word;
    const std::string lower = lowercase(word);
    if (!header_seen && (lower == "spherical" || lower == "cartesian")) {
      basis.pure = lower == "spherical";
      header_seen = true;
      continue;
    }
    if (word.find_first_not_of('*') == std::string::npos) {  // "****" ends an element
      if (word == "****") current_Z = 0;
      continue;
    }
    if (const auto ecp = lower.rfind("-ecp"); ecp != std::string::npos && ecp + 4 == lower.size()) {
      // Effective core potentials come last in the file: note which elements have one.
      try {
        basis.ecp_elements.insert(atomic_number(word.substr(0, ecp)));
      } catch (const InputError&) {
        fail("bad ECP header '" + line + "'");
      }
      in_ecp_section = true;
      continue;
    }
    if (in_ecp_section) continue;
    if (current_Z == 0) {  // element header: "H 0"
      try {
        current_Z = atomic_number(word);
      } catch (const InputError&) {
        fail("expected an element symbol, got '" + word + "'");
      }
      basis.shells_by_Z[current_Z];
      continue;
    }
    // shell header: "S 3 1.00" or "SP 3 1.00"
    std::string nprim_text;
    fields >> nprim_text;
    int nprim = 0;
    try {
      nprim = static_cast<int>(parse_number(nprim_text));
    } catch (const std::exception&) {
      fail("bad shell header '" + line + "'");
    }
    std::vector<int> ls;
    for (char c : word) ls.push_back(angular_momentum(c));
    if (ls.empty() || nprim < 1 || std::count(ls.begin(), ls.end(), -1) > 0)
      fail("bad shell header '" + line + "'");
    std::vector<ContractedShell> shells(ls.size());
    for (std::size_t s = 0; s < ls.size(); ++s) shells[s].l = ls[s];
    for (int p = 0; p < nprim; ++p) {
      if (!next_data_line(line)) fail("file ends inside a shell");
      std::istringstream prim(line);
      std::string token;
      std::vector<double> values;
      try {
        while (prim >> token) values.push_back(parse_number(token));
      } catch (const std::exception&) {
        fail("bad number in '" + line + "'");
      }
      if (values.size() != ls.size() + 1) fail("expected exponent and coefficients: '" + line + "'");
      for (std::size_t s = 0; s < ls.size(); ++s) {
        shells[s].exponents.push_back(values[0]);
        shells[s].coefficients.push_back(values[s + 1]);
      }
    }
    auto& list = basis.shells_by_Z[current_Z];
    list.insert(list.end(), shells.begin(), shells.end());
  }
  if (!header_seen) fail("missing 'spherical' or 'cartesian' header");
  if (basis.shells_by_Z.empty()) fail("no elements defined");
  return basis;
}

BasisSetData load_basis(const std::string& name_or_path) {
  namespace fs = std::filesystem;
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
  return parse_gbs(text.str(), name_or_path, path.string());
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

libint2::BasisSet place_on(const BasisSetData& basis, const Molecule& mol, std::optional<bool> pure) {
  const bool spherical = pure.value_or(basis.pure);
  std::vector<libint2::Shell> shells;
  for (const Atom& atom : mol.atoms) {
    if (basis.ecp_elements.count(atom.Z))
      throw InputError("basis '" + basis.name + "' uses an effective core potential for " +
                       element_symbol(atom.Z) + ", which dfmp2 does not support");
    const auto found = basis.shells_by_Z.find(atom.Z);
    if (found == basis.shells_by_Z.end())
      throw InputError("basis '" + basis.name + "' has no functions for element " +
                       element_symbol(atom.Z));
    for (const ContractedShell& cs : found->second) shells.push_back(make_shell(cs, spherical, atom.r));
  }
  return libint2::BasisSet(std::move(shells));
}

libint2::Shell make_shell(const ContractedShell& shell, bool pure, const std::array<double, 3>& origin) {
  libint2::svector<double> alpha(shell.exponents.begin(), shell.exponents.end());
  libint2::svector<double> coeff(shell.coefficients.begin(), shell.coefficients.end());
  // s and p functions are the same in both conventions; libint2 wants them flagged Cartesian.
  return libint2::Shell(std::move(alpha),
                        libint2::svector<libint2::Shell::Contraction>{{shell.l, pure && shell.l >= 2, coeff}}, origin);
}

}  // namespace dfmp2
