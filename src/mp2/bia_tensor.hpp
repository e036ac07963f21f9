// B_ia^P, the DF transform's product and the energy step's input.
#pragma once

#include <cstddef>
#include <vector>

#include "src/common/memory.hpp"
#include "src/common/row_store.hpp"

namespace dfmp2 {

// Row-major [nocc][nvir][naux]: in memory in one precision (B64 or B32 is filled), or in fp64 on
// disk (on_disk, when it did not fit the memory plan). Over MPI a rank holds the occupied orbitals
// occ_begin … occ_begin + nocc − 1 of eps_occ.size().
struct BiaTensor {
  std::size_t nocc = 0, nvir = 0, naux = 0;
  std::size_t occ_begin = 0;
  LargeArray<double> B64;
  LargeArray<float> B32;
  RowStore on_disk;  // rows i of nvir · naux each
  std::vector<double> eps_occ, eps_vir;  // eps_occ: every active occupied orbital
  bool is_on_disk() const { return on_disk.rows() > 0; }
};

}  // namespace dfmp2
