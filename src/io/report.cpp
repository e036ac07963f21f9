#include "src/io/report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <optional>

#include "src/common/memory.hpp"

namespace dfmp2 {
namespace {

std::string fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// The SCF iterations and, for UHF, ⟨S²⟩ beside S(S+1).
void print_scf(std::ostream& out, const RunResult& r) {
  if (!r.scf_iterations.empty()) {
    out << "SCF (" << scf_type_name(r) << (r.unrestricted() ? ", UHF" : "")
        << ")\n  iter         energy / Eh          ΔE / Eh      |grad|\n";
    for (const ScfIteration& it : r.scf_iterations) {
      char line[128];
      std::snprintf(line, sizeof line, "  %4d  %20.12f  %14.6e  %10.3e%s\n", it.iteration, it.energy,
                    it.delta_e, it.gradient_rms, it.fp32 ? "  fp32 K" : "");
      out << line;
    }
    out << "\n";
  }
  if (r.unrestricted() && r.geometry) {
    const double S = 0.5 * (r.geometry->multiplicity - 1);
    out << "<S^2> " << fixed(r.s2, 6) << "  (S(S+1) = " << fixed(S * (S + 1.0), 6) << ")\n\n";
  }
}

void print_energies(std::ostream& out, const RunResult& r) {
  out << "Energies / Eh\n";
  auto row = [&](const char* label, double value) {
    out << "  " << std::setw(28) << std::left << label << std::right << std::setw(22)
        << fixed(value, 10) << "\n";
  };
  if (r.geometry) {
    row("nuclear repulsion", r.e_nuc);
    row("SCF", r.e_scf);
  }
  if (r.unrestricted()) {
    row("MP2 same-spin alpha-alpha", r.e_aa);
    row("MP2 same-spin beta-beta", r.e_bb);
  }
  row("MP2 same-spin", r.e_ss);
  row("MP2 opposite-spin", r.e_os);
  row("MP2 correlation", r.e_corr);
  row("SCS-MP2 correlation", r.e_scs_corr);
  if (r.geometry) {
    row("MP2 total", r.e_total);
    row("SCS-MP2 total", r.e_scf + r.e_scs_corr);
  }
}

// --gradient: dE/dR per atom, in the input's order and frame.
// The energy step's rate (its needed flops over its wall time) beside the GEMM probed at its own
// shape in the precision it ran, GFLOP/s; none for a run without both.
struct EnergyRate {
  double step = 0.0, probe = 0.0;
};
std::optional<EnergyRate> energy_rate(const RunResult& r) {
  const auto stage = std::find_if(r.stages.begin(), r.stages.end(), [](const StageTiming& s) { return s.name == "energy"; });
  if (!r.energy_gemm_probe || stage == r.stages.end() || stage->seconds <= 0.0 || r.energy_flops <= 0.0)
    return std::nullopt;
  const kernels::GemmRates& probe = r.energy_gemm_probe->rates;
  if (r.gpu) return EnergyRate{r.energy_flops / stage->seconds / 1e9, r.gpu->gemm_gflops};
  return EnergyRate{r.energy_flops / stage->seconds / 1e9,
                    r.precision == kernels::Precision::fp32 ? probe.fp32_gflops : probe.fp64_gflops};
}

void print_gradient(std::ostream& out, const RunResult& r) {
  if (!r.gradient || !r.geometry) return;
  char line[128];
  std::snprintf(line, sizeof line, "\nDF-MP2 gradient (Eh/bohr) %17s %18s %18s\n", "x", "y", "z");
  out << line;
  for (Eigen::Index a = 0; a < r.gradient->rows(); ++a) {
    const std::string label = atom_label(r.geometry->atoms[static_cast<std::size_t>(a)]);
    std::snprintf(line, sizeof line, "  %-24s %18.12f %18.12f %18.12f\n", label.c_str(), (*r.gradient)(a, 0),
                  (*r.gradient)(a, 1), (*r.gradient)(a, 2));
    out << line;
  }
  if (!r.mp2_dipole_moment) return;
  const Eigen::Vector3d& mu = *r.mp2_dipole_moment;
  std::snprintf(line, sizeof line, "\nRelaxed DF-MP2 dipole (e·bohr, origin 0) %8.6f %12.6f %12.6f   |μ| %.6f\n",
                mu(0), mu(1), mu(2), mu.norm());
  out << line;
}

// The reference and multiplicity, UHF's keys (β sizes, ⟨S²⟩, the energies by spin pair) and the
// orbital energies.
void add_spin_keys(nlohmann::json& j, const RunResult& r) {
  j["reference"] = name_of(r.reference);
  if (r.geometry) j["multiplicity"] = r.geometry->multiplicity;
  if (r.unrestricted()) {
    j["nocc_beta"] = r.nocc_beta;
    j["nvir_beta"] = r.nvir_beta;
    for (const auto& [key, value] :
         {std::pair<const char*, double>{"s2", r.s2}, {"e_aa", r.e_aa}, {"e_bb", r.e_bb}, {"e_ab", r.e_os}})
      j[key] = value;
  }
  if (r.orbitals) {
    j["mo_energies"] = std::vector<double>(r.orbitals->eps.begin(), r.orbitals->eps.end());
    if (r.orbitals->beta)
      j["mo_energies_beta"] = std::vector<double>(r.orbitals->beta->eps.begin(), r.orbitals->beta->eps.end());
  }
}

// The most the stage drew from the budget at once (0 for a stage that did not run).
std::size_t drawn_peak_bytes(const RunResult& r, const std::string& stage) {
  for (const StageTiming& timing : r.stages)
    if (timing.name == stage) return timing.drawn_peak_bytes;
  return 0;
}

// Each stage's planned memory and disk beside what it drew, its blocks, and the scratch I/O.
void print_memory_plan(std::ostream& out, const RunResult& r) {
  if (r.memory_plan.empty()) return;
  out << "\nMemory plan (--memory " << format_bytes(r.memory_limit) << ", " << format_bytes(r.memory_baseline)
      << " held at start; scratch " << r.scratch_path << ", " << format_bytes(r.scratch_free_bytes) << " free)\n";
  for (const StagePlan& stage : r.memory_plan) {
    out << "  " << std::setw(14) << std::left << stage.stage << std::right << " memory " << std::setw(10)
        << format_bytes(stage.ram_bytes()) << " (drew " << format_bytes(drawn_peak_bytes(r, stage.stage)) << ")   disk " << std::setw(10)
        << format_bytes(stage.disk_bytes());
    if (stage.gpu_bytes() > 0) out << "   GPU " << format_bytes(stage.gpu_bytes());
    if (stage.read_bytes > 0) out << "   reads " << format_bytes(stage.read_bytes) << " per " << stage.read_per;
    out << "\n";
    for (const PlannedBlock& block : stage.blocks)
      out << "      " << std::setw(10) << format_bytes(block.bytes)
          << (block.on_gpu ? " on GPU   " : block.on_disk ? " on disk  " : " in memory") << "  " << block.what << "\n";
    if (!stage.note.empty()) out << "      (" << stage.note << ")\n";
  }
  out << "Scratch I/O: " << format_bytes(r.scratch_written_bytes) << " written, " << format_bytes(r.scratch_read_bytes)
      << " read\n";
}

nlohmann::json memory_json(const RunResult& r) {
  nlohmann::json plan = nlohmann::json::array();
  for (const StagePlan& stage : r.memory_plan) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const PlannedBlock& block : stage.blocks)
      blocks.push_back(
          {{"what", block.what}, {"bytes", block.bytes}, {"on_disk", block.on_disk}, {"on_gpu", block.on_gpu}});
    plan.push_back({{"stage", stage.stage},
                    {"ram_bytes", stage.ram_bytes()},
                    {"disk_bytes", stage.disk_bytes()},
                    {"gpu_bytes", stage.gpu_bytes()},
                    {"drawn_peak_bytes", drawn_peak_bytes(r, stage.stage)},
                    {"read_bytes", stage.read_bytes},
                    {"read_per", stage.read_per},
                    {"note", stage.note},
                    {"blocks", blocks}});
  }
  return {{"limit_bytes", r.memory_limit},
          {"baseline_bytes", r.memory_baseline},
          {"peak_drawn_bytes", r.memory_peak_drawn},
          {"df_transform_batches", r.df_transform_batches},
          {"plan", plan},
          {"scratch",
           {{"path", r.scratch_path},
            {"free_bytes", r.scratch_free_bytes},
            {"written_bytes", r.scratch_written_bytes},
            {"read_bytes", r.scratch_read_bytes}}}};
}

