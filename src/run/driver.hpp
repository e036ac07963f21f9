// The method, stage by stage: input → integrals → SCF → DF tensor → energy → result.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "kernels/mp2_energy.hpp"
#include "src/run/run_input.hpp"
#include "src/common/progress.hpp"
#include "src/run/run_result.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

// What the command line may set; unset optionals fall back to the input file, then defaults.
struct RunOptions {
  std::optional<std::string> basis, df_basis, jk_basis;
  std::optional<int> charge;
  std::string scf_type = "df";  // "df" or "exact"
  std::string scf_guess = "sad";  // "sad" (superposition of atomic densities) or "core"
  bool frozen_core = false;
  kernels::Backend backend = kernels::Backend::automatic;
  kernels::Precision precision = kernels::Precision::fp64;
  std::size_t memory_bytes = 0;  // 0: default_memory_budget()
  ScfOptions scf;
};

// The whole method; timings include "total".
RunResult run(const RunInput& input, const RunOptions& options, Progress& progress);

// The same in two parts, for benchmarks that time several energy backends on one tensor:
// the stages up to B_ia^P (integrals, SCF, DF transform), then the energy step.
struct PreparedRun {
  RunResult result;  // everything but the MP2 energies
  DFTensor df;
};
PreparedRun prepare(const RunInput& input, const RunOptions& options, Progress& progress);
void add_mp2_energy(const DFTensor& df, const RunOptions& options, Progress& progress,
                    RunResult& result);

}  // namespace dfmp2
