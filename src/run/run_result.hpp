// Everything a run produced, for the report (stdout, JSON) and the HDF5 results file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "kernels/gpu/gpu_plan.hpp"
#include "kernels/gemm_rate.hpp"
#include "src/common/memory.hpp"
#include "src/common/memory_plan.hpp"
#include "src/common/stage_work.hpp"
#include "src/molecule/molecule.hpp"
#include "src/molecule/orbital_basis.hpp"
#include "src/run/options.hpp"
#include "src/scf/orbitals.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

// What one MPI rank sent and held (bytes).
struct RankStats {
  double bytes_sent = 0.0, peak_rss = 0.0, peak_b = 0.0;
};

// One named stage: its wall time, its floor (the least time this machine needs for its work,
// StageWork; 0 when the stage has none), over MPI the part spent in MPI calls, and the parts its
// product names (a stage's `parts`, e.g. "ecp"), in the JSON and HDF5 timings as "<stage>_<part>".
struct StageTiming {
  std::string name;
  double seconds = 0.0, floor_seconds = 0.0, mpi_seconds = 0.0;
  std::size_t drawn_peak_bytes = 0;  // the most this rank drew from the budget at once during it
  std::vector<StagePart> parts;
  std::string part_key(const StagePart& part) const { return name + "_" + part.name; }
};

struct RunResult {
  std::string molecule;  // name, or formula when unnamed
  std::optional<Molecule> geometry;
  std::string basis, df_basis, jk_basis;
  std::optional<ScfType> scf_type;       // none: no SCF ran (an energy-only /df input)
  bool scf_energy_given = false;         // E_SCF came with the orbitals: no Fock build, no JK set
  Reference reference = Reference::rhf;  // rhf or uhf, never automatic
  // Active occupied and virtual orbitals (UHF: nocc and nvir α, nocc_beta and nvir_beta β).
  int natom = 0, nbf = 0, nmo = 0, naux = 0, naux_jk = 0, nocc = 0, nvir = 0, nfrozen = 0;
  int nocc_beta = 0, nvir_beta = 0;
  double e_nuc = 0.0, e_scf = 0.0;
  double s2 = 0.0;  // UHF: ⟨S²⟩ of the determinant
  double e_ss = 0.0, e_os = 0.0, e_corr = 0.0, e_scs_corr = 0.0, e_total = 0.0;
  double e_aa = 0.0, e_bb = 0.0;  // UHF: e_ss by spin (e_os is E_αβ)
  std::vector<ScfIteration> scf_iterations;
  std::optional<Eigen::MatrixXd> gradient;  // --gradient: dE_MP2 total/dR, natom × 3 in Eh/bohr
  std::optional<Eigen::Vector3d> mp2_dipole_moment;  // --gradient: from the relaxed density, e·bohr about the origin
  std::optional<Orbitals> orbitals;
  std::optional<OrbitalBasis> orbital_basis;  // the orbitals' basis, for Molden and TREXIO output
  std::optional<kernels::Backend> backend;  // none: the gradient's amplitudes gave the energy (--gradient)
  kernels::Precision precision = kernels::Precision::fp64;
  kernels::Device device = kernels::Device::cpu;  // where the energy step ran
  // The GPU the energy step ran on, cuBLAS's rate at the scale of T_flat (gemm_m² × gemm_k, probed at
  // start-up), and the bytes of B copied to it.
  struct GpuUse {
    kernels::GpuProperties properties;
    std::size_t gemm_m = 0, gemm_k = 0;
    double gemm_gflops = 0.0;
    std::size_t uploaded_bytes = 0;
  };
  std::optional<GpuUse> gpu;
  int threads = 0;
  std::string blas_kernels;    // OpenBLAS kernel set the GEMMs ran on
  kernels::GemmRates gemm_rates;  // measured at start-up: the floors' yardstick
  // The energy step's own GEMM, T_ij = B_i B_jᵀ (nvir × nvir, inner dimension naux; UHF: α),
  // probed at start-up: the yardstick of the step's rate. Runs with an energy step only.
  struct EnergyGemmProbe {
    std::size_t nvir = 0, naux = 0;
    kernels::GemmRates rates;
  };
  std::optional<EnergyGemmProbe> energy_gemm_probe;
  double energy_flops = 0.0;  // the energy step's needed flops on this rank
  int ranks = 1;
  std::size_t peak_b_bytes = 0;  // B_ia^P held at once by this rank in the energy step
  std::vector<RankStats> rank_stats;  // every rank's, in rank order
  std::vector<StageTiming> stages;    // in the order they ran
  double energy_gemm_seconds = 0.0, energy_reduction_seconds = 0.0;  // when the backend splits them
  double total_seconds = 0.0;
  std::size_t memory_limit = 0, memory_baseline = 0, memory_peak_drawn = 0;  // the budget (bytes)
  std::size_t df_transform_batches = 0;  // batches of auxiliary shells: 1 unless the budget binds
  MemoryPlan memory_plan;                // rank 0's, stage by stage
  std::string scratch_path;
  std::size_t scratch_free_bytes = 0;    // at the start
  std::size_t scratch_written_bytes = 0, scratch_read_bytes = 0;  // rank 0's scratch I/O
  ResourceUsage resources;  // this rank's peak RSS and page faults at the end of the run

  bool unrestricted() const { return reference == Reference::uhf; }
};

// The outputs' names of what has no choice in RunOptions: "given" for E_SCF given with the
// orbitals, "none" for no SCF, "gradient" for the energy of a --gradient run.
inline std::string scf_type_name(const RunResult& r) {
  return r.scf_energy_given ? "given" : r.scf_type ? name_of(*r.scf_type) : "none";
}
inline std::string backend_name(const RunResult& r) { return r.backend ? name_of(*r.backend) : "gradient"; }

}  // namespace dfmp2
