#include "src/run/driver.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include <omp.h>

#include "kernels/blas_kernels.hpp"
#include "kernels/gpu/stacked_jk.hpp"
#include "src/common/errors.hpp"
#include "src/gradient/mp2_gradient.hpp"
#include "src/integrals/libint.hpp"
#include "src/run/stages.hpp"

namespace dfmp2 {
namespace {

using Clock = std::chrono::steady_clock;

// Runs a named stage, recording its wall time, its MPI time, the most it drew from the budget
// and, from the work its product reports, its floor.
template <typename Stage>
auto timed(std::vector<StageTiming>& stages, const kernels::GemmRates& rates, MemoryBudget* budget, const char* name,
           Stage&& stage) {
  Communicator& comm = Communicator::world();
  const auto start = Clock::now();
  const double mpi_start = comm.mpi_seconds();
  if (budget != nullptr) budget->mark();
  auto product = stage();
  StageTiming timing{name, seconds_since(start), 0.0, comm.mpi_seconds() - mpi_start, 0, {}};
  if (budget != nullptr) timing.drawn_peak_bytes = budget->peak_since_mark();
  if constexpr (requires { product.work; }) timing.floor_seconds = product.work.floor_seconds(rates);
  if constexpr (requires { product.parts; }) timing.parts = product.parts;
  stages.push_back(timing);
  return product;
}

void describe_problem(const Problem& problem, RunResult& r) {
  r.molecule = problem.name;
  r.geometry = problem.molecule;
  r.natom = static_cast<int>(problem.molecule.atoms.size());
  r.basis = problem.basis;
  r.df_basis = problem.df_basis;
  r.jk_basis = problem.jk_basis;
  r.orbital_basis = OrbitalBasis{problem.obs, problem.orbital_basis.pure, problem.orbital_basis.ecp_by_Z};
  r.scf_type = problem.jk_aux ? ScfType::df : ScfType::exact;
  r.scf_energy_given = problem.e_scf_given.has_value();
  r.reference = problem.unrestricted ? Reference::uhf : Reference::rhf;
  r.nbf = static_cast<int>(problem.obs.nbf());
  r.naux = static_cast<int>(problem.aux.nbf());
  r.naux_jk = problem.jk_aux ? static_cast<int>(problem.jk_aux->nbf()) : 0;
  r.nfrozen = problem.nfrozen;
  r.nocc = problem.nocc - problem.nfrozen;
  if (problem.unrestricted) r.nocc_beta = problem.nocc_beta - problem.nfrozen;
  r.e_nuc = problem.e_nuc;
}

void describe_scf(ScfSolution&& scf, RunResult& r) {
  r.e_scf = scf.e_scf;
  r.s2 = scf.s2;
  r.scf_iterations = std::move(scf.iterations);
  r.nmo = static_cast<int>(scf.orbitals.C.cols());
  r.nvir = r.nmo - r.nocc - r.nfrozen;
  if (scf.orbitals.beta) r.nvir_beta = r.nmo - r.nocc_beta - r.nfrozen;
  r.orbitals = std::move(scf.orbitals);
}

void describe_given_tensor(const RunInput& input, RunResult& r) {
  r.molecule = input.molecule ? input.molecule->name : "";
  r.nocc = static_cast<int>(input.df->nocc);
  r.nvir = static_cast<int>(input.df->nvir);
  r.naux = static_cast<int>(input.df->naux);
}

// What every rank sent and held, for the report (collective).
std::vector<RankStats> rank_stats(std::size_t peak_b_bytes) {
  Communicator& comm = Communicator::world();
  const auto sent = comm.allgather(static_cast<double>(comm.bytes_sent()));
  const auto rss = comm.allgather(static_cast<double>(resource_usage().peak_rss_bytes));
  const auto b_bytes = comm.allgather(static_cast<double>(peak_b_bytes));
  std::vector<RankStats> stats;
  for (int r = 0; r < comm.size(); ++r) stats.push_back({sent[r], rss[r], b_bytes[r]});
  return stats;
}

// The plan on stderr before the long stages: what goes to disk, if anything, and the notes
// (how much of the DF-SCF tensor screening keeps), each once.
void announce(const RunPlan& plan, Progress& progress) {
  std::string line = "dfmp2: memory plan:";
  std::vector<std::string> notes;
  for (const StagePlan& stage : plan.stages()) {
    line += " " + stage.stage + " " + format_bytes(stage.ram_bytes());
    if (stage.disk_bytes() > 0) line += " + " + format_bytes(stage.disk_bytes()) + " on disk";
    line += ";";
    if (!stage.note.empty() && std::find(notes.begin(), notes.end(), stage.note) == notes.end())
      notes.push_back(stage.note);
  }
  line.pop_back();
  progress.message(line);
  for (const std::string& note : notes) progress.message("dfmp2: " + note);
}

// A gradient run's MP2 energy is its amplitude loop's (fp64): it runs no energy backend.
void check_energy_from_gradient(kernels::Backend backend, kernels::Precision precision) {
  if (backend != kernels::Backend::automatic || precision != kernels::Precision::fp64)
    throw InputError("--backend and --precision do not apply with --gradient: the gradient's amplitudes give the "
                     "MP2 energy, in fp64");
}

// What the DF-MP2 gradient does not cover yet is refused before the molecule is even sized, in one
// line.
void check_gradient_supported(const RunOptions& options) {
  const auto refuse = [](const std::string& what) {
    throw InputError("--gradient is not available for " + what + " (the DF-MP2 gradient covers RHF and UHF with "
                     "DF-SCF)");
  };
  if (options.scf_type != ScfType::df) refuse("--scf exact");
  check_energy_from_gradient(options.backend, options.precision);
}

// The run's record of the GPU a stage ran on, and the bytes it copied there.
RunResult::GpuUse gpu_use(const EnergyDevice& device, std::size_t uploaded_bytes) {
  return {device.properties, device.gemm_m, device.gemm_k, device.gemm_gflops, uploaded_bytes};
}

}  // namespace

struct PreparedRun::State {
  RunOptions options;
  Progress& progress;
  std::unique_ptr<MemoryBudget> budget;
  std::unique_ptr<ScratchDirectory> scratch;
  RunResult base;  // everything before the energy step
  BiaTensor df;                      // RHF, or UHF's α
  std::optional<BiaTensor> df_beta;  // UHF's β
  std::optional<EnergyPlan> energy_plan;  // the up-front plan's, for the options' backend and precision
  std::optional<Mp2EnergyParts> gradient_energy;  // --gradient: the MP2 energy its amplitudes gave
  double prepare_seconds = 0.0;

