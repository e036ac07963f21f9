// The run's stages, each a function from its inputs to its product, in the order the data
// flows: setup → integrals → SCF → DF transform → energy. MPI lives inside the stages (and
// src/common/parallel), the memory in the budget they all draw from; the driver (driver.cpp)
// is the list of them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <libint2/basis.h>

#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/parallel.hpp"
#include "src/common/progress.hpp"
#include "src/common/scratch.hpp"
#include "src/common/stage_work.hpp"
#include "src/gradient/mp2_relaxed_density.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/molecule/basis.hpp"
#include "src/mp2/bia_tensor.hpp"
#include "src/mp2/df_transform.hpp"
#include "src/mp2/distributed_energy.hpp"
#include "src/run/options.hpp"
#include "src/run/run_input.hpp"
#include "src/scf/df_fock.hpp"
#include "src/scf/fock_builder.hpp"
#include "src/scf/orbitals.hpp"

namespace dfmp2 {

// What every stage may use.
struct RunContext {
  const RunOptions& options;
  MemoryBudget& budget;
  Communicator& comm;
  Progress& progress;
  const ScratchDirectory& scratch;
  kernels::GemmRates cpu_rates = {};  // measured at start-up: what the CPU threads reach
};

// setup: the validated molecule, its basis sets placed on it, the sizes that follow.
struct Problem {
  Molecule molecule;
  std::string name;                          // the molecule's name, or its formula
  std::string basis, df_basis, jk_basis;     // as resolved (jk_basis empty for exact SCF)
  BasisSetData orbital_basis;                // the orbital set's data, for the SAD guess (only
                                             // `pure` for a basis given with the orbitals)
  libint2::BasisSet obs, aux;                // orbital and DF-MP2 auxiliary sets
  std::optional<libint2::BasisSet> jk_aux;   // DF-SCF auxiliary set
  bool unrestricted = false;                 // UHF, else RHF
  int nocc = 0, nfrozen = 0;                 // occupied (RHF: doubly; UHF: α), and frozen of those
  int nocc_beta = 0;                         // UHF: occupied β orbitals (nocc − 2S); RHF: nocc
  double e_nuc = 0.0;
  ShellPairs pairs;                          // the orbital basis' significant shell pairs
  bool orbitals_given = false;               // the SCF is skipped
  std::optional<double> e_scf_given;         // and E_SCF given with them: no Fock builder, no JK set
};
Problem define_problem(const RunInput& input, const RunContext& context);

// The run's memory plan, stage by stage, from the sizes and the budget: what each stage holds in
// memory and on disk at its peak. The stages then draw what their plans say.
struct RunPlan {
  std::optional<DensityFittedScfPlan> density_fitted_scf;  // the DF-SCF's tensor and builds
  bool store_quartets = false;                             // exact SCF: the four-index integrals kept
  // --gradient (DF-SCF): the gradient stage, whose amplitudes give the MP2 energy, in place of the
  // DF transform and the energy step (transform, mp2, df_transform and energy are left empty).
  std::optional<Mp2GradientPlan> mp2_gradient;
  std::optional<StagePlan> gradient;
  DFTransformPlan transform;
  EnergyPlan mp2;  // for the backend and precision of the options
  StagePlan integrals, scf, df_transform, energy;
  std::vector<StagePlan> stages() const {
    if (gradient) return {integrals, scf, *gradient};
    return {integrals, scf, df_transform, energy};
  }
};
RunPlan plan_run(const Problem& problem, const RunContext& context);
// Refuses the run up front (InputError naming what it would need) when a stage's plan does not
// fit the budget, or the disk it needs is not free in the scratch directory.
void check_plan(const RunPlan& plan, const RunContext& context);

// integrals: one-electron matrices and the Fock builder (for DF, its fitted three-index tensor).
struct Integrals {
  Eigen::MatrixXd S, H;  // H: T + V, and the orbital set's effective core potentials
  std::vector<StagePart> parts;  // "ecp": the ECP integrals' wall time, when the molecule has any
  std::unique_ptr<FockBuilder> fock;
  MemoryBudget::Reservation pairs_memory;
  StageWork work;
};
Integrals compute_integrals(const Problem& problem, const RunPlan& plan, const RunContext& context);


// scf: canonical RHF or UHF orbitals, or the given ones with their energy from one Fock build.
struct ScfSolution {
  double e_scf = 0.0;
  double s2 = 0.0;    // UHF: ⟨S²⟩ of the determinant
  Orbitals orbitals;  // identical on every rank
  std::vector<ScfIteration> iterations;
  StageWork work;
  std::vector<StagePart> parts;  // "guess": the atomic densities; "jk": the iterations' Fock builds
};
ScfSolution solve_scf(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                      const RunContext& context);

// df_transform: B_ia^P over the active orbitals (this rank's occupied block), of each spin for UHF
// (both from one pass over the integrals), in memory or on disk as planned.
struct Transformed {
  BiaTensor df;                      // RHF, or UHF's α
  std::optional<BiaTensor> df_beta;  // UHF's β
  StageWork work;
  std::size_t batches = 0;  // of auxiliary shells (more than one when the budget binds)
};
Transformed transform_to_mo(const Problem& problem, const RunPlan& plan, const Orbitals& orbitals,
                            const RunContext& context);

// The energy-only run's B: this rank's occupied rows read from where they are stored.
BiaTensor read_given_tensor(const GivenBiaTensor& given, const RunContext& context);

// energy: the MP2 energy from B (UHF: the α and β tensors), with the backend and precision asked
// for.
struct Mp2Energy {
  DistributedEnergy distributed;
  kernels::Backend backend;  // the one that ran
  std::optional<EnergyDevice> gpu;  // the GPU it ran on
  double needed_flops = 0.0;         // this rank's share of the step's needed work
  StagePlan plan;                    // the memory plan it ran with
  StageWork work;
};
// Where the energy step runs (--device): the CPU; the GPU, with its memory for the step and its
// GEMM rate probed (InputError in one line when --device gpu finds none usable); auto: the GPU
// when one is usable and this rank's share of the step would keep the CPU threads (at their
// measured GEMM rate) longer than the GPU takes to start.
EnergyDevice energy_device(const RunOptions& options, const std::vector<EnergySpin>& spins, std::size_t naux,
                           int ranks, const kernels::GemmRates& cpu_rates);
// The energy step's plan for B as it is held now, for any backend and precision.
EnergyPlan plan_energy_step(const BiaTensor& df, const std::optional<BiaTensor>& df_beta, kernels::Backend backend,
                            kernels::Precision precision, kernels::Device device, const RunContext& context);
Mp2Energy mp2_energy(const BiaTensor& df, const std::optional<BiaTensor>& df_beta, const EnergyPlan& plan,
                     const RunContext& context);

}  // namespace dfmp2
