// The run's options in one typed table: each choice with its names, and every default. The
// command line (src/cli), the HDF5 and JSON outputs and the benchmark drivers take their names,
// choices and defaults from here.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "kernels/mp2_energy.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

enum class ScfType { df, exact };
enum class ScfGuess { sad, core };
// automatic: RHF for multiplicity 1, UHF otherwise.
enum class Reference { automatic, rhf, uhf };

template <typename Enum>
using NamedChoices = std::span<const std::pair<Enum, const char*>>;

NamedChoices<ScfType> scf_type_names();
NamedChoices<ScfGuess> scf_guess_names();
NamedChoices<Reference> reference_names();
inline NamedChoices<kernels::Backend> backend_names() { return kernels::backend_names(); }
inline NamedChoices<kernels::Precision> precision_names() { return kernels::precision_names(); }

template <typename Enum>
std::string name_of(NamedChoices<Enum> choices, Enum value) {
  for (const auto& [choice, name] : choices)
    if (choice == value) return name;
  return "?";
}
template <typename Enum>
std::string name_of(Enum value);  // from the table of Enum

// What the command line may set; unset optionals fall back to the input file, then defaults.
struct RunOptions {
  std::optional<std::string> basis, df_basis, jk_basis;
  std::optional<int> charge, multiplicity;
  Reference reference = Reference::automatic;
  ScfType scf_type = ScfType::df;
  ScfGuess guess = ScfGuess::sad;
  bool frozen_core = false;
  kernels::Backend backend = kernels::Backend::automatic;
  kernels::Precision precision = kernels::Precision::fp64;
  std::size_t memory_bytes = 0;  // 0: half the machine's RAM (default_memory_budget)
  ScfOptions scf;
};

}  // namespace dfmp2
