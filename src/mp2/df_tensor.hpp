// B_ia^P, the DF transform's product and the energy step's input (or given in the input: then
// the run is the energy step only).
#pragma once

#include <cstddef>
#include <vector>

namespace dfmp2 {

// Row-major [nocc][nvir][naux], kept in the precision it was stored in. Over MPI a rank holds
// the occupied orbitals occ_begin … occ_begin + nocc − 1 of eps_occ.size().
struct DFTensor {
  std::size_t nocc = 0, nvir = 0, naux = 0;
  std::size_t occ_begin = 0;
  std::vector<double> B64;  // filled when stored as float64
  std::vector<float> B32;   // filled when stored as float32
  std::vector<double> eps_occ, eps_vir;  // eps_occ: every active occupied orbital
};

}  // namespace dfmp2
