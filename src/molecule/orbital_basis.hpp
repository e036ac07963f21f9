// An orbital basis as placed on a molecule, with its set's spherical/Cartesian choice: the DF-SCF
// fitting set follows that choice, and Molden and TREXIO files record it, and the set's effective
// core potentials, which TREXIO files hold beside it.
#pragma once

#include <map>

#include <libint2/basis.h>

#include "src/molecule/basis.hpp"

namespace dfmp2 {

struct OrbitalBasis {
  libint2::BasisSet shells;
  bool pure = true;  // spherical d and up (shells may differ only when a file said so, e.g. [5D10F])
  std::map<int, ElementEcp> potentials;  // by element, for the atoms with Atom::ecp_electrons
};

}  // namespace dfmp2
