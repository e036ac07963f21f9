// Density-fitted two-electron Fock term from fitted factors B^Q_μν = Σ_P M_QP (P|μν) over the
// "jk" auxiliary basis, held in memory packed over μ ≥ ν (kernels/packed.hpp), as Psi4's MemDF
// and PySCF's cderi hold them. J and K come from one pass over B per build (kernels/packed_jk):
//   J_μν = Σ_Q B^Q_μν γ_Q,  γ_Q = Σ_λσ B^Q_λσ D_λσ;   K_μν = Σ_Q (B^Q F)(B^Q F)ᵀ_μν
// UHF's α and β share the pass: J from D_α + D_β, K for each. Over MPI each rank holds the
// factors of its block of Q and G is summed over ranks.
#pragma once

#include <memory>

#include <libint2/basis.h>

#include "kernels/packed_jk.hpp"

#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/fock_builder.hpp"

namespace dfmp2 {

class DensityFittedFock : public FockBuilder {
 public:
  // Computes and fits this rank's factors, and sets aside the builds' workspace for `spins`
  // densities (1: RHF, 2: UHF). Throws InputError when they do not fit the budget.
  DensityFittedFock(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const ShellPairs& pairs,
                    MemoryBudget& budget, Communicator& comm, std::size_t spins);
  Eigen::MatrixXd build(const Eigen::MatrixXd& density_factor, kernels::Precision precision) override;
  std::array<Eigen::MatrixXd, 2> build_unrestricted(const Eigen::MatrixXd& alpha_factor,
                                                    const Eigen::MatrixXd& beta_factor,
                                                    kernels::Precision precision) override;
  bool has_fp32_build() const override { return true; }
  // Work of making the factors (integrals and fitting), apart from the builds' work().
  const StageWork& setup_work() const { return setup_work_; }
  // The most this rank holds at once (factors, the exchange between ranks, the builds'
  // workspace for `spins` densities), from the sizes alone: for the run's up-front memory check.
  static std::size_t peak_bytes(const libint2::BasisSet& obs, const libint2::BasisSet& aux, const Communicator& comm,
                                std::size_t spins);

 private:
  Communicator& comm_;
  std::size_t nbf_, naux_;  // naux_: this rank's Q
  LargeArray<double> B_;    // [Q][packed μν]
  std::unique_ptr<kernels::PackedJK> jk_;
  MemoryBudget::Reservation workspace_;
  // J and each spin's K from the columns of F (nf_per_spin[s] for spin s), counting the work.
  void coulomb_exchange(const Eigen::MatrixXd& F, std::span<const std::size_t> nf_per_spin, double* J,
                        std::span<double* const> K, kernels::Precision precision);
  StageWork setup_work_;
};

}  // namespace dfmp2
