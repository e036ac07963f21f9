// G = 2J − K (or UHF's G_α, G_β) from exact four-index integrals. When the memory plan has room
// for them, the quartets are computed once at the second build and stored, and every later build
// only contracts them (PK-style). Otherwise each build computes them again (direct SCF),
// incrementally: G(D_n) = G(D_{n−1}) + G(D_n − D_{n−1}), where the density change screens most
// quartets away as the SCF converges; every kFullBuildEvery-th build starts afresh so screening
// errors cannot pile up. Over MPI each rank computes (or stores) its share of the quartets and G
// is summed.
#pragma once

#include <optional>
#include <vector>

#include <libint2/basis.h>

#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/integrals/four_index.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/scf/fock_builder.hpp"

namespace dfmp2 {

class ExactFock : public FockBuilder {
 public:
  // Sets aside the builds' own memory (peak_bytes); store_quartets: the plan's choice
  // (StoredQuartets::bytes of this rank's part, drawn from budget at the second build).
  ExactFock(const libint2::BasisSet& obs, const ShellPairs& pairs, Communicator& comm, MemoryBudget& budget,
            std::size_t spins, bool store_quartets);
  Eigen::MatrixXd build(const Eigen::MatrixXd& density_factor, kernels::Precision precision) override;
  std::array<Eigen::MatrixXd, 2> build_unrestricted(const Eigen::MatrixXd& alpha_factor,
                                                    const Eigen::MatrixXd& beta_factor,
                                                    kernels::Precision precision) override;
  // What builds of `spins` densities hold (per-thread G, the last D and G, per spin).
  static std::size_t peak_bytes(std::size_t nbf, std::size_t spins);

 private:
  // Every spin's G from its density D_s (exact_two_electron_fock's convention).
  std::vector<Eigen::MatrixXd> build_spins(const std::vector<Eigen::MatrixXd>& D);
  std::vector<Eigen::MatrixXd> summed_over_ranks(std::vector<Eigen::MatrixXd> G);
  void store_quartets();

  const libint2::BasisSet& obs_;
  const ShellPairs& pairs_;
  Communicator& comm_;
  MemoryBudget& budget_;
  bool store_;
  MemoryBudget::Reservation builds_memory_;
  std::optional<StoredQuartets> stored_;
  MemoryBudget::Reservation stored_memory_;
  std::vector<Eigen::MatrixXd> D_, G_;  // the last build's densities and G, per spin
  int builds_ = 0;
};

}  // namespace dfmp2
