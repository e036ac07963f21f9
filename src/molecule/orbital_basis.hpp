// An orbital basis as placed on a molecule, with its set's spherical/Cartesian choice: the DF-SCF
// fitting set follows that choice, and Molden and TREXIO files record it.
#pragma once

#include <libint2/basis.h>

namespace dfmp2 {

struct OrbitalBasis {
  libint2::BasisSet shells;
  bool pure = true;  // spherical d and up (shells may differ only when a file said so, e.g. [5D10F])
};

}  // namespace dfmp2
