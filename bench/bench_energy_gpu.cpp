// bench_energy_gpu: the GPU energy step on the original design's synthetic shapes, beside cuBLAS
// in the same run, and the size from which the GPU beats this machine's CPU threads.
//   bench_energy_gpu [--shapes small,medium,large] [--precisions fp64,fp32] [--reps N]
//                    [--cpu-shapes small,medium] [--threshold] [--fused-kernels v1,v2]
//                    [--out results/gpu/energy_gpu.json]
// Per shape and precision: loop and fused with B resident (the first call copies B, the timed
// ones reuse it: median of --reps), and B streamed in four blocks through small slots; fp64's
// fused with each of --fused-kernels (default v1; rows "gpu fused" and "gpu fused v2"); cuBLAS
// DGEMM/SGEMM at the scale of all pairs (m = n = nocc·nvir, k = naux) and at one pair's shape
// (nvir × nvir × naux); the CPU's fused/loop (auto) on --cpu-shapes. --threshold times growing
// shapes on the CPU threads and on the GPU from a cold engine (what a run pays) to find the
// crossover that --device auto uses. GFLOP/s count needed work only, 2·nocc(nocc+1)/2·nvir²·naux.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/comma_list.hpp"
#include "bench/synthetic_shapes.hpp"
#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/mp2_energy.hpp"

namespace k = dfmp2::kernels;
namespace b = dfmp2::bench;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// B over blocks of `rows` orbitals, as the distributed step sums them.
template <typename Real>
k::EnergyResult blocked(k::Backend backend, const std::vector<Real>& B, const b::SyntheticSystem& sys, std::size_t rows,
                        const k::EnergyOptions& options) {
  const std::size_t nocc = sys.shape.nocc, nvir = sys.shape.nvir(), naux = sys.shape.naux;
  const std::span<const double> eps(sys.eps_occ);
  const auto view = [&](std::size_t first, std::size_t n) {
    return k::BiaView<Real>{B.data() + first * nvir * naux, n, nvir, naux, true};
  };
  // The block the next call needs travels while this call computes: the first earlier block during
  // a block's own pairs (the next row block when there is none), the next one during each cross
  // pair, and after the last the next row block.
  const auto with_next = [&](std::size_t first) {
    k::EnergyOptions o = options;
    if (first < nocc) o.gpu_next = {B.data() + first * nvir * naux, std::min(rows, nocc - first), nvir * naux * sizeof(Real)};
    return o;
  };
  k::EnergyResult sum;
  for (std::size_t i0 = 0; i0 < nocc; i0 += rows) {
    const std::size_t ni = std::min(rows, nocc - i0);
    const k::EnergyResult own =
        k::mp2_energy(backend, view(i0, ni), eps.subspan(i0, ni), sys.eps_vir, with_next(i0 > 0 ? 0 : i0 + rows));
    sum.e_os += own.e_os;
    sum.e_ss += own.e_ss;
    for (std::size_t j0 = 0; j0 < i0; j0 += rows) {
      const k::EnergyResult cross =
          k::mp2_energy_cross(backend, view(i0, ni), eps.subspan(i0, ni), view(j0, rows), eps.subspan(j0, rows),
                              sys.eps_vir, with_next(j0 + rows < i0 ? j0 + rows : i0 + rows));
      sum.e_os += cross.e_os;
      sum.e_ss += cross.e_ss;
    }
  }
  return sum;
}

struct Timing {
  double first = 0.0, median = 0.0, gemm = 0.0, reduce = 0.0, energy = 0.0;
};

// The first call (copies B), then the median of `reps` more.
template <typename Call>
Timing time_calls(int reps, Call call) {
  Timing t;
  auto t0 = clock_type::now();
  k::EnergyResult r = call();
  t.first = seconds_since(t0);
  std::vector<double> times;
  for (int n = 0; n < reps; ++n) {
    t0 = clock_type::now();
    r = call();
    times.push_back(seconds_since(t0));
  }
  t.median = median(times);
  t.gemm = r.gemm_seconds;
  t.reduce = r.reduce_seconds;
  t.energy = r.e_os + r.e_ss;
  return t;
}

// The GPU runs of a shape: loop, then fused with each of `fused_kernels` (fp32: its one kernel).
struct GpuRun {
  k::Backend backend;
  k::FusedKernel fused;
  std::string name;
};
std::vector<GpuRun> gpu_runs(bool fp32, const std::vector<k::FusedKernel>& fused_kernels) {
  std::vector<GpuRun> runs{{k::Backend::loop, k::FusedKernel::v1, "loop"}};
  for (const k::FusedKernel f : fp32 ? std::vector<k::FusedKernel>{k::FusedKernel::v1} : fused_kernels)
    runs.push_back({k::Backend::fused, f, f == k::FusedKernel::v2 ? "fused v2" : "fused"});
  return runs;
}