void print_molecule(std::ostream& out, const RunResult& r) {
  if (r.geometry) {
    out << "Molecule " << r.molecule << "  (" << r.natom << " atoms, charge " << r.geometry->charge;
    if (r.geometry->multiplicity != 1) out << ", multiplicity " << r.geometry->multiplicity;
    out << ")\n";
    for (const Atom& atom : r.geometry->atoms)
      out << "  " << std::setw(2) << std::left << atom_label(atom) << std::right << "  "
          << std::setw(14) << fixed(atom.r[0], 8) << std::setw(14) << fixed(atom.r[1], 8)
          << std::setw(14) << fixed(atom.r[2], 8) << "  bohr\n";
    out << "Basis " << (r.basis.empty() ? "given with the orbitals" : r.basis) << "   DF (MP2) " << r.df_basis;
    if (!r.jk_basis.empty()) out << "   DF (SCF) " << r.jk_basis;
    out << "\n";
  } else {
    out << "Energy only, from the given DF tensor\n";
  }
  out << "  nbf " << r.nbf << "  naux " << r.naux << "  naux_jk " << r.naux_jk;
  if (r.unrestricted())
    out << "  nocc " << r.nocc << " α " << r.nocc_beta << " β  nvir " << r.nvir << " α " << r.nvir_beta << " β";
  else
    out << "  nocc " << r.nocc << "  nvir " << r.nvir;
  out << "  nfrozen " << r.nfrozen << "\n\n";
}

