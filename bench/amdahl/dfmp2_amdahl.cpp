// dfmp2_amdahl: one molecule, every energy backend × precision × device on one B_ia^P.
//
// The stages before the energy step (integrals, SCF, DF transform) do not depend on the backend,
// so they run once (PreparedRun) and only the energy step is repeated (best of --repeat). Every
// stage's time and floor come from the run's own report; the machine's DGEMM/SGEMM rate on the
// energy step's shape is measured in the same process, so the energy step's GFLOP/s can be read
// against what BLAS reaches here, under the same load. bench/amdahl.py drives it over a series
// of molecules and does the Amdahl analysis.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "bench/comma_list.hpp"
#include "kernels/mp2_energy.hpp"
#include "kernels/gemm_rate.hpp"
#include "src/cli/run_options_cli.hpp"
#include "src/run/driver.hpp"
#include "src/common/parallel.hpp"
#include "src/io/output_file.hpp"
#include "src/io/xyz.hpp"

namespace {

using nlohmann::json;

// Seconds (wall or floor) of a named stage.
std::optional<double> timing(const dfmp2::RunResult& result, const std::string& stage, bool floor = false) {
  for (const auto& t : result.stages)
    if (t.name == stage) return floor ? t.floor_seconds : t.seconds;
  return std::nullopt;
}

json optional_seconds(double seconds) { return seconds > 0.0 ? json(seconds) : json(nullptr); }

}  // namespace