template <typename Real>
void bench_shape(const b::SyntheticSystem& sys, int reps, bool cpu, const std::vector<k::FusedKernel>& fused_kernels,
                 std::ostream& json, std::ostream& md) {
  const auto& sh = sys.shape;
  const k::Precision precision = sizeof(Real) == 4 ? k::Precision::fp32 : k::Precision::fp64;
  const std::string prec = k::to_string(precision);
  const std::vector<Real> B(sys.B.begin(), sys.B.end());
  const k::BiaView<Real> view{B.data(), sh.nocc, sh.nvir(), sh.naux, true};
  const double flops = k::needed_flops(sh.nocc, sh.nvir(), sh.naux);
  const double all_pairs = k::gpu_gemm_gflops(precision, sh.nocc * sh.nvir(), sh.nocc * sh.nvir(), sh.naux);
  const double one_pair = k::gpu_gemm_gflops(precision, sh.nvir(), sh.nvir(), sh.naux);
  const auto row = [&](const std::string& what, const Timing& t) {
    const double gflops = flops / t.median * 1e-9;
    char line[400];
    std::snprintf(line, sizeof line, "| %s | %s | %s | %.4f | %.4f | %.1f | %.1f %% | %.1f %% | %.12f |\n",
                  sh.name.c_str(), what.c_str(), prec.c_str(), t.first, t.median, gflops, 100 * gflops / all_pairs,
                  100 * gflops / one_pair, t.energy);
    md << line;
    json << "    {\"shape\": \"" << sh.name << "\", \"nocc\": " << sh.nocc << ", \"nvir\": " << sh.nvir()
         << ", \"naux\": " << sh.naux << ", \"run\": \"" << what << "\", \"precision\": \"" << prec
         << "\", \"first_call_seconds\": " << t.first << ", \"median_seconds\": " << t.median
         << ", \"gemm_seconds\": " << t.gemm << ", \"reduce_seconds\": " << t.reduce << ", \"gflops_needed\": " << gflops
         << ", \"cublas_all_pairs_gflops\": " << all_pairs << ", \"cublas_one_pair_gflops\": " << one_pair
         << ", \"energy\": " << t.energy << "},\n";
  };
  for (const GpuRun& run : gpu_runs(sizeof(Real) == 4, fused_kernels)) {
    const k::Backend backend = run.backend;
    const std::string& name = run.name;
    {
      k::GpuEnergyPlan plan = k::plan_gpu_energy({{sh.nocc, sh.nvir()}}, sh.naux, backend, precision,
                                                 k::gpu_properties().free_bytes / 10 * 9);
      plan.fused_kernel = run.fused;
      k::GpuEnergyEngine engine(plan);
      k::EnergyOptions options;
      options.gpu = &engine;
      row("gpu " + name, time_calls(reps, [&] { return k::mp2_energy(backend, view, sys.eps_occ, sys.eps_vir, options); }));
    }
    const std::size_t rows = (sh.nocc + 3) / 4;
    k::GpuEnergyPlan plan = k::plan_gpu_blocks({{sh.nocc, sh.nvir()}}, sh.naux, backend, precision,
                                               k::gpu_properties().free_bytes / 10 * 9, rows);
    plan.fused_kernel = run.fused;
    k::GpuEnergyEngine engine(plan);
    k::EnergyOptions options;
    options.gpu = &engine;
    row("gpu " + name + ", 4 blocks streamed", time_calls(reps, [&] { return blocked(backend, B, sys, rows, options); }));
  }
  if (cpu) {
    const k::EnergyOptions options;
    row("cpu auto, " + std::to_string(omp_get_max_threads()) + " threads",
        time_calls(1, [&] { return k::mp2_energy(k::Backend::automatic, view, sys.eps_occ, sys.eps_vir, options); }));
  }
}