// Where the energy step ran: backend, precision, threads, ranks, BLAS kernels, the GPU (with
// --gradient: the one its amplitude loop's and Z-vector's products ran on).
void print_execution(std::ostream& out, const RunResult& r) {
  out << (r.backend ? "\nEnergy backend " + name_of(*r.backend) : "\nMP2 energy from the gradient's amplitudes")
      << " (" << name_of(r.precision) << "), " << r.threads << " threads"
      << (r.ranks > 1 ? " × " + std::to_string(r.ranks) + " MPI ranks" : "") << ", OpenBLAS kernels "
      << r.blas_kernels << "\n";
  if (r.gpu) {
    const kernels::GpuProperties& g = r.gpu->properties;
    out << (r.backend ? "Energy step" : "The gradient's products") << " on GPU " << g.index << ": " << g.name
        << " (compute capability " << g.compute_major << "." << g.compute_minor << ", "
        << format_bytes(g.total_bytes) << ", driver CUDA " << g.driver_version / 1000 << "."
        << g.driver_version % 1000 / 10 << ", runtime " << g.runtime_version / 1000 << "."
        << g.runtime_version % 1000 / 10 << ")\n";
  }
  char rates[128];
  std::snprintf(rates, sizeof rates, "GEMM rate at start-up: %.1f GFLOP/s fp64, %.1f GFLOP/s fp32\n\n",
                r.gemm_rates.fp64_gflops, r.gemm_rates.fp32_gflops);
  out << rates;
}

// Each stage beside its floor (its GEMM work at the measured GEMM rate plus libint2's own time),
// the total, peak RSS and page faults.
void print_stages(std::ostream& out, const RunResult& r) {
  out << "Stage                  wall / s    floor / s   wall/floor\n";
  for (const StageTiming& stage : r.stages) {
    char line[128];
    if (stage.floor_seconds > 0.0)
      std::snprintf(line, sizeof line, "  %-18s %10.3f   %10.3f   %8.2f\n", stage.name.c_str(), stage.seconds,
                    stage.floor_seconds, stage.seconds / stage.floor_seconds);
    else
      std::snprintf(line, sizeof line, "  %-18s %10.3f\n", stage.name.c_str(), stage.seconds);
    out << line;
    for (const StagePart& part : stage.parts) {  // within the stage's time, not beside it
      std::snprintf(line, sizeof line, "    of which %-7s %10.3f\n", part.name.c_str(), part.seconds);
      out << line;
    }
  }
  char total[160];
  std::snprintf(total, sizeof total, "  %-18s %10.3f\nPeak RSS %s, page faults %ld minor / %ld major\n", "total",
                r.total_seconds, format_bytes(r.resources.peak_rss_bytes).c_str(), r.resources.minor_faults,
                r.resources.major_faults);
  out << total;
}

