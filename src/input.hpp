// What a run starts from: a molecule with basis names, optionally converged orbitals, or
// only the DF tensor for an energy-only run. Filled from an XYZ file or an HDF5 file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "src/molecule.hpp"

namespace dfmp2 {

struct Orbitals {
  Eigen::MatrixXd C;    // nbf × nmo, columns ordered by energy
  Eigen::VectorXd eps;  // nmo
  int nocc = 0;
};

// B_ia^P, row-major [nocc][nvir][naux], kept in the precision it was stored in. Over MPI a
// rank holds the occupied orbitals occ_begin … occ_begin + nocc − 1 of eps_occ.size().
struct DFTensor {
  std::size_t nocc = 0, nvir = 0, naux = 0;
  std::size_t occ_begin = 0;
  std::vector<double> B64;  // filled when stored as float64
  std::vector<float> B32;   // filled when stored as float32
  std::vector<double> eps_occ, eps_vir;  // eps_occ: every active occupied orbital
};

struct RunInput {
  std::string path;                  // the file the input came from
  std::optional<Molecule> molecule;  // absent for an energy-only run
  std::string basis, df_basis, jk_basis;  // empty: not given (defaults apply)
  std::optional<Orbitals> orbitals;  // given orbitals: skip the SCF
  std::optional<DFTensor> df;        // given DF tensor: energy only
};

}  // namespace dfmp2
