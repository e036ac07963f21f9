// The run's options in one typed table: each choice with its names, and every default. The
// command line (src/cli), the HDF5 and JSON outputs and the benchmark drivers take their names,
// choices and defaults from here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "kernels/mp2_energy.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

enum class ScfType { df, exact };
enum class ScfGuess { sad, core };
// automatic: RHF for multiplicity 1, UHF otherwise.
enum class Reference { automatic, rhf, uhf };
// Whether a run with this reference and multiplicity is UHF; throws InputError for RHF asked for
// an open shell.
bool unrestricted(Reference reference, int multiplicity);

using kernels::NamedChoices;

NamedChoices<ScfType> scf_type_names();
NamedChoices<ScfGuess> scf_guess_names();
NamedChoices<Reference> reference_names();
using kernels::backend_names;
using kernels::precision_names;
using kernels::device_names;

// The name of a choice, from its enumeration's table.
std::string name_of(ScfType value);
std::string name_of(ScfGuess value);
std::string name_of(Reference value);
std::string name_of(kernels::Backend value);
std::string name_of(kernels::Precision value);
std::string name_of(kernels::Device value);

// What the command line may set; unset optionals fall back to the input file, then defaults.
struct RunOptions {
  std::optional<std::string> basis, df_basis, jk_basis;
  std::optional<int> charge, multiplicity;
  Reference reference = Reference::automatic;
  ScfType scf_type = ScfType::df;
  ScfGuess guess = ScfGuess::sad;
  bool frozen_core = false;
  std::optional<int> frozen_orbitals;  // the N lowest orbitals of each spin frozen (PySCF's frozen=N)
  bool gradient = false;  // the DF-MP2 energy's nuclear gradient too (RHF, DF-SCF, one rank)
  kernels::Backend backend = kernels::Backend::automatic;
  kernels::Precision precision = kernels::Precision::fp64;
  kernels::Device device = kernels::Device::automatic;  // where the energy step runs
  std::size_t gpu_memory_bytes = 0;  // the GPU memory the energy step may take; 0: 90 % of what is free
  std::size_t memory_bytes = 0;  // 0: half the machine's RAM (default_memory_budget)
  std::string scratch;           // empty: default_scratch_path()
  ScfOptions scf;
};

}  // namespace dfmp2