  RunContext context() { return {options, *budget, Communicator::world(), progress, *scratch, base.gemm_rates}; }

  // setup: the GEMM probe (which also has OpenBLAS allocate its buffers before the budget takes
  // its baseline), then the budget.
  RunContext start_budget() {
    base.gemm_rates = kernels::measure_gemm_rates();
    budget = std::make_unique<MemoryBudget>(options.memory_bytes ? options.memory_bytes : default_memory_budget());
    return context();
  }

  // The energy step's GEMM shape probed before its arrays exist (a 960-function molecule's takes
  // about 0.1 s).
  void probe_energy_shape(std::size_t nvir, std::size_t naux) {
    base.energy_gemm_probe = RunResult::EnergyGemmProbe{nvir, naux, kernels::measure_gemm_rates(nvir, nvir, naux, 2)};
  }

  // Energy only, from a given DF tensor.
  void prepare_given_tensor(const RunInput& input) {
    if (options.gradient) throw InputError("--gradient is not available for a given DF tensor (it needs the SCF)");
    df = timed(base.stages, base.gemm_rates, nullptr, "setup", [&] {
      const RunContext context = start_budget();
      probe_energy_shape(input.df->nvir, input.df->naux);
      return read_given_tensor(*input.df, context);
    });
    describe_given_tensor(input, base);
  }

