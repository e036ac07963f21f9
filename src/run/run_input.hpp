// What a run starts from: a molecule with basis names, optionally converged orbitals, or
// only a DF tensor for an energy-only run. Filled from an XYZ, HDF5, Molden or TREXIO file.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "src/molecule/molecule.hpp"
#include "src/molecule/orbital_basis.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

// A DF tensor B_ia^P kept where it is stored (row-major [nocc][nvir][naux]) until the energy
// step reads the occupied rows each rank needs, under the memory budget.
struct GivenBiaTensor {
  std::size_t nocc = 0, nvir = 0, naux = 0;
  bool fp32 = false;  // stored precision
  std::vector<double> eps_occ, eps_vir;
  // Reads `count` occupied rows from `first` into out (float when fp32, else double).
  std::function<void(std::size_t first, std::size_t count, void* out)> read_rows;
};

struct RunInput {
  std::string path;                  // the file the input came from
  std::optional<Molecule> molecule;  // absent for an energy-only run
  std::string basis, df_basis, jk_basis;  // empty: not given (defaults apply)
  std::optional<Orbitals> orbitals;  // given orbitals: skip the SCF
  std::optional<double> e_scf;       // given with them (/scf's e_scf): no Fock build, no JK set
  bool unoccupied = false;  // the orbitals came without occupations (nocc 0): see occupy_by_energy
  std::optional<OrbitalBasis> orbital_basis;  // given with the orbitals (Molden, TREXIO), not named
  std::optional<GivenBiaTensor> df;   // given DF tensor: energy only
};

}  // namespace dfmp2
