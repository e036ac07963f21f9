// XYZ files: the atom count, a comment line (the molecule's name), then "El x y z" in Ångström;
// a ghost atom's element written "@El" or "Gh(El)", as Psi4 writes them.
#pragma once

#include <string>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// Throws InputError naming the file and line.
Molecule read_xyz(const std::string& path);

}  // namespace dfmp2
