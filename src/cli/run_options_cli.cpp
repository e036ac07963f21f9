#include "src/cli/run_options_cli.hpp"

#include <cmath>

#include <omp.h>

#include "src/common/memory.hpp"

namespace dfmp2 {
namespace {

// A choice option: its value one of the table's names, the default shown in --help.
template <typename Enum>
void add_choice(CLI::App& app, const std::string& flag, Enum& value, NamedChoices<Enum> choices,
                const std::string& help) {
  const auto is_a_name = [choices](std::string& text) -> std::string {
    for (const auto& [choice, name] : choices)
      if (text == name) return {};
    return "'" + text + "' is not one of " + kernels::list_names(choices);
  };
  app.add_option_function<std::string>(
         flag, [&value, choices](const std::string& name) { value = kernels::parse_in(choices, name, "choice"); },
         help + " (default " + kernels::name_in(choices, value) + ")")
      ->check(CLI::Validator(is_a_name, ""))
      ->type_name(kernels::list_names(choices, "|"));
}

// A number above zero (or at least zero), finite: CLI11's PositiveNumber lets NaN through.
CLI::Validator finite_number(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0.0;
        const bool number = CLI::detail::lexical_cast(text, value);
        if (number && std::isfinite(value) && (value > 0.0 || (zero_allowed && value == 0.0))) return {};
        return "'" + text + "' is not a finite number " + (zero_allowed ? "≥ 0" : "> 0");
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}

}  // namespace

RunOptionsCli::RunOptionsCli(CLI::App& app, bool energy_choices) {
  app.add_option("--basis", basis_, "orbital basis: name (cc-pvdz, def2-svp, …) or .gbs path");
  app.add_option("--df-basis", df_basis_, "auxiliary basis for DF-MP2 (default: <basis>-ri)");
  app.add_option("--jk-basis", jk_basis_, "auxiliary basis for DF-SCF (default: <basis>-jkfit)");
  charge_option_ = app.add_option("--charge", charge_, "molecular charge (overrides the file)");
  multiplicity_option_ = app.add_option("--multiplicity", multiplicity_,
                                        "spin multiplicity 2S+1 (overrides the file; default 1)");
  add_choice(app, "--reference", options_.reference, reference_names(),
             "SCF reference: auto is rhf for multiplicity 1, uhf otherwise");
  add_choice(app, "--scf", options_.scf_type, scf_type_names(), "SCF two-electron integrals");
  add_choice(app, "--guess", options_.guess, scf_guess_names(),
             "SCF start: superposition of atomic densities or core Hamiltonian");
  CLI::Option* frozen_core =
      app.add_flag("--frozen-core", options_.frozen_core, "freeze core orbitals as Psi4's freeze_core");
  app.add_option("--frozen-orbitals", options_.frozen_orbitals,
                 "freeze the N lowest orbitals of each spin (PySCF's frozen=N)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber)
      ->excludes(frozen_core);
  app.add_flag("--gradient", options_.gradient,
               "the DF-MP2 nuclear gradient too, Eh/bohr (RHF or UHF with DF-SCF)");
  if (energy_choices) {
    add_choice(app, "--backend", options_.backend, backend_names(), "MP2 energy backend");
    add_choice(app, "--precision", options_.precision, precision_names(), "B tensor precision");
    add_choice(app, "--device", options_.device, device_names(),
               "where the MP2 energy step, the DF-SCF J/K and the DF transform's products run (with --gradient, "
               "gpu: the SCF's J/K, the amplitude loop's and the Z-vector's products): auto is the GPU when one "
               "is usable and the energy step is large");
    app.add_option("--gpu-memory", gpu_memory_, "GPU memory each GPU stage may take, e.g. 40GB (default: 90% of "
                                                "what is free); B_ia^P streams from RAM when it does not fit")
        ->type_name("SIZE");
  }
  app.add_option("--memory", memory_, "memory budget of the whole run, e.g. 8GB (default: half the RAM)")
      ->type_name("SIZE");
  app.add_option("--scratch", options_.scratch,
                 "directory for what does not fit --memory (default: $TMPDIR, else /tmp)")
      ->type_name("DIR");
  app.add_option("--threads", threads_, "OpenMP threads (default: OMP_NUM_THREADS or all cores)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--e-convergence", options_.scf.e_convergence, "SCF energy convergence / Eh")
      ->check(finite_number(false))
      ->capture_default_str();
  app.add_option("--d-convergence", options_.scf.d_convergence,
                 "SCF orbital-gradient convergence (default 1e-8 for RHF, 1e-10 for UHF)")
      ->check(finite_number(false));
  app.add_option("--max-iterations", options_.scf.max_iterations, "SCF iteration limit")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--fp32-until", options_.scf.fp32_until_gradient,
                 "DF-SCF builds the exchange in fp32 until the orbital-gradient RMS falls below this, and the "
                 "MP2 gradient's Z-vector makes its inner iterations in fp32 (0: neither)")
      ->check(finite_number(true))
      ->capture_default_str();
}

RunOptions RunOptionsCli::options() const {
  RunOptions options = options_;
  if (!basis_.empty()) options.basis = basis_;
  if (!df_basis_.empty()) options.df_basis = df_basis_;
  if (!jk_basis_.empty()) options.jk_basis = jk_basis_;
  if (*charge_option_) options.charge = charge_;
  if (*multiplicity_option_) options.multiplicity = multiplicity_;
  if (!memory_.empty()) options.memory_bytes = parse_memory(memory_);
  if (!gpu_memory_.empty()) options.gpu_memory_bytes = parse_memory(gpu_memory_);
  if (threads_ > 0) omp_set_num_threads(threads_);
  return options;
}

}  // namespace dfmp2
