// G = 2J − K (or UHF's G_α, G_β) from exact four-index integrals, of symmetric densities only: the
// quartet loop takes each unique quartet once, which presumes D_λσ = D_σλ (and gives a symmetric
// G), so a factor pair whose L Rᵀ is not symmetric is refused (the density-fitted builder takes
// those); pairs like the Z-vector's [L C][C L]ᵀ, symmetric though L ≠ R, are built. When the memory plan has room
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
  // What builds of `spins` densities hold (per-thread G, the last D and G, per spin).
  static std::size_t peak_bytes(std::size_t nbf, std::size_t spins);

 protected:
  // Builds exactly whatever the precision asked.
  std::vector<Eigen::MatrixXd> two_electron_fock(std::span<const FactorPair> densities,
                                                 kernels::Precision precision) override;
  std::size_t functions() const override { return obs_.nbf(); }

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
