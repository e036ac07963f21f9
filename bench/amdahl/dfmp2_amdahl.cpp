// dfmp2_amdahl: one molecule, every energy backend × precision on one B_ia^P.
//
// The stages before the energy step (integrals, SCF, DF transform) do not depend on the backend,
// so prepare() runs once and only add_mp2_energy() is repeated (best of --repeat). The machine's
// DGEMM/SGEMM rate is measured in the same process, so the energy step's GFLOP/s can be read
// against what BLAS reaches on this machine, under the same load. bench/amdahl.py drives it over
// a series of molecules and does the Amdahl analysis.
#include <cblas.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/blas_kernels.hpp"
#include "kernels/mp2_energy.hpp"
#include "src/run/driver.hpp"
#include "src/common/memory.hpp"
#include "src/molecule/molecule.hpp"
#include "src/common/parallel.hpp"
#include "src/io/output_file.hpp"
#include "src/io/xyz.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

// Seconds of a named stage; the driver sums repeated stages under one name.
std::optional<double> timing(const dfmp2::RunResult& result, const std::string& stage) {
  for (const auto& [name, seconds] : result.timings)
    if (name == stage) return seconds;
  return std::nullopt;
}

json optional_seconds(const std::optional<double>& seconds) {
  return seconds ? json(*seconds) : json(nullptr);
}

