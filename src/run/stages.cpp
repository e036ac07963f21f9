#include "src/run/stages.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <omp.h>

#include "kernels/gpu/gpu_energy.hpp"
#include "kernels/gpu/gpu_jk_plan.hpp"
#include "src/common/errors.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/shell_ranges.hpp"
#include "src/io/ao_conventions.hpp"
#include "src/mp2/df_transform.hpp"
#include "src/scf/df_fock.hpp"
#include "src/integrals/four_index.hpp"
#include "src/scf/exact_fock.hpp"
#include "src/scf/rhf.hpp"
#include "src/scf/sad_guess.hpp"

namespace dfmp2 {
namespace {

std::string choose(const std::optional<std::string>& option, const std::string& stored, const std::string& fallback) {
  if (option && !option->empty()) return *option;
  if (!stored.empty()) return stored;
  return fallback;
}

// The auxiliary set Psi4 pairs with the orbital basis; an orbital basis given without a name
// (Molden, TREXIO) has none, so the user must name it.
std::string default_auxiliary(const std::string& basis, std::string (*rule)(const std::string&), const RunInput& input,
                              const std::string& option) {
  if (!basis.empty()) return rule(basis);
  throw InputError("'" + input.path + "' does not name its orbital basis: give the auxiliary set with " + option);
}

Eigen::Map<const Eigen::VectorXd> as_vector(const std::vector<double>& v) {
  return {v.data(), static_cast<Eigen::Index>(v.size())};
}

// MP2's denominators ε_a + ε_b − ε_i − ε_j must be positive: every virtual above every occupied.
void require_energy_gap(Eigen::Ref<const Eigen::VectorXd> eps_occ, Eigen::Ref<const Eigen::VectorXd> eps_vir,
                        const std::string& source) {
  if (eps_occ.size() == 0 || eps_vir.size() == 0) return;
  const double homo = eps_occ.maxCoeff(), lumo = eps_vir.minCoeff();
  if (!(lumo > homo)) {
    char numbers[96];
    std::snprintf(numbers, sizeof numbers, "highest occupied %.6f Eh, lowest virtual %.6f Eh", homo, lumo);
    throw InputError(source + " have no occupied-virtual gap (" + numbers +
                     "): MP2 needs every virtual orbital above every occupied one");
  }
}

void check_spin_orbitals(const SpinOrbitals& orbitals, const Eigen::MatrixXd& S, const std::string& name) {
  if (!std::is_sorted(orbitals.eps.data(), orbitals.eps.data() + orbitals.eps.size()))
    throw InputError(name + " are not sorted by orbital energy");
  constexpr double kTolerance = 1e-8;
  if (const double error = orthonormality_error(orbitals.C, S); !(error <= kTolerance)) {
    char detail[64];
    std::snprintf(detail, sizeof detail, "max |C^T S C - 1| = %.1e > %.0e", error, kTolerance);
    throw InputError(name + " are not orthonormal in the basis's overlap (" + detail +
                     "): they do not belong to this molecule and basis");
  }
  require_energy_gap(orbitals.eps.head(orbitals.nocc), orbitals.eps.tail(orbitals.eps.size() - orbitals.nocc), name);
}

// Orbitals from the input (/scf, Molden, TREXIO) must fit the problem and be canonical SCF
// orbitals' shape; checked before any integral beyond the overlap.
void check_given_orbitals(const Orbitals& orbitals, const Problem& problem) {
  const std::size_t nbf = problem.obs.nbf();
  if (static_cast<std::size_t>(orbitals.C.rows()) != nbf)
    throw InputError("given orbitals have " + std::to_string(orbitals.C.rows()) + " rows but the basis has " +
                     std::to_string(nbf) + " functions");
  if (orbitals.unrestricted() != problem.unrestricted)
    throw InputError(std::string("given orbitals are ") + (orbitals.unrestricted() ? "UHF's (α and β)" : "RHF's") +
                     " but the run is " + (problem.unrestricted ? "UHF" : "RHF"));
  if (orbitals.nocc != problem.nocc)
    throw InputError("given orbitals have nocc = " + std::to_string(orbitals.nocc) + " but the molecule has " +
                     std::to_string(problem.nocc) + (problem.unrestricted ? " α" : " doubly") + " occupied orbitals");
  if (problem.unrestricted && orbitals.beta->nocc != problem.nocc_beta)
    throw InputError("given orbitals have nocc_beta = " + std::to_string(orbitals.beta->nocc) +
                     " but the molecule has " + std::to_string(problem.nocc_beta) + " β occupied orbitals");
  const Eigen::MatrixXd S = overlap_matrix(problem.obs);
  check_spin_orbitals(orbitals, S, orbitals.unrestricted() ? "the given α orbitals" : "the given orbitals");
  if (orbitals.beta) check_spin_orbitals(*orbitals.beta, S, "the given β orbitals");
}

// Electrons beyond what the basis can hold are refused before anything is sized from them.
void check_occupation(const Problem& problem, std::size_t nbf) {
  if (static_cast<std::size_t>(problem.nocc) > nbf)
    throw InputError(std::to_string(electron_count(problem.molecule)) + " electrons need " +
                     std::to_string(problem.nocc) + (problem.unrestricted ? " α" : " doubly occupied") +
                     " orbitals, but the basis has " + std::to_string(nbf) + " functions");
}

// The active orbitals of one spin (RHF: the one set) for the transform.
TransformSpin transform_spin(const Problem& problem, const SpinOrbitals& orbitals) {
  const int nactive = orbitals.nocc - problem.nfrozen;
  const int nvir = static_cast<int>(orbitals.C.cols()) - orbitals.nocc;
  return {orbitals.C.middleCols(problem.nfrozen, nactive), orbitals.C.rightCols(nvir),
          orbitals.eps.segment(problem.nfrozen, nactive), orbitals.eps.tail(nvir)};
}

void report_iteration(Progress& progress, const ScfIteration& it) {
  char line[112];
  std::snprintf(line, sizeof line, "SCF iter %3d  E = %20.12f  dE = %10.3e  |grad| = %9.3e%s", it.iteration,
                it.energy, it.delta_e, it.gradient_rms, it.fp32 ? "  (fp32 K)" : "");
  progress.message(line);
}

void resolve_basis_names(const RunInput& input, const RunOptions& options, Problem& p) {
  if (input.orbital_basis && options.basis)
    throw InputError("the orbital basis comes with the orbitals in '" + input.path + "': --basis cannot replace it");
  p.basis = choose(options.basis, input.basis, "");
  if (p.basis.empty() && !input.orbital_basis)
    throw InputError("no basis set given: use --basis NAME or the 'basis' attribute");
  p.df_basis = choose(options.df_basis, input.df_basis, "");
  if (p.df_basis.empty()) p.df_basis = default_auxiliary(p.basis, default_df_basis, input, "--df-basis NAME");
  if (options.scf_type == ScfType::df && !p.e_scf_given) {
    p.jk_basis = choose(options.jk_basis, input.jk_basis, "");
    if (p.jk_basis.empty()) p.jk_basis = default_auxiliary(p.basis, default_jk_basis, input, "--jk-basis NAME (or --scf exact)");
  }
}

// The auxiliary sets as loaded, and every set's size on the molecule.
struct LoadedSets {
  BasisSetData aux;
  std::optional<BasisSetData> jk;
  BasisCount obs_count, aux_count;
};

// Every basis set is loaded and counted on the molecule (its elements checked) before any is
// placed: a bad one fails at once, and a molecule too large is refused before its shells are
// made (a 100,000-atom molecule's take seconds and gigabytes).
LoadedSets load_basis_sets(const RunInput& input, Problem& p) {
  LoadedSets sets;
  if (input.orbital_basis) {  // its spherical/Cartesian choice and potentials (no SAD guess: orbitals given)
    p.orbital_basis.pure = input.orbital_basis->pure;
    p.orbital_basis.ecp_by_Z = input.orbital_basis->potentials;
    sets.obs_count = {input.orbital_basis->shells.size(), static_cast<std::size_t>(input.orbital_basis->shells.nbf())};
  } else {
    p.orbital_basis = load_basis(p.basis, BasisRole::orbital);
  }
  sets.aux = load_basis(p.df_basis, BasisRole::auxiliary);
  if (!p.jk_basis.empty()) sets.jk = load_basis(p.jk_basis, BasisRole::auxiliary);
  if (!input.orbital_basis) sets.obs_count = count_on(p.orbital_basis, p.molecule);
  sets.aux_count = count_on(sets.aux, p.molecule);
  // As Psi4 1.3 does, the SCF fitting set takes the orbital set's spherical/Cartesian choice.
  if (sets.jk) count_on(*sets.jk, p.molecule, p.orbital_basis.pure);
  return sets;
}

void place_basis_sets(const RunInput& input, const LoadedSets& sets, Problem& p) {
  p.obs = input.orbital_basis ? input.orbital_basis->shells : place_on(p.orbital_basis, p.molecule);
  p.aux = place_on(sets.aux, p.molecule);
  if (sets.jk) p.jk_aux = place_on(*sets.jk, p.molecule, p.orbital_basis.pure);
}

// The sizes of each spin's transform and energy step, before the SCF: nvir at most (linear
// dependencies only remove virtuals).
std::vector<TransformSizes> transform_sizes(const Problem& problem, std::size_t nbf) {
  std::vector<TransformSizes> spins{{std::size_t(problem.nocc - problem.nfrozen), nbf - problem.nocc}};
  if (problem.unrestricted) spins.push_back({std::size_t(problem.nocc_beta - problem.nfrozen), nbf - problem.nocc_beta});
  return spins;
}

// What the sizes alone say the run needs, refused before anything that grows faster than the atom
// count (the nuclear repulsion, the shell pairs, the plan): the shell-pair tables and the SCF's
// matrices in memory, and B_ia^P (this rank's rows; a gradient run holds more) in memory or
// scratch. Each is part of what plan_run plans, so check_plan would refuse these runs too.
void check_sizes(const Problem& problem, const LoadedSets& sets, const RunContext& context) {
  const std::size_t nbf = sets.obs_count.functions, naux = sets.aux_count.functions, ranks = context.comm.size();
  const std::size_t limit = context.budget.limit(), baseline = context.budget.baseline();
  const std::size_t memory = ShellPairs::table_bytes(sets.obs_count.shells) +
                             scf_working_bytes(nbf, context.options.scf, problem.unrestricted ? 2 : 1);
  double b = 0.0;  // bytes, in floating point: a huge input's overflows 64 bits
  std::string shape;
  for (const TransformSizes& s : transform_sizes(problem, nbf)) {
    const std::size_t rows = (s.nocc + ranks - 1) / ranks;
    b += double(sizeof(double)) * double(rows) * double(s.nvir) * double(naux);
    shape += (shape.empty() ? "" : " + ") + std::to_string(rows) + " × " + std::to_string(s.nvir) + " × " +
             std::to_string(naux) + " × 8 bytes";
  }
  const std::size_t room = limit > baseline ? limit - baseline : 0, free = context.scratch.free_bytes();
  const bool memory_short = memory > room, b_short = b > double(room) + double(free);
  const std::string in_memory = "the scf stage needs at least " + format_bytes(memory) +
                                " of memory for the shell-pair tables and the SCF's matrices";
  if (memory_short && !b_short)  // worded as check_plan's refusals
    throw InputError(in_memory + " beside the " + format_bytes(baseline) + " the process holds, but --memory is " +
                     format_bytes(limit) + "; raise --memory to at least " + format_bytes(baseline + memory));
  if (!b_short) return;
  throw InputError(std::to_string(problem.molecule.atoms.size()) + " atoms, " + std::to_string(nbf) +
                   " basis functions, " + std::to_string(naux) + " auxiliary: B_ia^P alone (" + shape + ") needs " +
                   format_bytes(b) + " of memory and scratch together" + (memory_short ? ", and " + in_memory : "") +
                   ", but --memory is " + format_bytes(limit) + " (the process holds " + format_bytes(baseline) +
                   ") and the scratch directory '" + context.scratch.path() + "' has " + format_bytes(free) + " free");
}

// The molecule's and the basis sets' checks, the sets' sizes, and the refusal those sizes call for:
// everything linear in the atom count, before the rest.
LoadedSets check_problem(const RunInput& input, const RunContext& context, Problem& p) {
  const RunOptions& options = context.options;
  p.molecule = *input.molecule;
  if (options.charge) p.molecule.charge = *options.charge;
  if (options.multiplicity) p.molecule.multiplicity = *options.multiplicity;
  // Before the basis names: E_SCF given with the orbitals needs no JK set.
  if (!options.gradient) p.e_scf_given = input.e_scf;  // a gradient run needs the Fock builder
  resolve_basis_names(input, options, p);
  LoadedSets sets = load_basis_sets(input, p);
  // The electrons an ECP replaces are no electrons of the run: counted before anything else is.
  assign_ecp_cores(p.orbital_basis, p.molecule);
  validate(p.molecule);
  p.unrestricted = unrestricted(options.reference, p.molecule.multiplicity);
  p.name = p.molecule.name.empty() ? formula(p.molecule) : p.molecule.name;
  p.nocc = alpha_electrons(p.molecule);  // a singlet's α and β counts are its doubly occupied orbitals
  p.nocc_beta = beta_electrons(p.molecule);
  // As Psi4, frozen core orbitals are the same number of each spin.
  p.nfrozen = options.frozen_core ? frozen_core_orbitals(p.molecule) : options.frozen_orbitals.value_or(0);
  if (p.nfrozen >= p.nocc) throw InputError("frozen core leaves no active occupied orbital");
  if (p.nfrozen > p.nocc_beta)
    throw InputError("frozen core needs " + std::to_string(p.nfrozen) + " β orbitals, the molecule has " +
                     std::to_string(p.nocc_beta));
  check_occupation(p, sets.obs_count.functions);
  context.progress.message("dfmp2: " + p.name + ", nbf " + std::to_string(sets.obs_count.functions) + ", naux " +
                           std::to_string(sets.aux_count.functions) + ", nocc " + std::to_string(p.nocc) +
                           (p.unrestricted ? " α, " + std::to_string(p.nocc_beta) + " β (UHF)" : ""));
  check_sizes(p, sets, context);
  return sets;
}

}  // namespace

Problem define_problem(const RunInput& input, const RunContext& context) {
  if (!input.molecule) throw InputError("'" + input.path + "' holds neither a molecule nor /df");
  Problem p;
  {
    const Progress::Step step(context.progress, "checking the molecule and placing its basis sets");
    const LoadedSets sets = check_problem(input, context, p);
    place_basis_sets(input, sets, p);
  }
  {
    const Progress::Step step(context.progress, "nuclear repulsion and the given orbitals' checks");
    p.e_nuc = nuclear_repulsion(p.molecule);
    p.orbitals_given = input.orbitals.has_value();
    if (input.orbitals) check_given_orbitals(*input.orbitals, p);
  }
  context.progress.begin("shell-pair screening, (μν|μν) of the pairs near enough to matter");
  p.pairs = significant_shell_pairs(p.obs, kSchwarzThreshold, [&](double done) { context.progress.fraction(done); });
  return p;
}

namespace {

std::vector<EnergySpin> energy_spins(const std::vector<TransformSizes>& sizes, bool in_memory, const Communicator& comm) {
  std::vector<EnergySpin> spins;
  for (const TransformSizes& s : sizes)
    spins.push_back({s.nocc, share_of(s.nocc, comm.rank(), comm.size()).size(), s.nvir,
                     in_memory ? EnergySpin::Stored::fp64 : EnergySpin::Stored::disk});
  return spins;
}

std::vector<EnergySpin> energy_spins(const BiaTensor& df, const std::optional<BiaTensor>& df_beta) {
  std::vector<EnergySpin> spins;
  for (const BiaTensor* t : {&df, df_beta ? &*df_beta : nullptr})
    if (t != nullptr)
      spins.push_back({t->eps_occ.size(), t->nocc, t->nvir,
                       t->is_on_disk() ? EnergySpin::Stored::disk
                       : t->B32.empty() ? EnergySpin::Stored::fp64
                                        : EnergySpin::Stored::fp32});
  return spins;
}

std::size_t b_bytes(const std::vector<EnergySpin>& spins, std::size_t naux) {
  std::size_t bytes = 0;
  for (const EnergySpin& s : spins) bytes += MemoryBudget::array_bytes(sizeof(double) * s.nocc_mine * s.nvir * naux);
  return bytes;
}

// What the GPU takes to start an energy step (its context, cuBLAS, the GEMM probe, copying B):
// from results/gpu/ (the smallest molecules' GPU energy steps). auto keeps a step on the CPU
// threads when they would finish it sooner.
constexpr double kGpuStartSeconds = 0.5;

// The needed flops of the energy step over these spins (one: RHF; two: UHF's α and β).
double energy_step_flops(const std::vector<EnergySpin>& spins, std::size_t naux) {
  return spins.size() == 2 ? kernels::needed_flops_unrestricted(spins[0].nocc, spins[0].nvir, spins[1].nocc,
                                                                spins[1].nvir, naux)
                           : kernels::needed_flops(spins[0].nocc, spins[0].nvir, naux);
}

void add_blocks(StagePlan& to, const StagePlan& from) {
  to.blocks.insert(to.blocks.end(), from.blocks.begin(), from.blocks.end());
  to.read_bytes += from.read_bytes;
  if (!from.read_per.empty()) to.read_per = from.read_per;
  if (!from.note.empty()) to.note = from.note;
}

}  // namespace

EnergyDevice energy_device(const RunOptions& options, const std::vector<EnergySpin>& spins, std::size_t naux,
                           int ranks, const kernels::GemmRates& cpu_rates) {
  using kernels::Device;
  const bool automatic = options.device == Device::automatic;
  if (options.device == Device::cpu || spins.empty()) return {};
  const double cpu_gflops = options.precision == kernels::Precision::fp32 ? cpu_rates.fp32_gflops : cpu_rates.fp64_gflops;
  const double cpu_seconds = energy_step_flops(spins, naux) / ranks / (std::max(cpu_gflops, 1.0) * 1e9);
  if (automatic && (options.backend == kernels::Backend::reference || cpu_seconds < kGpuStartSeconds)) return {};
  if (options.backend == kernels::Backend::reference)
    throw InputError("--backend reference runs on the CPU only: with --device gpu use loop, fused or auto");
  if (const std::string reason = kernels::gpu_unavailable_reason(); !reason.empty()) {
    if (automatic) return {};
    throw InputError("--device gpu: no usable GPU: " + reason);
  }
  EnergyDevice device;
  device.gpu = true;
  device.properties = kernels::gpu_properties();
  if (options.gpu_memory_bytes > device.properties.free_bytes)
    throw InputError("--gpu-memory " + format_bytes(options.gpu_memory_bytes) + " is more than the " +
                     format_bytes(device.properties.free_bytes) + " free on the GPU (" + device.properties.name + ")");
  device.gpu_bytes = options.gpu_memory_bytes > 0 ? options.gpu_memory_bytes : device.properties.free_bytes / 10 * 9;
  // The floor's yardstick: cuBLAS at the scale of a T_flat chunk (about 4096 virtual rows).
  const std::size_t nvir = std::max<std::size_t>(spins[0].nvir, 1);
  device.gemm_m = nvir * std::max<std::size_t>(1, 4096 / nvir);
  device.gemm_k = naux;
  device.gemm_gflops = kernels::gpu_gemm_gflops(options.precision, device.gemm_m, device.gemm_m, naux);
  return device;
}

namespace {

// The exact SCF's Fock builds, and its quartets stored for the iterations when they fit on every
// rank (given orbitals take one build).
void plan_exact_scf(RunPlan& plan, const Problem& problem, const RunContext& context,
                    const std::vector<PlannedBlock>& scf_blocks, std::size_t ram, std::size_t pairs) {
  const std::size_t spins = problem.unrestricted ? 2 : 1;
  const std::size_t builds = ExactFock::peak_bytes(problem.obs.nbf(), spins);
  plan.integrals.ram("the exact Fock builds", builds);
  plan.scf.ram("the exact Fock builds", builds);
  for (const PlannedBlock& block : scf_blocks) plan.scf.blocks.push_back(block);
  const std::size_t quartets = StoredQuartets::bytes(problem.obs, problem.pairs, context.comm.rank(), context.comm.size());
  const auto fits = context.comm.allgather(plan.scf.ram_bytes() - pairs + quartets <= ram ? 1.0 : 0.0);
  plan.store_quartets =
      !problem.orbitals_given && std::all_of(fits.begin(), fits.end(), [](double f) { return f > 0.0; });
  if (plan.store_quartets) plan.scf.ram("the stored four-index integrals", quartets);
}

// --device gpu: the GPU the gradient (and its SCF's J/K builds) runs on, probed as the energy
// step's; auto keeps the gradient on the CPU (its threshold is the energy step's).
void choose_gradient_device(RunPlan& plan, const Problem& problem, const RunContext& context,
                            const std::vector<Mp2GradientSizes>& sets) {
  if (context.options.device != kernels::Device::gpu) return;
  std::vector<EnergySpin> spins;
  for (const Mp2GradientSizes& s : sets) spins.push_back({.nocc_mine = s.active(), .nvir = s.nvir()});
  plan.mp2.device = energy_device(context.options, spins, problem.aux.nbf(), context.comm.size(), context.cpu_rates);
}

// The Z-vector's Fock responses on the gradient's GPU when their kept products fit its memory;
// else (none) on the CPU threads.
std::optional<kernels::GpuResponsePlan> z_vector_device_plan(const RunPlan& plan,
                                                             const std::vector<Mp2GradientSizes>& sets) {
  if (!plan.mp2.device.gpu) return std::nullopt;
  try {
    return plan_z_vector_on_gpu(sets, plan.mp2.device.gpu_bytes);
  } catch (const kernels::GpuError&) {
    return std::nullopt;
  }
}

// An environment switch: unset gives `unset`, "0" false and "1" true; any other value is one error
// line naming it.
bool environment_switch(const char* name, bool unset) {
  const char* value = std::getenv(name);
  if (value == nullptr) return unset;
  if (std::string_view(value) == "0" || std::string_view(value) == "1") return value[0] == '1';
  throw InputError(std::string(name) + " is 0 or 1, not '" + value + "'");
}

// DFMP2_GPU_FIT=0: the fits (the DF-SCF tensor's, the DF transform's) stay on the CPU threads
// where the J/K and the transform run on the GPU; unset or 1: on the GPU where they fit. A way
// around them until they have run on a GPU.
bool gpu_fit_asked() { return environment_switch("DFMP2_GPU_FIT", true); }

// DFMP2_GPU_AMPLITUDES=1: a gradient's amplitudes are made on the GPU (JKDevice::
// closed_shell_amplitudes, open_shell_amplitudes), not yet the default: those kernels have not
// run on a GPU. Unset or 0: made on the CPU threads.
bool gpu_amplitudes_asked() { return environment_switch("DFMP2_GPU_AMPLITUDES", false); }

// The gradient stage's GPU blocks and note, its amplitude loop planned on the GPU
// (plan_amplitude_loop_on_gpu: in the GPU memory --gpu-memory gives, each set's rows of B in
// memory resident there when they fit beside the other operands); then the Z-vector's responses
// in the same memory, when planned there.
void plan_gradient_on_gpu(RunPlan& plan) {
  Mp2GradientPlan& gradient = *plan.mp2_gradient;
  gradient.gpu_gflops = plan.mp2.device.gemm_gflops;
  const kernels::GpuOffloadPlan& gpu = *gradient.gpu;
  if (gpu.resident)
    plan.gradient->gpu("the rows of B_ia^P in memory, resident on the GPU", sizeof(double) * gpu.resident_elements);
  plan.gradient->gpu(gpu.resident ? "the amplitude loop's other operands, staged on the GPU"
                                  : "the amplitude loop's operands, B_ia^P's rows streamed to the GPU",
                     sizeof(double) * gpu.staging_elements);
  if (gradient.amplitudes_on_gpu)
    plan.gradient->gpu(gradient.closed_shell() ? "the amplitude loop's I, t and T of a block, made on the GPU"
                                               : "the amplitude loop's I and t of an orbital k, made on the GPU",
                       sizeof(double) * gpu.held_elements);
  else if (gpu.held_elements > 0)
    plan.gradient->gpu("the amplitude loop's t and T, held on the GPU for their products", sizeof(double) * gpu.held_elements);
  std::string& note = plan.gradient->note;
  note += (note.empty() ? "" : "; ") + std::string("the amplitude loop's products on the GPU (") +
          plan.mp2.device.properties.name + ")";
  if (!gradient.z_vector_gpu) {
    note += "; the Z-vector's on the CPU threads (its B^Q C_o do not fit the GPU's memory)";
    return;
  }
  if (const std::size_t beyond = gradient.gpu_device_bytes() - gpu.device_bytes(); beyond > 0)
    plan.gradient->gpu("the Z-vector's products, beyond the amplitude loop's GPU memory they reuse", beyond);
  note += std::string(", then the Z-vector's (its B^Q C_o kept there, the DF-SCF tensor's rows ") +
          (gradient.z_vector_gpu->resident ? "kept there too)" : "copied for each product)");
}

// The MP2 gradient runs after the SCF, beside the shell pairs and the Fock builder (its J/K solve
// the Z-vector equations), and its amplitudes give the MP2 energy: a gradient run has no DF
// transform or energy step. Only DF-SCF has a Fock builder (the driver refuses the others).
void plan_gradient(RunPlan& plan, const Problem& problem, const RunContext& context, std::size_t pairs) {
  const std::size_t nbf = problem.obs.nbf(), naux = problem.aux.nbf();
  const std::size_t limit = context.budget.limit(), baseline = context.budget.baseline();
  StagePlan gradient;
  gradient.stage = "gradient";
  gradient.ram("the shell pairs", pairs);
  add_blocks(gradient, plan.density_fitted_scf->builder);
  // The ranks share the batches and the amplitude blocks, and send each other rows and columns
  // of their stores of B and Γ: every rank plans for the least room any has.
  const std::size_t held = baseline + pairs + plan.density_fitted_scf->builder.ram_bytes();
  const std::vector<double> rooms = context.comm.allgather(limit > held ? double(limit - held) : 0.0);
  const auto room = static_cast<std::size_t>(*std::min_element(rooms.begin(), rooms.end()));
  const auto sizes = [&](int nocc) {
    return Mp2GradientSizes{naux,
                            nbf,
                            nbf,  // nmo at most nbf
                            std::size_t(nocc),
                            std::size_t(problem.nfrozen),
                            problem.pairs.layout.size(),
                            plan.density_fitted_scf->tensor.q.size()};
  };
  SeparableTermSizes jk_terms{nbf, std::size_t(problem.jk_aux->nbf()), largest_shell(*problem.jk_aux),
                              {std::size_t(problem.nocc)}, context.comm.size()};
  if (problem.unrestricted) jk_terms.occupied.push_back(std::size_t(problem.nocc_beta));
  std::vector<Mp2GradientSizes> sets{sizes(problem.nocc)};
  if (problem.unrestricted) sets.push_back(sizes(problem.nocc_beta));
  choose_gradient_device(plan, problem, context, sets);
  plan.mp2_gradient =
      plan_mp2_gradient(problem.aux, sets, jk_terms, room, context.comm.size(),
                        context.options.scf.fp32_until_gradient > 0.0, z_vector_device_plan(plan, sets));
  // Before the densities' blocks are listed: amplitudes made on the GPU keep no I in memory. Too
  // little GPU memory for the loop is one error line.
  if (plan.mp2.device.gpu)
    plan_amplitude_loop_on_gpu(*plan.mp2_gradient, plan.mp2.device.gpu_bytes, gpu_amplitudes_asked());
  add_blocks(gradient, plan.mp2_gradient->densities);
  plan.gradient = std::move(gradient);
  if (plan.mp2.device.gpu) plan_gradient_on_gpu(plan);
}

// The DF transform's products run on the GPU where the energy step does (as the SCF's J/K), in
// the GPU memory the step may take (the transform's is freed before the step); too little for
// one row: --device gpu is refused, auto keeps the transform on the CPU.
void plan_transform_on_gpu(RunPlan& plan, const Problem& problem, const RunOptions& options) {
  DFTransformPlan& transform = plan.transform;
  std::size_t nocc_all = 0, nvir_all = 0, nov_all = 0;
  for (const TransformSizes& s : transform.spins) {
    nocc_all += s.nocc;
    nvir_all += s.nvir;
    nov_all += s.nocc * s.nvir;
  }
  try {
    transform.gpu = kernels::plan_gpu_transform(problem.obs.nbf(), problem.pairs.layout.size(), nocc_all, nvir_all,
                                                nov_all, transform.chunk_rows, plan.mp2.device.gpu_bytes);
  } catch (const kernels::GpuError&) {
    if (options.device == kernels::Device::gpu) throw;
    return;
  }
  transform.gpu_gflops = plan.mp2.device.gemm_gflops;
  const kernels::GpuTransformPlan& gpu = *transform.gpu;
  transform.stage.gpu("the transform's rows (Q|μν) and their squares, batches of " + std::to_string(gpu.batch_q),
                      gpu.rows_bytes + gpu.squares_bytes);
  transform.stage.gpu("the transform's products (Q|μν) C_occ and (Q|ia)", gpu.x_bytes + gpu.out_bytes);
  transform.stage.gpu("the orbitals and the unpack table", gpu.fixed_bytes);
  if (gpu_fit_asked()) transform.gpu_fit = plan_fit_on_gpu(problem.aux.nbf(), plan.mp2.device.gpu_bytes);
  if (transform.gpu_fit)
    transform.stage.gpu("then, in their place, the fit's metric factor and blocks of (Q|ia)",
                        transform.gpu_fit->device_bytes());
  std::string& note = transform.stage.note;
  note += (note.empty() ? "" : "; ") + std::string("products ") + (transform.gpu_fit ? "and fit " : "") +
          "on the GPU (" + plan.mp2.device.properties.name + ")";
}

// The DF transform and the energy step: B_ia^P stays in memory when both fit with it there.
void plan_transform_and_energy(RunPlan& plan, const Problem& problem, const RunContext& context, std::size_t ram) {
  const std::size_t nbf = problem.obs.nbf(), naux = problem.aux.nbf();
  const std::size_t limit = context.budget.limit(), baseline = context.budget.baseline();
  const RunOptions& options = context.options;
  const std::vector<TransformSizes> sizes = transform_sizes(problem, nbf);
  const EnergyDevice device =
      energy_device(options, energy_spins(sizes, true, context.comm), naux, context.comm.size(), context.cpu_rates);
  for (bool in_memory : {true, false}) {
    plan.transform = plan_df_transform(problem.obs, problem.aux, problem.pairs, sizes, in_memory, ram, context.comm);
    const std::vector<EnergySpin> energy = energy_spins(sizes, in_memory, context.comm);
    // The energy step runs once the shell pairs are freed.
    const std::size_t energy_ram = limit > baseline ? limit - baseline : 0, held = in_memory ? b_bytes(energy, naux) : 0;
    plan.mp2 = plan_energy(energy, naux, options.backend, options.precision, energy_ram > held ? energy_ram - held : 0,
                           context.comm, device);
    const bool fits = plan.transform.stage.ram_bytes() <= ram && plan.mp2.stage.ram_bytes() <= energy_ram;
    const auto short_of = context.comm.allgather(fits ? 0.0 : 1.0);  // every rank keeps B alike
    if (!in_memory || *std::max_element(short_of.begin(), short_of.end()) == 0.0) break;
  }
  if (device.gpu) plan_transform_on_gpu(plan, problem, options);
  add_blocks(plan.df_transform, plan.transform.stage);
  add_blocks(plan.energy, plan.mp2.stage);
}

// The DF-SCF's J/K builds run on the GPU where the energy step does (--device gpu, or auto when
// the step is large enough to gain) or the gradient (--device gpu), in the GPU memory the step
// may take (the builder is freed before the step; a gradient run keeps the builder but gives its
// GPU memory back after the SCF): the tensor's rows resident when they fit, else streamed per
// build. Too little GPU memory for one row streamed: --device gpu is refused, auto keeps the
// builds on the CPU.
void plan_scf_on_gpu(RunPlan& plan, const Problem& problem, const RunOptions& options) {
  DensityFittedScfPlan& scf = *plan.density_fitted_scf;
  const EnergyDevice& device = plan.mp2.device;
  try {
    scf.gpu = kernels::plan_gpu_jk(problem.obs.nbf(), problem.pairs.layout.size(), scf.tensor.q.size(),
                                   problem.unrestricted ? 2 : 1, device.gpu_bytes);
  } catch (const kernels::GpuError&) {
    if (options.device == kernels::Device::gpu) throw;
    return;
  }
  scf.gpu_gflops = device.gemm_gflops;
  // The tensor's fit too, before the builder takes its GPU memory.
  if (gpu_fit_asked()) scf.tensor.gpu_fit = plan_fit_on_gpu(problem.jk_aux->nbf(), device.gpu_bytes);
  scf.tensor.gpu_gflops = device.gemm_gflops;
  if (scf.tensor.gpu_fit)
    plan.integrals.gpu("first, the fit's metric factor and blocks of (P|μν), given back before the J/K builds'",
                       scf.tensor.gpu_fit->device_bytes());
  const kernels::GpuJKPlan& gpu = *scf.gpu;
  for (StagePlan* stage : {&plan.integrals, &plan.scf}) {  // taken when the builder is made
    stage->gpu(gpu.resident ? "the DF-SCF tensor, resident on the GPU"
                            : "the DF-SCF tensor's rows streamed to the GPU in batches of " + std::to_string(gpu.batch_q),
               gpu.rows_bytes);
    stage->gpu("the J/K builds' squares of B^Q and products B^Q L", gpu.squares_bytes + gpu.x_bytes);
    stage->gpu("J, K, the densities and their factors", gpu.fixed_bytes);
  }
  plan.scf.note += "; J/K on the GPU (" + device.properties.name + ")";
}

}  // namespace

RunPlan plan_run(const Problem& problem, const RunContext& context) {
  const std::size_t nbf = problem.obs.nbf(), spins = problem.unrestricted ? 2 : 1;
  const std::size_t limit = context.budget.limit(), baseline = context.budget.baseline();
  const std::size_t pairs = problem.pairs.bytes(), baseline_and_pairs = baseline + pairs;
  const std::size_t ram = limit > baseline_and_pairs ? limit - baseline_and_pairs : 0;
  RunPlan plan;
  plan.integrals.stage = "integrals";
  plan.scf.stage = "scf";
  plan.df_transform.stage = "df_transform";
  plan.energy.stage = "energy";
  // The shell pairs are held from the integrals to the transform.
  for (StagePlan* stage : {&plan.integrals, &plan.scf, &plan.df_transform}) stage->ram("the shell pairs", pairs);
  std::vector<PlannedBlock> scf_blocks{{"the SCF's matrices", scf_working_bytes(nbf, context.options.scf, spins)}};
  if (!problem.orbitals_given && context.options.guess == ScfGuess::sad)
    scf_blocks.push_back({"the atomic guess's integrals", atomic_density_guess_bytes(problem.orbital_basis, problem.molecule)});
  if (problem.jk_aux) {
    plan.density_fitted_scf =
        plan_density_fitted_scf(problem.obs, *problem.jk_aux, problem.pairs, spins, scf_blocks, ram, context.comm);
    add_blocks(plan.integrals, plan.density_fitted_scf->setup);
    add_blocks(plan.scf, plan.density_fitted_scf->iterations);
  } else if (!problem.e_scf_given) {
    plan_exact_scf(plan, problem, context, scf_blocks, ram, pairs);
  }
  if (context.options.gradient && plan.density_fitted_scf)
    plan_gradient(plan, problem, context, pairs);
  else
    plan_transform_and_energy(plan, problem, context, ram);
  if (plan.density_fitted_scf && plan.mp2.device.gpu && !problem.e_scf_given)
    plan_scf_on_gpu(plan, problem, context.options);
  return plan;
}

void check_plan(const RunPlan& plan, const RunContext& context) {
  const std::size_t limit = context.budget.limit(), baseline = context.budget.baseline();
  std::size_t disk = 0;
  for (const StagePlan& stage : plan.stages()) {
    disk = std::max(disk, stage.disk_bytes());
    const std::size_t ram = stage.ram_bytes();
    if (baseline + ram > limit)
      throw InputError("the " + stage.stage + " stage needs " + format_bytes(ram) + " of memory beside the " +
                       format_bytes(baseline) + " the process holds, but --memory is " + format_bytes(limit) +
                       "; raise --memory to at least " + format_bytes(baseline + ram));
  }
  if (const std::size_t free = context.scratch.free_bytes(); disk > free)
    throw InputError("this run needs " + format_bytes(disk) + " of scratch space on disk, but the scratch directory '" +
                     context.scratch.path() + "' has " + format_bytes(free) +
                     " free; give --scratch a larger disk, or more --memory");
}

namespace {

// The orbital set's effective core potentials over its functions, for H.
EcpIntegrals ecp_potential(const Problem& problem, const RunContext& context) {
  context.progress.begin("effective core potential integrals");
  EcpIntegrals ecp = ecp_integrals(problem.obs, problem.orbital_basis, problem.molecule, context.comm);
  context.progress.message(
      "dfmp2: ECP integrals: " + std::to_string(ecp.computed) + " shell pairs × potentials computed, " +
      std::to_string(ecp.screened) + " screened" +
      (ecp.quadrature_warned ? "; libecpint's radial quadrature stopped short of its tolerance for some" : ""));
  return ecp;
}

}  // namespace

Integrals compute_integrals(const Problem& problem, const RunPlan& plan, const RunContext& context) {
  Integrals ints;
  ints.pairs_memory = context.budget.reserve(problem.pairs.bytes(), "the shell pairs");
  ints.S = overlap_matrix(problem.obs);
  ints.H = core_hamiltonian(problem.obs, problem.molecule);
  if (has_ecp(problem.molecule))
    ints.H += timed_part(ints.parts, "ecp", [&] { return ecp_potential(problem, context).U; });
  if (problem.e_scf_given) return ints;  // no Fock builds
  if (problem.jk_aux) {
    context.progress.begin("DF-SCF integrals and fitting (batches of shell rows)");
    auto df = std::make_unique<DensityFittedFock>(problem.obs, *problem.jk_aux, problem.pairs, *plan.density_fitted_scf,
                                                  context.budget, &context.scratch, context.comm,
                                                  [&context](double done) { context.progress.fraction(done); });
    ints.work = df->setup_work();
    ints.fock = std::move(df);
  } else {
    ints.fock = std::make_unique<ExactFock>(problem.obs, problem.pairs, context.comm, context.budget,
                                            problem.unrestricted ? 2 : 1, plan.store_quartets);
  }
  return ints;
}

namespace {

// The Z-vector equations of the DF-MP2 gradient hold for the SCF solution of the DF-SCF's Fock
// operator: given orbitals must come from an SCF with the same JK set. Measured on water
// cc-pVDZ with cc-pVDZ-JKFIT: orbitals of an exact SCF have F_ia up to 6.3e-5 Eh, of DF-SCFs with
// cc-pVTZ-JKFIT or def2-SVP-JKFIT 4.6e-5 and 9.3e-5; those of DF-SCFs with this set 1.5e-10
// (dfmp2 at 1e-10), 1.5e-7 (dfmp2 at --d-convergence 1e-5, gradient off by 1.4e-7 Eh/bohr) and up
// to 6e-7 (PySCF's default conv_tol 1e-9, water, formaldehyde, OH).
constexpr double kGivenOrbitalsMaxFockOv = 1e-5;  // Eh

void require_scf_solution(double max_orbital_gradient, const Problem& problem) {
  if (max_orbital_gradient <= kGivenOrbitalsMaxFockOv) return;
  char value[32];
  std::snprintf(value, sizeof value, "%.1e", max_orbital_gradient);
  throw InputError(std::string("--gradient needs given orbitals converged with the JK set '") + problem.jk_basis +
                   "': their largest occupied-virtual Fock element with it is " + value + " Eh (at most 1e-5)");
}

// E_SCF of given orbitals from one Fock build, whose F_ia a gradient run checks.
double evaluate_given(const Orbitals& given, const Problem& problem, Integrals& integrals, const RunContext& context) {
  const GivenOrbitalsEnergy energy = scf_energy(given, integrals.H, *integrals.fock);
  char line[96];
  std::snprintf(line, sizeof line, "dfmp2: given orbitals: largest occupied-virtual Fock element %.1e Eh",
                energy.max_orbital_gradient);
  context.progress.message(line);
  if (context.options.gradient) require_scf_solution(energy.max_orbital_gradient, problem);
  return energy.energy + problem.e_nuc;
}

// The SCF, or one Fock build for the E_SCF of given orbitals (checked by define_problem).
void run_fock_builds(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                     const RunContext& context, ScfSolution& solution) {
  int build = 0;
  integrals.fock->set_progress([&](double done) {
    if (done == 0.0) context.progress.begin("SCF J/K build " + std::to_string(++build));
    else context.progress.fraction(done);
  });
  const auto matrices = context.budget.reserve(
      scf_working_bytes(problem.obs.nbf(), context.options.scf, problem.unrestricted ? 2 : 1), "the SCF's matrices");
  integrals.fock->set_aside_workspace();
  if (given) {
    solution.orbitals = *given;
    solution.e_scf = evaluate_given(*given, problem, integrals, context);
  } else {
    ScfOptions options = context.options.scf;
    options.on_iteration = [&context](const ScfIteration& it) { report_iteration(context.progress, it); };
    const Eigen::MatrixXd guess =
        context.options.guess == ScfGuess::sad ? timed_part(solution.parts, "guess", [&] {
          return atomic_density_guess(problem.orbital_basis, problem.molecule, context.budget);
        })
                                               : Eigen::MatrixXd();
    ScfResult scf = problem.unrestricted ? run_uhf(integrals.S, integrals.H, problem.e_nuc, problem.nocc,
                                                   problem.nocc_beta, *integrals.fock, options, guess)
                                         : run_rhf(integrals.S, integrals.H, problem.e_nuc, problem.nocc,
                                                   *integrals.fock, options, guess);
    double jk_seconds = 0.0;
    for (const ScfIteration& it : scf.iterations) jk_seconds += it.jk_seconds;
    solution.parts.push_back({"jk", jk_seconds});
    solution.e_scf = scf.energy;
    solution.iterations = std::move(scf.iterations);
    solution.orbitals = std::move(scf.orbitals);
  }
  solution.work = integrals.fock->work();
  integrals.fock->set_progress({});  // its callback refers to this function's locals; later builds (the MP2
                                     // gradient's) must not call it
}

}  // namespace

ScfSolution solve_scf(const Problem& problem, Integrals& integrals, const std::optional<Orbitals>& given,
                      const RunContext& context) {
  ScfSolution solution;
  if (problem.e_scf_given) {  // given with the orbitals: no Fock builder exists
    solution.orbitals = *given;
    solution.e_scf = *problem.e_scf_given;
  } else {
    run_fock_builds(problem, integrals, given, context, solution);
  }
  // Every rank must transform with the very same orbitals (eigenvector signs included).
  for (int s = 0; s < solution.orbitals.spin_count(); ++s) {
    SpinOrbitals& orbitals = solution.orbitals.spin(s);
    context.comm.broadcast(orbitals.C.data(), static_cast<std::size_t>(orbitals.C.size()), 0);
    context.comm.broadcast(orbitals.eps.data(), static_cast<std::size_t>(orbitals.eps.size()), 0);
  }
  solution.s2 = spin_squared(solution.orbitals, integrals.S);
  return solution;
}

Transformed transform_to_mo(const Problem& problem, const RunPlan& plan, const Orbitals& orbitals,
                            const RunContext& context) {
  context.progress.begin(orbitals.beta ? "DF transform, α and β (work)" : "DF transform (work)");
  std::vector<TransformSpin> spins{transform_spin(problem, orbitals)};
  if (orbitals.beta) spins.push_back(transform_spin(problem, *orbitals.beta));
  // The plan was made for nvir before the SCF; linear dependencies can only have removed some.
  const DFTransformPlan transform_plan = [&] {
    DFTransformPlan p = plan.transform;
    for (std::size_t s = 0; s < spins.size(); ++s) p.spins[s].nvir = static_cast<std::size_t>(spins[s].C_vir.cols());
    return p;
  }();
  Transformed t;
  std::vector<BiaTensor> tensors = build_bia_tensors(
      {problem.obs, problem.aux, problem.pairs, spins}, transform_plan, context.budget, &context.scratch,
      [&context](double done) { context.progress.fraction(done); }, context.comm, t.work);
  t.df = std::move(tensors[0]);
  if (tensors.size() > 1) t.df_beta = std::move(tensors[1]);
  t.batches = shell_batches(problem.aux, transform_plan.shells, transform_plan.batch_functions).size();
  return t;
}

BiaTensor read_given_tensor(const GivenBiaTensor& given, const RunContext& context) {
  BiaTensor df;
  const Range mine = share_of(given.nocc, context.comm.rank(), context.comm.size());
  df.nocc = mine.size();
  df.occ_begin = mine.begin;
  df.nvir = given.nvir;
  df.naux = given.naux;
  df.eps_occ = given.eps_occ;
  df.eps_vir = given.eps_vir;
  require_energy_gap(as_vector(df.eps_occ), as_vector(df.eps_vir), "the orbital energies of the given DF tensor (/df/eps_occ, /df/eps_vir)");
  const std::size_t count = mine.size() * given.nvir * given.naux;
  if (given.fp32) {
    df.B32 = context.budget.allocate<float>(count, "the given DF tensor /df/B");
    given.read_rows(mine.begin, mine.size(), df.B32.data());
  } else {
    df.B64 = context.budget.allocate<double>(count, "the given DF tensor /df/B");
    given.read_rows(mine.begin, mine.size(), df.B64.data());
  }
  return df;
}

EnergyPlan plan_energy_step(const BiaTensor& df, const std::optional<BiaTensor>& df_beta, kernels::Backend backend,
                            kernels::Precision precision, kernels::Device device, const RunContext& context) {
  RunOptions options = context.options;
  options.backend = backend;
  options.precision = precision;
  options.device = device;
  const std::vector<EnergySpin> spins = energy_spins(df, df_beta);
  return plan_energy(spins, df.naux, backend, precision, context.budget.available(), context.comm,
                     energy_device(options, spins, df.naux, context.comm.size(), context.cpu_rates));
}

Mp2Energy mp2_energy(const BiaTensor& df, const std::optional<BiaTensor>& df_beta, const EnergyPlan& plan,
                     const RunContext& context) {
  context.progress.begin("MP2 energy (work)");
  Mp2Energy energy;
  energy.backend = plan.backend;
  energy.plan = plan.stage;
  if (plan.gpu) energy.gpu = plan.device;
  energy.distributed = distributed_mp2_energy(df, df_beta ? &*df_beta : nullptr, plan, context.budget,
                                              [&context](double done) { context.progress.fraction(done); },
                                              context.comm);
  const double flops = energy_step_flops(energy_spins(df, df_beta), df.naux) / context.comm.size();
  energy.needed_flops = flops;
  if (plan.gpu)
    energy.work.gpu_seconds = flops / (plan.device.gemm_gflops * 1e9);
  else
    (plan.precision == kernels::Precision::fp32 ? energy.work.flops_fp32 : energy.work.flops_fp64) = flops;
  return energy;
}

}  // namespace dfmp2