// The energy step's rate beside the GEMM it is measured against: cuBLAS's on a GPU, else
// OpenBLAS's at the step's own shape.
void print_energy_rate(std::ostream& out, const RunResult& r) {
  const auto rate = energy_rate(r);
  if (!rate) return;
  const char* gemm = r.precision == kernels::Precision::fp32 ? "SGEMM" : "DGEMM";
  char line[300];
  if (r.gpu)
    std::snprintf(line, sizeof line,
                  "Energy step on the GPU: %.1f GFLOP/s (needed work), %.1f %% of cuBLAS %s at %zu × %zu × %zu "
                  "(%.1f GFLOP/s, probed at start-up); %s of B_ia^P copied to it\n",
                  rate->step, 100.0 * rate->step / rate->probe, gemm, r.gpu->gemm_m, r.gpu->gemm_m, r.gpu->gemm_k,
                  rate->probe, format_bytes(r.gpu->uploaded_bytes).c_str());
  else
    std::snprintf(line, sizeof line,
                  "Energy step %.1f GFLOP/s (needed work), %.1f %% of %s at its shape %zu × %zu × %zu (%.1f GFLOP/s, "
                  "probed at start-up)\n",
                  rate->step, 100.0 * rate->step / rate->probe, gemm, r.energy_gemm_probe->nvir,
                  r.energy_gemm_probe->nvir, r.energy_gemm_probe->naux, rate->probe);
  out << line;
}

// The molecule's sizes, the energies and, with --gradient, the gradient and relaxed dipole.
void add_chemistry_keys(nlohmann::json& j, const RunResult& r) {
  j["molecule"] = r.molecule;
  for (const auto& [key, value] : {std::pair<const char*, int>{"natom", r.natom}, {"nbf", r.nbf}, {"nmo", r.nmo},
                                   {"naux", r.naux}, {"naux_jk", r.naux_jk}, {"nocc", r.nocc}, {"nvir", r.nvir},
                                   {"nfrozen", r.nfrozen}})
    j[key] = value;
  j["basis"] = r.basis;
  j["df_basis"] = r.df_basis;
  j["jk_basis"] = r.jk_basis;
  j["scf_type"] = scf_type_name(r);
  add_spin_keys(j, r);
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"e_nuc", r.e_nuc}, {"e_scf", r.e_scf}, {"e_ss", r.e_ss}, {"e_os", r.e_os},
        {"e_corr", r.e_corr}, {"e_scs_corr", r.e_scs_corr}, {"e_total", r.e_total}})
    j[key] = value;
  if (r.gradient) {
    nlohmann::json rows = nlohmann::json::array();
    for (Eigen::Index a = 0; a < r.gradient->rows(); ++a)
      rows.push_back({(*r.gradient)(a, 0), (*r.gradient)(a, 1), (*r.gradient)(a, 2)});
    j["gradient"] = rows;
  }
  if (r.mp2_dipole_moment) {  // e·bohr about the origin
    const Eigen::Vector3d& mu = *r.mp2_dipole_moment;
    j["mp2_dipole_moment"] = {mu(0), mu(1), mu(2)};
  }
  j["scf_iterations"] = r.scf_iterations.size();
  nlohmann::json jk_seconds = nlohmann::json::array();
  for (const ScfIteration& it : r.scf_iterations) jk_seconds.push_back(it.jk_seconds);
  j["scf_jk_seconds"] = jk_seconds;
  j["scf_fp32_iterations"] = std::count_if(r.scf_iterations.begin(), r.scf_iterations.end(),
                                           [](const ScfIteration& it) { return it.fp32; });
}