// One multithreaded C = A·Bᵀ (row-major, the kernels' layout), best of `tries`: GFLOP/s.
template <typename Real>
double gemm_rate(std::size_t m, std::size_t n, std::size_t k, int tries) {
  std::vector<Real> A(m * k), B(n * k), C(m * n);
  for (std::size_t x = 0; x < A.size(); ++x) A[x] = Real(1e-3) * Real(x % 1013);
  for (std::size_t x = 0; x < B.size(); ++x) B[x] = Real(1e-3) * Real(x % 997);
  double best = std::numeric_limits<double>::infinity();
  for (int t = 0; t < tries; ++t) {
    const auto start = Clock::now();
    if constexpr (std::is_same_v<Real, double>)
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0, A.data(), int(k),
                  B.data(), int(k), 0.0, C.data(), int(n));
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, int(m), int(n), int(k), 1.0f, A.data(), int(k),
                  B.data(), int(k), 0.0f, C.data(), int(n));
    best = std::min(best, seconds_since(start));
  }
  return 2.0 * double(m) * double(n) * double(k) / best / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  dfmp2::MpiSession mpi(argc, argv);
  CLI::App app{"dfmp2_amdahl: time every MP2 energy backend on one DF tensor", "dfmp2_amdahl"};
  std::string xyz, basis, df_basis, jk_basis, json_path, memory;
  std::string backends = "reference,loop,fused", precisions = "fp64,fp32";
  int repeat = 1, threads = 0, charge = 0;
  bool quiet = false;
  app.add_option("input", xyz, "molecule (.xyz, Ångström)")->required();
  app.add_option("--basis", basis, "orbital basis")->required();
  app.add_option("--df-basis", df_basis, "DF-MP2 auxiliary basis (default <basis>-ri)");
  app.add_option("--jk-basis", jk_basis, "DF-SCF auxiliary basis (default <basis>-jkfit)");
  app.add_option("--charge", charge, "molecular charge");
  app.add_option("--backends", backends, "comma-separated energy backends");
  app.add_option("--precisions", precisions, "comma-separated precisions");
  app.add_option("--repeat", repeat, "energy-step repetitions per backend (the best is kept)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)");
  app.add_option("--memory", memory, "memory budget, e.g. 4GB (default: half the RAM)");
  app.add_option("--json", json_path, "write the results as JSON");
  app.add_flag("--quiet,-q", quiet, "no progress on stderr");
  CLI11_PARSE(app, argc, argv);

  try {
    if (threads > 0) omp_set_num_threads(threads);
    dfmp2::RunOptions options;
    options.basis = basis;
    if (!df_basis.empty()) options.df_basis = df_basis;
    if (!jk_basis.empty()) options.jk_basis = jk_basis;
    if (app.count("--charge")) options.charge = charge;
    if (!memory.empty()) options.memory_bytes = dfmp2::parse_memory(memory);
    std::vector<std::pair<dfmp2::kernels::Backend, dfmp2::kernels::Precision>> cases;
    for (const auto& p : split_list(precisions))
      for (const auto& b : split_list(backends))
        cases.emplace_back(dfmp2::kernels::parse_backend(b), dfmp2::kernels::parse_precision(p));
    if (cases.empty()) throw std::invalid_argument("no backend or no precision given");

    dfmp2::RunInput input;
    input.path = xyz;
    input.molecule = dfmp2::read_xyz(xyz);
    dfmp2::Progress progress(quiet);
    const dfmp2::PreparedRun prepared = dfmp2::prepare(input, options, progress);
    const dfmp2::RunResult& base = prepared.result;
    const auto nocc = std::size_t(base.nocc), nvir = std::size_t(base.nvir), naux = std::size_t(base.naux);
    const double flops = dfmp2::kernels::needed_flops(nocc, nvir, naux);

    json out;
    out["input"] = xyz;
    out["molecule"] = base.molecule;
    out["basis"] = base.basis;
    out["df_basis"] = base.df_basis;
    out["jk_basis"] = base.jk_basis;
    for (const auto& [key, value] : {std::pair{"natom", base.natom}, {"nbf", base.nbf}, {"naux", base.naux},
                                     {"naux_jk", base.naux_jk}, {"nocc", base.nocc}, {"nvir", base.nvir}})
      out[key] = value;
    out["threads"] = omp_get_max_threads();
    out["blas_kernels"] = base.blas_kernels;
    out["repeat"] = repeat;
    out["e_scf"] = base.e_scf;
    out["needed_flops"] = flops;
    out["stages"] = json::object();
    for (const char* stage : {"integrals", "scf", "df_transform"})
      out["stages"][stage] = timing(base, stage).value_or(0.0);

    json runs = json::array();
    for (const auto& [backend, precision] : cases) {
      options.backend = backend;
      options.precision = precision;
      std::optional<dfmp2::RunResult> best;
      std::vector<double> all;
      for (int r = 0; r < repeat; ++r) {
        dfmp2::RunResult result = base;  // fresh timings: the driver accumulates by stage name
        result.timings.clear();
        dfmp2::add_mp2_energy(prepared.df, options, progress, result);
        all.push_back(timing(result, "energy").value_or(0.0));
        if (!best || all.back() < *timing(*best, "energy")) best = std::move(result);
      }
      const double seconds = *timing(*best, "energy");
      json run;
      run["backend"] = dfmp2::kernels::to_string(backend);
      run["ran"] = best->backend;
      run["precision"] = best->precision;
      run["energy_seconds"] = seconds;
      run["energy_seconds_all"] = all;
      run["gemm_seconds"] = optional_seconds(timing(*best, "energy_gemm"));
      run["reduction_seconds"] = optional_seconds(timing(*best, "energy_reduction"));
      run["gflops"] = flops / seconds / 1e9;
      for (const auto& [key, value] : {std::pair{"e_scf", best->e_scf}, {"e_corr", best->e_corr},
                                       {"e_ss", best->e_ss}, {"e_os", best->e_os}, {"e_total", best->e_total}})
        run[key] = value;
      if (!quiet)
        std::cerr << "dfmp2_amdahl: " << run["backend"].get<std::string>() << " " << best->precision
                  << ": " << seconds << " s, " << run["gflops"].get<double>() << " GFLOP/s\n";
      runs.push_back(std::move(run));
    }
    out["runs"] = std::move(runs);

    // The shape of the loop backend's big GEMMs (a few occupied rows against many), K = naux.
    const std::size_t edge = 4 * nvir;
    out["machine_gemm"] = {{"m", edge}, {"n", edge}, {"k", naux},
                           {"dgemm_gflops", gemm_rate<double>(edge, edge, naux, 3)},
                           {"sgemm_gflops", gemm_rate<float>(edge, edge, naux, 3)}};

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
