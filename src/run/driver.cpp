#include "src/run/driver.hpp"

#include <chrono>
#include <cstdio>
#include <omp.h>

#include "kernels/blas_kernels.hpp"
#include "src/molecule/basis.hpp"
#include "src/scf/df_jk.hpp"
#include "src/mp2/df_transform.hpp"
#include "src/mp2/distributed_energy.hpp"
#include "src/common/errors.hpp"
#include "src/integrals/integrals.hpp"
#include "src/common/memory.hpp"
#include "src/common/parallel.hpp"
#include "src/scf/sad_guess.hpp"

namespace dfmp2 {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Times named stages into RunResult::timings, in the order they ran; over MPI also the part of
// each spent in MPI calls ("<stage>_mpi").
class StageTimer {
 public:
  explicit StageTimer(RunResult& result) : result_(result) {}

  template <typename Work>
  decltype(auto) operator()(const std::string& stage, Work&& work) {
    struct Record {
      StageTimer& timer;
      const std::string& stage;
      Clock::time_point begin = Clock::now();
      double mpi_begin = Communicator::world().mpi_seconds();
      ~Record() {
        timer.add(stage, seconds_since(begin));
        const Communicator& comm = Communicator::world();
        if (comm.size() > 1) timer.add(stage + "_mpi", comm.mpi_seconds() - mpi_begin);
      }
    } record{*this, stage};
    return work();
  }

  void add(const std::string& stage, double seconds) {
    for (auto& [name, total] : result_.timings)
      if (name == stage) {
        total += seconds;
        return;
      }
    result_.timings.emplace_back(stage, seconds);
  }

 private:
  RunResult& result_;
};

std::string choose(const std::optional<std::string>& option, const std::string& stored,
                   const std::string& fallback) {
  if (option && !option->empty()) return *option;
  if (!stored.empty()) return stored;
  return fallback;
}

void check_orbitals(const Orbitals& orbitals, std::size_t nbf, int nocc) {
  if (static_cast<std::size_t>(orbitals.C.rows()) != nbf)
    throw InputError("given orbitals have " + std::to_string(orbitals.C.rows()) +
                     " rows but the basis has " + std::to_string(nbf) + " functions");
  if (orbitals.nocc != nocc)
    throw InputError("given orbitals have nocc = " + std::to_string(orbitals.nocc) +
                     " but the molecule has " + std::to_string(nocc) + " doubly occupied orbitals");
}

RunOptions with_defaults(RunOptions options) {
  if (options.memory_bytes == 0) options.memory_bytes = default_memory_budget();
  return options;
}

}  // namespace