int main(int argc, char** argv) {
  dfmp2::MpiSession mpi(argc, argv);
  CLI::App app{"dfmp2_amdahl: time every MP2 energy backend on one DF tensor", "dfmp2_amdahl"};
  std::string xyz, json_path;
  std::string backends = "reference,loop,fused", precisions = "fp64,fp32", devices = "cpu";
  int repeat = 1;
  bool quiet = false;
  app.add_option("input", xyz, "molecule (.xyz, Ångström)")->required();
  const dfmp2::RunOptionsCli run_options(app, false);
  app.add_option("--backends", backends, "comma-separated energy backends");
  app.add_option("--precisions", precisions, "comma-separated precisions");
  app.add_option("--devices", devices, "comma-separated devices of the energy step (cpu, gpu)");
  app.add_option("--repeat", repeat, "energy-step repetitions per backend (the best is kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "write the results as JSON");
  app.add_flag("--quiet,-q", quiet, "no progress on stderr");
  CLI11_PARSE(app, argc, argv);

  try {
    // The stages before the energy step on the CPU threads; each energy step then on its device
    // (the GPU's start, its context and GEMM probe, counts in its energy step).
    dfmp2::RunOptions options = run_options.options();
    options.device = dfmp2::kernels::Device::cpu;
    if (!options.basis) throw std::invalid_argument("--basis is required");
    std::vector<std::tuple<dfmp2::kernels::Backend, dfmp2::kernels::Precision, dfmp2::kernels::Device>> cases;
    for (const auto& d : dfmp2::bench::comma_list(devices))
      for (const auto& p : dfmp2::bench::comma_list(precisions))
        for (const auto& b : dfmp2::bench::comma_list(backends))
          cases.emplace_back(dfmp2::kernels::parse_backend(b), dfmp2::kernels::parse_precision(p),
                             dfmp2::kernels::parse_in(dfmp2::kernels::device_names(), d, "device"));
    if (cases.empty()) throw std::invalid_argument("no backend or no precision given");

    dfmp2::RunInput input;
    input.path = xyz;
    input.molecule = dfmp2::read_xyz(xyz);
    dfmp2::Progress progress(quiet);
    dfmp2::PreparedRun prepared(input, options, progress);
    const dfmp2::RunResult& base = prepared.result();
    const auto nocc = std::size_t(base.nocc), nvir = std::size_t(base.nvir), naux = std::size_t(base.naux);
    // UHF: the αα, ββ and αβ pair blocks.
    const double flops = base.unrestricted() ? dfmp2::kernels::needed_flops_unrestricted(
                                                       nocc, nvir, std::size_t(base.nocc_beta),
                                                       std::size_t(base.nvir_beta), naux)
                                                 : dfmp2::kernels::needed_flops(nocc, nvir, naux);

    json out;
    out["input"] = xyz;
    out["molecule"] = base.molecule;
    out["basis"] = base.basis;
    out["df_basis"] = base.df_basis;
    out["jk_basis"] = base.jk_basis;
    out["reference"] = dfmp2::name_of(base.reference);
    for (const auto& [key, value] : {std::pair{"natom", base.natom}, {"nbf", base.nbf}, {"naux", base.naux},
                                     {"naux_jk", base.naux_jk}, {"nocc", base.nocc}, {"nvir", base.nvir}})
      out[key] = value;
    out["threads"] = omp_get_max_threads();
    out["blas_kernels"] = base.blas_kernels;
    out["repeat"] = repeat;
    out["e_scf"] = base.e_scf;
    out["needed_flops"] = flops;
    out["scf_iterations"] = base.scf_iterations.size();
    out["gemm_gflops_startup"] = {{"fp64", base.gemm_rates.fp64_gflops}, {"fp32", base.gemm_rates.fp32_gflops}};
    out["stages"] = json::object();
    out["floors"] = json::object();
    for (const char* stage : {"setup", "integrals", "scf", "df_transform"}) {
      out["stages"][stage] = timing(base, stage).value_or(0.0);
      out["floors"][stage] = timing(base, stage, true).value_or(0.0);
    }

    json runs = json::array();
    for (const auto& [backend, precision, device] : cases) {
      std::optional<dfmp2::RunResult> best;
      std::vector<double> all;
      for (int r = 0; r < repeat; ++r) {
        dfmp2::RunResult result = prepared.energy(backend, precision, device);
        all.push_back(timing(result, "energy").value_or(0.0));
        if (!best || all.back() < *timing(*best, "energy")) best = std::move(result);
      }
      const double seconds = *timing(*best, "energy");
      json run;
      run["backend"] = dfmp2::kernels::to_string(backend);
      run["ran"] = dfmp2::backend_name(*best);
      run["precision"] = dfmp2::name_of(best->precision);
      run["device"] = dfmp2::name_of(best->device);
      if (best->gpu) run["gpu"] = best->gpu->properties.name;
      run["energy_seconds"] = seconds;
      run["energy_floor_seconds"] = timing(*best, "energy", true).value_or(0.0);
      run["energy_seconds_all"] = all;
      run["gemm_seconds"] = optional_seconds(best->energy_gemm_seconds);
      run["reduction_seconds"] = optional_seconds(best->energy_reduction_seconds);
      run["gflops"] = flops / seconds / 1e9;
      for (const auto& [key, value] : {std::pair{"e_scf", best->e_scf}, {"e_corr", best->e_corr},
                                       {"e_ss", best->e_ss}, {"e_os", best->e_os}, {"e_total", best->e_total}})
        run[key] = value;
      if (!quiet)
        std::cerr << "dfmp2_amdahl: " << run["backend"].get<std::string>() << " " << dfmp2::name_of(best->precision)
                  << " on " << dfmp2::name_of(best->device) << ": " << seconds << " s, " << run["gflops"].get<double>() << " GFLOP/s\n";
      runs.push_back(std::move(run));
    }
    out["runs"] = std::move(runs);

    // The shape of the loop backend's big GEMMs (a few occupied rows against many), K = naux.
    const std::size_t edge = 4 * nvir;
    out["machine_gemm"] = {{"m", edge}, {"n", edge}, {"k", naux},
                           {"dgemm_gflops", dfmp2::kernels::gemm_gflops<double>(edge, edge, naux, 3)},
                           {"sgemm_gflops", dfmp2::kernels::gemm_gflops<float>(edge, edge, naux, 3)}};

    const std::string text = out.dump(2) + "\n";
    if (json_path.empty()) {
      std::cout << text;
    } else {  // written whole, then renamed: a reader never sees half a file
      dfmp2::write_output_file(json_path, [&](const std::string& file) { dfmp2::write_text(file, text); });
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dfmp2_amdahl: error: " << e.what() << "\n";
    return 1;
  }
}
