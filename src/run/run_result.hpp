// Everything a run produced, for the report (stdout, JSON) and the HDF5 results file.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/molecule/molecule.hpp"
#include "src/scf/orbitals.hpp"
#include "src/scf/rhf.hpp"

namespace dfmp2 {

// What one MPI rank sent and held (bytes).
struct RankStats {
  double bytes_sent = 0.0, peak_rss = 0.0, peak_b = 0.0;
};

struct RunResult {
  std::string molecule;  // name, or formula when unnamed
  std::optional<Molecule> geometry;
  std::string basis, df_basis, jk_basis, scf_type;  // scf_type: "df", "exact", "none" (energy only)
  int natom = 0, nbf = 0, nmo = 0, naux = 0, naux_jk = 0, nocc = 0, nvir = 0, nfrozen = 0;
  double e_nuc = 0.0, e_scf = 0.0;
  double e_ss = 0.0, e_os = 0.0, e_corr = 0.0, e_scs_corr = 0.0, e_total = 0.0;
  std::vector<ScfIteration> scf_iterations;
  std::optional<Orbitals> orbitals;
  std::string backend, precision;
  int threads = 0;
  std::string blas_kernels;  // OpenBLAS kernel set the GEMMs ran on
  int ranks = 1;
  std::size_t peak_b_bytes = 0;  // B_ia^P held at once by this rank in the energy step
  std::vector<RankStats> rank_stats;  // every rank's, in rank order
  // Stage name → wall seconds, in the order the stages ran ("total" last).
  std::vector<std::pair<std::string, double>> timings;
};

}  // namespace dfmp2