PreparedRun prepare(const RunInput& input, const RunOptions& given_options, Progress& progress) {
  const RunOptions options = with_defaults(given_options);
  PreparedRun prepared;
  RunResult& result = prepared.result;
  StageTimer timer(result);
  Communicator& comm = Communicator::world();
  result.threads = omp_get_max_threads();
  result.blas_kernels = kernels::blas_kernel_name();
  if (const std::string why = kernels::blas_kernels_narrower_than_cpu(); !why.empty())
    progress.message("dfmp2: note: " + why);

  if (input.df) {  // energy only, from a given DF tensor
    const DFTensor& df = *input.df;
    result.molecule = input.molecule ? input.molecule->name : "";
    result.scf_type = "none";
    result.nocc = static_cast<int>(df.nocc);
    result.nvir = static_cast<int>(df.nvir);
    result.naux = static_cast<int>(df.naux);
    // Over MPI each rank keeps its block of occupied orbitals.
    const Range mine = block_of(df.nocc, comm.rank(), comm.size());
    const std::size_t row = df.nvir * df.naux;
    prepared.df = df;
    prepared.df.nocc = mine.size();
    prepared.df.occ_begin = mine.begin;
    if (!df.B64.empty())
      prepared.df.B64.assign(df.B64.begin() + mine.begin * row, df.B64.begin() + mine.end * row);
    if (!df.B32.empty())
      prepared.df.B32.assign(df.B32.begin() + mine.begin * row, df.B32.begin() + mine.end * row);
    return prepared;
  }
  if (!input.molecule) throw InputError("'" + input.path + "' holds neither a molecule nor /df");

  Molecule mol = *input.molecule;
  if (options.charge) mol.charge = *options.charge;
  validate(mol);
  const int nocc = electron_count(mol) / 2;
  result.geometry = mol;
  result.molecule = mol.name.empty() ? formula(mol) : mol.name;
  result.natom = static_cast<int>(mol.atoms.size());
  result.e_nuc = nuclear_repulsion(mol);

  result.basis = choose(options.basis, input.basis, "");
  if (result.basis.empty())
    throw InputError("no basis set given: use --basis NAME or the 'basis' attribute");
  result.df_basis = choose(options.df_basis, input.df_basis, default_df_basis(result.basis));
  result.scf_type = options.scf_type;
  if (result.scf_type == "df")
    result.jk_basis = choose(options.jk_basis, input.jk_basis, default_jk_basis(result.basis));

  const BasisSetData orbital_basis = load_basis(result.basis, BasisRole::orbital);
  const libint2::BasisSet obs = place_on(orbital_basis, mol);
  const libint2::BasisSet aux = place_on(load_basis(result.df_basis, BasisRole::auxiliary), mol);
  // As Psi4 1.3 does, the SCF fitting set takes the orbital set's spherical/Cartesian choice.
  std::optional<libint2::BasisSet> jk_aux;
  if (!result.jk_basis.empty())
    jk_aux = place_on(load_basis(result.jk_basis, BasisRole::auxiliary), mol, orbital_basis.pure);
  result.nbf = static_cast<int>(obs.nbf());
  result.naux = static_cast<int>(aux.nbf());
  result.naux_jk = jk_aux ? static_cast<int>(jk_aux->nbf()) : 0;
  result.nfrozen = options.frozen_core ? frozen_core_orbitals(mol) : 0;
  if (result.nfrozen >= nocc)
    throw InputError("frozen core leaves no active occupied orbital");

  Libint2Session libint2_session;
  progress.message("dfmp2: " + result.molecule + ", nbf " + std::to_string(result.nbf) +
                   ", naux " + std::to_string(result.naux) + ", nocc " + std::to_string(nocc));

  // Integrals: one-electron matrices, Schwarz pairs, and the SCF's DF factors.
  const ShellPairs pairs = timer("integrals", [&] { return significant_shell_pairs(obs); });
  const Eigen::MatrixXd H = timer("integrals", [&] { return core_hamiltonian(obs, mol); });
  TwoElectronFock fock;
  if (result.scf_type == "df") {
    auto df_fock = std::make_shared<DensityFittedFock>(timer("integrals", [&] {
      return DensityFittedFock(obs, *jk_aux, pairs, options.memory_bytes, comm);
    }));
    fock = [df_fock](const Eigen::MatrixXd& C_occ) { return (*df_fock)(C_occ); };
  } else {
    fock = [&](const Eigen::MatrixXd& C_occ) {
      Eigen::MatrixXd G =
          exact_two_electron_fock(obs, pairs, C_occ * C_occ.transpose(), comm.rank(), comm.size());
      comm.allreduce_sum(G.data(), static_cast<std::size_t>(G.size()));
      return G;
    };
  }

  Orbitals orbitals;
  if (input.orbitals) {  // given orbitals: one Fock build for E_SCF instead of the SCF
    orbitals = *input.orbitals;
    check_orbitals(orbitals, obs.nbf(), nocc);
    const Eigen::MatrixXd C_occ = orbitals.C.leftCols(nocc);
    const Eigen::MatrixXd D = C_occ * C_occ.transpose();
    result.e_scf = timer("scf", [&] { return D.cwiseProduct(2.0 * H + fock(C_occ)).sum(); }) +
                   result.e_nuc;
  } else {
    const Eigen::MatrixXd S = timer("integrals", [&] { return overlap_matrix(obs); });
    ScfOptions scf_options = options.scf;
    scf_options.on_iteration = [&progress](const ScfIteration& it) {
      char line[96];
      std::snprintf(line, sizeof line, "SCF iter %3d  E = %20.12f  dE = %10.3e  |grad| = %9.3e",
                    it.iteration, it.energy, it.delta_e, it.gradient_rms);
      progress.message(line);
    };
    ScfResult scf = timer("scf", [&] {
      const Eigen::MatrixXd guess = options.scf_guess == "sad"
                                        ? atomic_density_guess(orbital_basis, mol)
                                        : Eigen::MatrixXd();
      return run_rhf(S, H, result.e_nuc, nocc, fock, scf_options, guess);
    });
    result.e_scf = scf.energy;
    result.scf_iterations = std::move(scf.iterations);
    orbitals = std::move(scf.orbitals);
  }
  fock = nullptr;  // frees the DF-SCF tensor before the MP2 transform allocates its own
  // Every rank must transform with the very same orbitals (eigenvector signs included).
  comm.broadcast(orbitals.C.data(), static_cast<std::size_t>(orbitals.C.size()), 0);
  comm.broadcast(orbitals.eps.data(), static_cast<std::size_t>(orbitals.eps.size()), 0);
  result.nmo = static_cast<int>(orbitals.C.cols());
  result.nocc = nocc - result.nfrozen;
  result.nvir = result.nmo - nocc;

  progress.begin("DF transform (auxiliary batches)");
  prepared.df = timer("df_transform", [&] {
    return build_df_tensor(obs, aux, pairs, orbitals.C.middleCols(result.nfrozen, result.nocc),
                           orbitals.C.rightCols(result.nvir),
                           orbitals.eps.segment(result.nfrozen, result.nocc),
                           orbitals.eps.tail(result.nvir), options.memory_bytes,
                           [&progress](double done) { progress.fraction(done); }, comm);
  });
  result.orbitals = std::move(orbitals);
  return prepared;
}