// Backend, precision, device and GPU, threads, ranks and what each rank sent and held.
void add_execution_keys(nlohmann::json& j, const RunResult& r) {
  j["backend"] = backend_name(r);
  j["precision"] = name_of(r.precision);
  j["device"] = name_of(r.device);
  if (r.gpu) {
    const kernels::GpuProperties& g = r.gpu->properties;
    j["gpu"] = {{"index", g.index},
                {"name", g.name},
                {"compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
                {"memory_bytes", g.total_bytes},
                {"driver_version", g.driver_version},
                {"runtime_version", g.runtime_version},
                {"gemm", {{"m", r.gpu->gemm_m}, {"n", r.gpu->gemm_m}, {"k", r.gpu->gemm_k}, {"gflops", r.gpu->gemm_gflops}}},
                {"uploaded_bytes", r.gpu->uploaded_bytes}};
  }
  j["threads"] = r.threads;
  j["blas_kernels"] = r.blas_kernels;
  j["ranks"] = r.ranks;
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankStats& stats : r.rank_stats)
    ranks.push_back({{"bytes_sent", stats.bytes_sent},
                     {"peak_rss_bytes", stats.peak_rss},
                     {"peak_b_bytes", stats.peak_b}});
  j["rank_stats"] = ranks;
}

// Stage timings and floors, the start-up GEMM rates and the energy step's rate at its own shape.
void add_timing_keys(nlohmann::json& j, const RunResult& r) {
  nlohmann::json timings = nlohmann::json::object(), floors = nlohmann::json::object();
  for (const StageTiming& stage : r.stages) {
    timings[stage.name] = stage.seconds;
    if (r.ranks > 1) timings[stage.name + "_mpi"] = stage.mpi_seconds;
    if (stage.floor_seconds > 0.0) floors[stage.name] = stage.floor_seconds;
    for (const StagePart& part : stage.parts) timings[stage.part_key(part)] = part.seconds;
  }
  if (r.energy_gemm_seconds > 0.0) timings["energy_gemm"] = r.energy_gemm_seconds;
  if (r.energy_reduction_seconds > 0.0) timings["energy_reduction"] = r.energy_reduction_seconds;
  timings["total"] = r.total_seconds;
  for (const char* stage : {"setup", "integrals", "scf", "df_transform", "energy"})
    if (!timings.contains(stage)) timings[stage] = 0.0;
  j["timings"] = timings;
  j["floors"] = floors;
  j["gemm_gflops"] = {{"fp64", r.gemm_rates.fp64_gflops}, {"fp32", r.gemm_rates.fp32_gflops}};
  if (!r.energy_gemm_probe) return;
  const RunResult::EnergyGemmProbe& probe = *r.energy_gemm_probe;
  j["energy_gemm_probe"] = {{"m", probe.nvir},
                            {"n", probe.nvir},
                            {"k", probe.naux},
                            {"fp64_gflops", probe.rates.fp64_gflops},
                            {"fp32_gflops", probe.rates.fp32_gflops}};
  if (const auto rate = energy_rate(r)) {
    j["energy_gemm_probe"]["energy_gflops"] = rate->step;
    j["energy_gemm_probe"]["fraction"] = rate->step / rate->probe;
  }
}

}  // namespace

void print_report(std::ostream& out, const RunResult& r) {
  out << "dfmp2 — density-fitted MP2\n\n";
  print_molecule(out, r);
  print_scf(out, r);
  print_energies(out, r);
  print_gradient(out, r);
  print_execution(out, r);
  print_stages(out, r);
  print_energy_rate(out, r);
  print_memory_plan(out, r);
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json j;
  add_chemistry_keys(j, r);
  add_execution_keys(j, r);
  add_timing_keys(j, r);
  j["resources"] = {{"peak_rss_bytes", r.resources.peak_rss_bytes},
                    {"minor_page_faults", r.resources.minor_faults},
                    {"major_page_faults", r.resources.major_faults}};
  j["memory"] = memory_json(r);
  return j;
}

}  // namespace dfmp2