  // setup: the problem, its checks and its memory plan, announced before any integral.
  Problem define_and_plan(const RunInput& input, RunPlan& plan) {
    return timed(base.stages, base.gemm_rates, nullptr, "setup", [&] {
      const RunContext context = start_budget();
      if (options.gradient) check_gradient_supported(options);
      Problem problem = define_problem(input, context);
      {
        const Progress::Step step(context.progress, "planning the run's memory");
        plan = plan_run(problem, context);
        check_plan(plan, context);
      }
      announce(plan, context.progress);
      if (!options.gradient)
        probe_energy_shape(problem.obs.nbf() - static_cast<std::size_t>(problem.nocc), problem.aux.nbf());
      return problem;
    });
  }

  // The gradient stage: the DF-MP2 gradient, its relaxed dipole and the energy its amplitudes give;
  // its amplitude loop's products (and the Z-vector's) on the GPU when the plan has them there, in
  // the GPU memory the SCF's J/K builds give back.
  void gradient_stage(const Problem& problem, const RunPlan& plan, Integrals& integrals, const ScfSolution& scf) {
    const RunContext context = this->context();
    const std::optional<kernels::GpuOffloadPlan>& gpu_plan = plan.mp2_gradient->gpu;
    if (integrals.fock) integrals.fock->release_gpu();  // the SCF's J/K builds are done
    const Mp2Gradient gradient = timed(base.stages, base.gemm_rates, budget.get(), "gradient", [&] {
      const std::unique_ptr<kernels::JKDevice> gpu =
          gpu_plan ? kernels::make_cuda_device(plan.mp2_gradient->gpu_device_bytes(), "the MP2 gradient") : nullptr;
      Mp2GradientInput in{problem.obs,      problem.aux,        *problem.jk_aux,     problem.pairs,
                          problem.molecule, scf.orbitals,       *plan.mp2_gradient, &context.scratch,
                          options.scf.d_convergence_for(scf.orbitals.spin_count()),
                          context.progress,     &problem.orbital_basis};
      in.gpu = gpu.get();
      return density_fitted_mp2_gradient(in, *integrals.fock, *budget, context.comm);
    });
    if (gpu_plan) {
      base.device = kernels::Device::gpu;
      base.gpu = gpu_use(plan.mp2.device, gradient.gpu_uploaded_bytes);
    }
    base.gradient = gradient.gradient;
    base.mp2_dipole_moment = gradient.dipole;
    gradient_energy = gradient.energy;
  }

