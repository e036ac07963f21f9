// The run's options on a command line: each option's name, choices and default come from the
// option table (src/run/options.hpp). Used by dfmp2 and by the benchmark drivers.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "src/run/options.hpp"

namespace dfmp2 {

class RunOptionsCli {
 public:
  // Adds the options to `app`; with energy_choices, --backend and --precision too.
  RunOptionsCli(CLI::App& app, bool energy_choices);
  // After parsing: the options given, over the defaults; applies --threads. Throws InputError.
  RunOptions options() const;

 private:
  RunOptions options_;
  std::string basis_, df_basis_, jk_basis_, memory_, gpu_memory_;
  int charge_ = 0, multiplicity_ = 1, threads_ = 0;
  CLI::Option* charge_option_ = nullptr;
  CLI::Option* multiplicity_option_ = nullptr;
};

}  // namespace dfmp2
