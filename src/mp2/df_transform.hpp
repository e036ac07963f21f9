// The DF-MP2 tensor B_ia^P = Σ_Q M_PQ (Q|ia), (Q|ia) = Σ_μν C_μi (Q|μν) C_νa, built from
// batches of auxiliary shells so that the AO tensor (Q|μν) never exceeds the memory budget.
#pragma once

#include <cstddef>
#include <functional>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/run/run_input.hpp"
#include "src/integrals/integrals.hpp"
#include "src/common/parallel.hpp"

namespace dfmp2 {

// C_occ: active occupied orbitals (nbf × nocc), C_vir (nbf × nvir). Returns B in the layout
// the energy kernels take, row-major [i][a][P], with the orbital energies; over MPI, B for this
// rank's block of i (collective). progress(fraction) is called after each batch; may be empty.
DFTensor build_df_tensor(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                         const ShellPairs& pairs, const Eigen::MatrixXd& C_occ,
                         const Eigen::MatrixXd& C_vir, const Eigen::VectorXd& eps_occ,
                         const Eigen::VectorXd& eps_vir, std::size_t memory_bytes,
                         const std::function<void(double)>& progress, Communicator& comm);

}  // namespace dfmp2
