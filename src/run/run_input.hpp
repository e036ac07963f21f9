// What a run starts from: a molecule with basis names, optionally converged orbitals, or
// only the DF tensor for an energy-only run. Filled from an XYZ file or an HDF5 file.
#pragma once

#include <optional>
#include <string>

#include "src/molecule/molecule.hpp"
#include "src/mp2/df_tensor.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

struct RunInput {
  std::string path;                  // the file the input came from
  std::optional<Molecule> molecule;  // absent for an energy-only run
  std::string basis, df_basis, jk_basis;  // empty: not given (defaults apply)
  std::optional<Orbitals> orbitals;  // given orbitals: skip the SCF
  std::optional<DFTensor> df;        // given DF tensor: energy only
};

}  // namespace dfmp2
