#include "src/io/xyz.hpp"

#include <array>
#include <fstream>
#include <sstream>

#include "src/common/errors.hpp"
#include "src/common/text.hpp"

namespace dfmp2 {
namespace {

// "O", or a ghost atom as Psi4 writes one: "@O" or "Gh(O)" (any case).
Atom atom_from_symbol(const std::string& symbol) {
  Atom atom;
  std::string element = symbol;
  if (element.size() > 1 && element[0] == '@') {
    atom.ghost = true;
    element.erase(0, 1);
  } else if (element.size() > 4 && lowercase(element.substr(0, 3)) == "gh(" && element.back() == ')') {
    atom.ghost = true;
    element = element.substr(3, element.size() - 4);
  }
  atom.Z = atomic_number(element);
  return atom;
}

}  // namespace

Molecule read_xyz(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open XYZ file '" + path + "'");
  const std::string where = "XYZ file '" + path + "'";
  std::string line;
  if (!std::getline(in, line)) throw InputError(where + " is empty");
  std::istringstream count_line(line);
  long natom = -1;
  std::string rest;
  if (!(count_line >> natom) || (count_line >> rest) || natom < 1)
    throw InputError(where + ": line 1 must hold the atom count, got '" + line + "'");
  Molecule mol;
  if (!std::getline(in, line)) throw InputError(where + ": missing comment line 2");
  mol.name = line;
  mol.name.erase(0, mol.name.find_first_not_of(" \t\r"));
  mol.name.erase(mol.name.find_last_not_of(" \t\r") + 1);
  for (long k = 0; k < natom; ++k) {
    if (!std::getline(in, line))
      throw InputError(where + ": expected " + std::to_string(natom) + " atoms, found " +
                       std::to_string(k));
    std::istringstream fields(line);
    std::string symbol, x, y, z;
    if (!(fields >> symbol >> x >> y >> z))
      throw InputError(where + ": line " + std::to_string(k + 3) + " is not 'El x y z': '" +
                       line + "'");
    Atom atom = atom_from_symbol(symbol);
    const std::array<std::string, 3> xyz = {x, y, z};
    for (int c = 0; c < 3; ++c) {
      std::size_t used = 0;
      double value = 0.0;
      try {
        value = std::stod(xyz[c], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != xyz[c].size())
        throw InputError(where + ": line " + std::to_string(k + 3) + ": bad coordinate '" +
                         xyz[c] + "'");
      atom.r[c] = value * kBohrPerAngstrom;
    }
    mol.atoms.push_back(atom);
  }
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      throw InputError(where + ": more lines than the " + std::to_string(natom) +
                       " atoms announced on line 1");
  return mol;
}

}  // namespace dfmp2
