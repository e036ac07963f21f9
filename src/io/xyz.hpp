// XYZ files: the atom count, a comment line (the molecule's name), then "El x y z" in Ångström.
#pragma once

#include <string>

#include "src/molecule/molecule.hpp"

namespace dfmp2 {

// Throws InputError naming the file and line.
Molecule read_xyz(const std::string& path);

}  // namespace dfmp2