  // The stages from the molecule: integrals, SCF, then the gradient or the DF transform.
  void prepare_molecule(const RunInput& input) {
    const Libint2Session libint2;
    RunPlan plan;
    const Problem problem = define_and_plan(input, plan);
    base.memory_plan = plan.stages();
    const RunContext context = this->context();
    std::vector<StageTiming>& stages = base.stages;
    Integrals integrals = timed(stages, base.gemm_rates, budget.get(), "integrals",
                                [&] { return compute_integrals(problem, plan, context); });
    ScfSolution scf = timed(stages, base.gemm_rates, budget.get(), "scf",
                            [&] { return solve_scf(problem, integrals, input.orbitals, context); });
    if (options.gradient) {
      gradient_stage(problem, plan, integrals, scf);
    } else {
      integrals.fock.reset();  // frees the DF-SCF tensor before the DF transform draws its own
      Transformed mo = timed(stages, base.gemm_rates, budget.get(), "df_transform",
                             [&] { return transform_to_mo(problem, plan, scf.orbitals, context); });
      energy_plan = plan.mp2;
      df = std::move(mo.df);
      df_beta = std::move(mo.df_beta);
      base.df_transform_batches = mo.batches;
    }
    describe_problem(problem, base);
    describe_scf(std::move(scf), base);
  }
};

PreparedRun::PreparedRun(const RunInput& input, const RunOptions& options, Progress& progress)
    : state_(new State{options, progress, nullptr, nullptr, {}, {}, {}, {}, {}, 0.0}) {
  State& s = *state_;
  const auto start = Clock::now();
  RunResult& r = s.base;
  r.threads = omp_get_max_threads();
  r.ranks = Communicator::world().size();
  r.blas_kernels = kernels::blas_kernel_name();
  if (const std::string why = kernels::blas_kernels_narrower_than_cpu(); !why.empty())
    progress.message("dfmp2: note: " + why);
  // The scratch directory is checked first: a run that cannot use it stops before any work.
  s.scratch = std::make_unique<ScratchDirectory>(options.scratch.empty() ? default_scratch_path() : options.scratch);
  r.scratch_path = s.scratch->path();
  r.scratch_free_bytes = s.scratch->free_bytes();
  if (input.df)
    s.prepare_given_tensor(input);
  else
    s.prepare_molecule(input);
  s.prepare_seconds = seconds_since(start);
}

PreparedRun::~PreparedRun() = default;

const RunResult& PreparedRun::result() const { return state_->base; }

RunResult PreparedRun::energy(kernels::Backend backend, kernels::Precision precision,
                              std::optional<kernels::Device> device) {
  State& s = *state_;
  RunResult r = s.base;
  const RunContext context = s.context();
  const auto start = Clock::now();
  Mp2EnergyParts parts;
  r.precision = precision;
  if (s.gradient_energy) {
    check_energy_from_gradient(backend, precision);
    parts = *s.gradient_energy;
  } else {
    const Mp2Energy energy = timed(r.stages, r.gemm_rates, s.budget.get(), "energy", [&] {
      const kernels::Device on = device.value_or(s.options.device);
      const bool as_planned = s.energy_plan && backend == s.options.backend && precision == s.options.precision &&
                              on == s.options.device;
      return mp2_energy(s.df, s.df_beta,
                        as_planned ? *s.energy_plan : plan_energy_step(s.df, s.df_beta, backend, precision, on, context),
                        context);
    });
    const kernels::EnergyResult& e = energy.distributed.energy;
    parts = {e.e_os, e.e_ss, energy.distributed.e_aa, energy.distributed.e_bb};
    r.backend = energy.backend;
    r.energy_gemm_seconds = e.gemm_seconds;
    r.energy_reduction_seconds = e.reduce_seconds;
    r.energy_flops = energy.needed_flops;
    for (StagePlan& stage : r.memory_plan)  // the plan of the step that ran (another backend or device)
      if (stage.stage == "energy") {
        stage.blocks = energy.plan.blocks;
        stage.read_bytes = energy.plan.read_bytes;
        stage.note = energy.plan.note;
      }
    r.peak_b_bytes = energy.distributed.peak_b_bytes;
    if (energy.gpu) {
      r.device = kernels::Device::gpu;
      r.gpu = gpu_use(*energy.gpu, energy.distributed.gpu_uploaded_bytes);
    }
  }
  r.total_seconds = s.prepare_seconds + seconds_since(start);
  r.e_os = parts.os;
  r.e_ss = parts.ss;
  r.e_aa = parts.aa;
  r.e_bb = parts.bb;
  r.e_corr = parts.total();
  r.e_scs_corr = 1.2 * parts.os + parts.ss / 3.0;
  r.e_total = r.e_scf + r.e_corr;
  r.rank_stats = rank_stats(r.peak_b_bytes);
  r.memory_limit = s.budget->limit();
  r.memory_baseline = s.budget->baseline();
  r.memory_peak_drawn = s.budget->peak_drawn();
  r.resources = resource_usage();
  r.scratch_written_bytes = ScratchFile::total_written();
  r.scratch_read_bytes = ScratchFile::total_read();
  return r;
}

RunResult run(const RunInput& input, const RunOptions& options, Progress& progress) {
  PreparedRun prepared(input, options, progress);
  return prepared.energy(options.backend, options.precision);
}

}  // namespace dfmp2
