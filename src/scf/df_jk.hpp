// Density-fitted two-electron Fock term for the SCF: G = 2J − K from fitted factors
// B^Q_μν = Σ_P M_QP (P|μν), held in memory (the "jk" auxiliary basis). Over MPI each rank
// holds the factors of its block of Q and G is summed over ranks.
//   J_μν = Σ_Q B^Q_μν γ_Q,  γ_Q = Σ_λσ B^Q_λσ D_λσ
//   K_μν = Σ_Q Σ_i Z^Q_iμ Z^Q_iν,  Z^Q = C_occᵀ B^Q
#pragma once

#include <cstddef>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/integrals/integrals.hpp"
#include "src/common/parallel.hpp"

namespace dfmp2 {

class DensityFittedFock {
 public:
  // Throws InputError when this rank's factors do not fit in memory_bytes.
  DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux,
                    const ShellPairs& pairs, std::size_t memory_bytes, Communicator& comm);

  // Collective over the ranks.
  Eigen::MatrixXd operator()(const Eigen::MatrixXd& C_occ) const;

 private:
  Communicator& comm_;
  Eigen::Index nbf_, naux_;  // naux_: this rank's Q
  std::vector<double> B_;    // [Q][μ][ν]
};

}  // namespace dfmp2