// Growing shapes (nvir = 6·nocc, naux = 3·nvir): the CPU threads' best of three beside the GPU from
// a cold engine (its streams, cuBLAS handle and buffers, copying B, the call), fp64.
void threshold(std::ostream& json, std::ostream& md) {
  md << "\n## Crossover (fp64, nvir = 6·nocc, naux = 3·nvir)\n\n| nocc | nvir | naux | GFLOP | CPU s | GPU cold s | GPU "
        "warm s |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  json << "  ],\n  \"threshold\": [\n";
  const std::vector<std::size_t> sizes{4, 8, 12, 16, 24, 32, 40, 48};
  for (std::size_t n = 0; n < sizes.size(); ++n) {
    const b::ShapeSpec spec{"t", 7 * sizes[n], sizes[n], 18 * sizes[n]};
    const b::SyntheticSystem sys = b::make_synthetic(spec);
    const k::BiaView<double> view{sys.B.data(), spec.nocc, spec.nvir(), spec.naux, true};
    const k::EnergyOptions cpu;
    double cpu_best = 1e30;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = clock_type::now();
      k::mp2_energy(k::Backend::automatic, view, sys.eps_occ, sys.eps_vir, cpu);
      cpu_best = std::min(cpu_best, seconds_since(t0));
    }
    auto t0 = clock_type::now();
    k::GpuEnergyEngine engine(k::plan_gpu_energy({{spec.nocc, spec.nvir()}}, spec.naux, k::Backend::loop,
                                                 k::Precision::fp64, std::size_t(4) << 30));
    k::EnergyOptions options;
    options.gpu = &engine;
    k::mp2_energy(k::Backend::loop, view, sys.eps_occ, sys.eps_vir, options);
    const double cold = seconds_since(t0);
    t0 = clock_type::now();
    k::mp2_energy(k::Backend::loop, view, sys.eps_occ, sys.eps_vir, options);
    const double warm = seconds_since(t0);
    const double gflop = k::needed_flops(spec.nocc, spec.nvir(), spec.naux) * 1e-9;
    char line[200];
    std::snprintf(line, sizeof line, "| %zu | %zu | %zu | %.2f | %.4f | %.4f | %.4f |\n", spec.nocc, spec.nvir(),
                  spec.naux, gflop, cpu_best, cold, warm);
    md << line;
    json << "    {\"nocc\": " << spec.nocc << ", \"nvir\": " << spec.nvir() << ", \"naux\": " << spec.naux
         << ", \"gflop\": " << gflop << ", \"cpu_seconds\": " << cpu_best << ", \"gpu_cold_seconds\": " << cold
         << ", \"gpu_warm_seconds\": " << warm << "}" << (n + 1 < sizes.size() ? ",\n" : "\n");
  }
}

std::vector<k::FusedKernel> parse_fused_kernels(const std::string& list) {
  std::vector<k::FusedKernel> kernels;
  for (const std::string& name : b::comma_list(list)) kernels.push_back(k::parse_fused_kernel(name, "--fused-kernels"));
  return kernels;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> shapes{"small", "medium", "large"}, precisions{"fp64", "fp32"}, cpu_shapes;
  std::string out = "results/gpu/energy_gpu.json";
  int reps = 5;
  bool sweep = false;
  std::vector<k::FusedKernel> fused_kernels{k::FusedKernel::v1};
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto value = [&] { return b::option_value(argc, argv, a); };
    if (arg == "--shapes") shapes = b::comma_list(value());
    else if (arg == "--precisions") precisions = b::comma_list(value());
    else if (arg == "--cpu-shapes") cpu_shapes = b::comma_list(value());
    else if (arg == "--reps") reps = std::stoi(value());
    else if (arg == "--threshold") sweep = true;
    else if (arg == "--fused-kernels") fused_kernels = parse_fused_kernels(value());
    else if (arg == "--out") out = value();
    else throw std::invalid_argument("unknown option " + arg);
  }
  const k::GpuProperties gpu = k::gpu_properties();
  std::ostringstream json, md;
  json.precision(15);
  json << "{\n  \"generator\": \"bench_energy_gpu (bench/bench_energy_gpu.cpp)\",\n  \"gpu\": \"" << gpu.name
       << "\",\n  \"driver_version\": " << gpu.driver_version << ",\n  \"runtime_version\": " << gpu.runtime_version
       << ",\n  \"cpu_threads\": " << omp_get_max_threads() << ",\n  \"runs\": [\n";
  md << "# The energy step on the GPU: " << gpu.name << " (driver CUDA " << gpu.driver_version << ", runtime "
     << gpu.runtime_version << ")\n\nProduced by `bench_energy_gpu`. Needed work only, 2·nocc(nocc+1)/2·nvir²·naux; "
        "cuBLAS rates measured in the same run: all pairs as one GEMM (nocc·nvir)² × naux, and one pair's "
        "nvir² × naux. Times: the first call (copies B) and the median of "
     << reps << " more.\n\n| shape | run | prec | first s | median s | GFLOP/s | % of cuBLAS (all pairs) | % of cuBLAS "
        "(one pair) | E_OS + E_SS |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n";
  for (const std::string& name : shapes) {
    const b::SyntheticSystem sys = b::make_synthetic(b::find_shape(name));
    const bool cpu = std::find(cpu_shapes.begin(), cpu_shapes.end(), name) != cpu_shapes.end();
    for (const std::string& p : precisions) {
      if (k::parse_precision(p) == k::Precision::fp32) bench_shape<float>(sys, reps, cpu, fused_kernels, json, md);
      else bench_shape<double>(sys, reps, cpu, fused_kernels, json, md);
      std::cerr << md.str().substr(md.str().rfind("| " + name));
    }
  }
  if (sweep) threshold(json, md);
  else json << "  ],\n  \"threshold\": [\n";
  std::string text = json.str();
  if (const auto comma = text.rfind("},\n  ],"); comma != std::string::npos) text.erase(comma + 1, 1);
  text += "  ]\n}\n";
  std::ofstream(out) << text;
  std::ofstream(out.substr(0, out.rfind('.')) + ".md") << md.str();
  std::cout << md.str();
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_energy_gpu: error: " << e.what() << "\n";
  return 1;
}