void add_mp2_energy(const DFTensor& df, const RunOptions& given_options, Progress& progress,
                    RunResult& result) {
  const RunOptions options = with_defaults(given_options);
  StageTimer timer(result);
  kernels::EnergyOptions energy_options;
  energy_options.memory_bytes = options.memory_bytes;
  energy_options.progress = [&progress](double done) { progress.fraction(done); };
  progress.begin("MP2 energy (pair blocks)");
  Communicator& comm = Communicator::world();
  // B in the requested precision; a copy only when the stored one differs.
  const auto compute = [&]() -> DistributedEnergy {
    if (options.precision == kernels::Precision::fp32) {
      std::vector<float> narrowed;
      if (df.B32.empty()) narrowed.assign(df.B64.begin(), df.B64.end());
      const float* B = df.B32.empty() ? narrowed.data() : df.B32.data();
      return distributed_mp2_energy<float>(options.backend, B, df, energy_options, comm);
    }
    std::vector<double> widened;
    if (df.B64.empty()) widened.assign(df.B32.begin(), df.B32.end());
    const double* B = df.B64.empty() ? widened.data() : df.B64.data();
    return distributed_mp2_energy<double>(options.backend, B, df, energy_options, comm);
  };
  const DistributedEnergy distributed = timer("energy", compute);
  const kernels::EnergyResult& energy = distributed.energy;
  result.peak_b_bytes = distributed.peak_b_bytes;
  if (energy.gemm_seconds > 0.0) timer.add("energy_gemm", energy.gemm_seconds);
  if (energy.reduce_seconds > 0.0) timer.add("energy_reduction", energy.reduce_seconds);
  result.backend = kernels::to_string(energy.backend);
  result.precision = kernels::to_string(options.precision);
  result.e_os = energy.e_os;
  result.e_ss = energy.e_ss;
  result.e_corr = energy.e_os + energy.e_ss;
  result.e_scs_corr = 1.2 * energy.e_os + energy.e_ss / 3.0;
  result.e_total = result.e_scf + result.e_corr;
}

RunResult run(const RunInput& input, const RunOptions& options, Progress& progress) {
  const auto start = Clock::now();
  PreparedRun prepared = prepare(input, options, progress);
  add_mp2_energy(prepared.df, options, progress, prepared.result);
  RunResult& result = prepared.result;
  result.timings.emplace_back("total", seconds_since(start));
  // What each rank sent and held, for the report (collective).
  Communicator& comm = Communicator::world();
  result.ranks = comm.size();
  const auto sent = comm.allgather(static_cast<double>(comm.bytes_sent()));
  const auto rss = comm.allgather(static_cast<double>(peak_rss_bytes()));
  const auto b_bytes = comm.allgather(static_cast<double>(result.peak_b_bytes));
  for (int r = 0; r < comm.size(); ++r)
    result.rank_stats.push_back({sent[r], rss[r], b_bytes[r]});
  return std::move(result);
}

}  // namespace dfmp2
