// Energies against Psi4 1.3 (tests/reference/psi4_energies.json, made by
// tests/reference/psi4_reference.py; open-shell: psi4_uhf_energies.json, made by
// psi4_uhf_reference.py) and every energy backend against the reference backend.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/run/driver.hpp"
#include "src/run/options.hpp"
#include "src/common/errors.hpp"
#include "src/io/xyz.hpp"
#include "tests/src/psi4_case.hpp"

using namespace dfmp2;

namespace {

// Psi4 agreement of every energy, the total included, in Eh (README.md). Measured on 2026-11-27:
// at most 1.5e-8 (benzene's SCS-MP2 correlation, its RHF converged to dfmp2's default 1e-8) and
// 8.9e-9 (nitric oxide's UHF correlation energy); every other case within 2.4e-9.
constexpr double kEnergyTolerance = 1e-7;
// ⟨S²⟩ moves with the orbitals, linearly in their error: measured at most 7.6e-8 (nitric oxide).
constexpr double kS2Tolerance = 8e-7;
// The fourth-period cases (K–Kr: HBr, ZnH2; their own test case): measured at most 1.2e-9 Eh.
constexpr double kFourthPeriodTolerance = 1e-8;
const std::vector<std::string> kFourthPeriodCases = {"hydrogen-bromide-cc-pvdz-df-fc", "hydrogen-bromide-def2-svp-df-ae",
                                                     "zinc-hydride-def2-svp-df-fc"};
// Rb–Rn with the def2 sets' ECPs (psi4_ecp_energies.json and pyscf_ecp_energies.json, by
// psi4_ecp_reference.py and pyscf_ecp_reference.py on the same basis files): Psi4 1.3.2 and PySCF
// 2.14 agree to 6.3e-10 Eh but for AuH, where Psi4's own ECP quadrature fails ("Failed to
// converge"; 3.2e-5 Eh off PySCF), so AuH is checked against PySCF. dfmp2 measured on 2026-11-28
// at most 2.0e-9 Eh from them (AgH's correlation energy against PySCF; SCF energies ≤ 3e-12 from
// PySCF's, ≤ 6.3e-10 from Psi4's), since src/integrals/ecp_shell_pair sums the shell pairs that
// libecpint 1.0.7 unrolls inexactly (6.4e-8 before).
constexpr double kEcpTolerance = 1e-8;
const std::string kPsi4EcpQuadratureFails = "gold-hydride-def2-svp-df-ae";
// Cases up to this size run in the suite; larger ones are checked by hand (docs).
constexpr int kLargestTestedNbf = 150;

nlohmann::json psi4_references(const std::string& file = "psi4_energies.json") {
  return testing::psi4_cases(DFMP2_SOURCE_DIR, file);
}

nlohmann::json psi4_reference(const std::string& file, const std::string& name) {
  return testing::psi4_case(DFMP2_SOURCE_DIR, file, name);
}

RunOptions case_options(const nlohmann::json& ref, RunInput& input) {
  return testing::psi4_case_options(DFMP2_SOURCE_DIR, ref, input);
}

RunResult run_case(const nlohmann::json& ref) {
  RunInput input;
  const RunOptions options = case_options(ref, input);
  Progress quiet(true);
  return run(input, options, quiet);
}

// Sizes and every energy Psi4 reports, each within `tolerance` Eh; for UHF also ⟨S²⟩ and the
// αα / ββ split (the reference script's numpy sums from Psi4's own orbitals).
void check_against_psi4(const RunResult& r, const nlohmann::json& ref, double tolerance = kEnergyTolerance) {
  CHECK(r.nbf == ref["nbf"].get<int>());
  CHECK(r.naux == ref["naux"].get<int>());
  CHECK(r.nfrozen == ref["nfrozen"].get<int>());
  // Measured: 2.8e-14 Eh at most (benzene, 1.4e-16 of its 204 Eh), the tolerance about 10× that.
  CHECK(std::abs(r.e_nuc - ref["e_nuc"].get<double>()) < 3e-13);
  CHECK(std::abs(r.e_scf - ref["e_scf"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_corr - ref["e_corr"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_ss - ref["e_ss"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_os - ref["e_os"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_scs_corr - ref["e_scs_corr"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_total - ref["e_total"].get<double>()) < tolerance);
  if (!ref.contains("multiplicity")) return;
  CHECK(r.reference == Reference::uhf);
  CHECK(r.nocc + r.nfrozen == ref["nalpha"].get<int>());
  CHECK(r.nocc_beta + r.nfrozen == ref["nbeta"].get<int>());
  CHECK(std::abs(r.s2 - ref["s2"].get<double>()) < kS2Tolerance);
  CHECK(std::abs(r.e_aa - ref["numpy_e_aa"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_bb - ref["numpy_e_bb"].get<double>()) < tolerance);
}

// Every backend and precision on one B (the stages before the energy step run once) against the
// reference backend, which itself matches Psi4.
void check_backends_agree(const nlohmann::json& ref) {
  RunInput input;
  const RunOptions options = case_options(ref, input);
  Progress quiet(true);
  PreparedRun prepared(input, options, quiet);
  const RunResult reference = prepared.energy(kernels::Backend::reference, kernels::Precision::fp64);
  CHECK(std::abs(reference.e_corr - ref["e_corr"].get<double>()) < kEnergyTolerance);
  for (auto backend : {kernels::Backend::reference, kernels::Backend::loop, kernels::Backend::fused,
                       kernels::Backend::automatic}) {
    INFO(kernels::to_string(backend));
    const RunResult fp64 = prepared.energy(backend, kernels::Precision::fp64);
    const RunResult fp32 = prepared.energy(backend, kernels::Precision::fp32);
    for (const auto part : {&RunResult::e_corr, &RunResult::e_os, &RunResult::e_ss, &RunResult::e_aa,
                            &RunResult::e_bb}) {
      CHECK(std::abs(fp64.*part - reference.*part) <= 1e-10 * std::abs(reference.*part));
      CHECK(std::abs(fp32.*part - reference.*part) <= 1e-6);  // Eh
    }
  }
}

}  // namespace

TEST_CASE("DF-RHF / RHF and DF-MP2 energies match Psi4 1.3 to 1e-7 Eh") {
  int tested = 0;
  for (const auto& ref : psi4_references()) {
    const std::string name = ref["name"].get<std::string>();
    if (ref["nbf"].get<int>() > kLargestTestedNbf || std::ranges::count(kFourthPeriodCases, name) != 0) continue;
    INFO(name);
    check_against_psi4(run_case(ref), ref);  // default backend (auto) and precision (fp64)
    ++tested;  // cases run, not rows read
  }
  CHECK(tested >= 12);  // water, ammonia, methane × {DF, exact} × {all-electron, frozen core}
}

TEST_CASE("DF-RHF and DF-MP2 energies of K-Kr molecules (HBr, ZnH2, frozen core and all-electron) match Psi4 1.3 "
          "to 1e-8 Eh") {
  for (const std::string& name : kFourthPeriodCases) {
    INFO(name);
    const nlohmann::json ref = psi4_reference("psi4_energies.json", name);
    check_against_psi4(run_case(ref), ref, kFourthPeriodTolerance);
  }
}

TEST_CASE("molecules with ECPs (HI, HI+ UHF, AgH, AuH, (HI)2, DF and exact SCF, frozen core, def2-SVP and -TZVP) "
          "match Psi4 1.3 and PySCF 2.14 to 1e-8 Eh") {
  int tested = 0;
  for (const auto& ref : psi4_references("psi4_ecp_energies.json")) {
    const std::string name = ref["name"].get<std::string>();
    INFO(name);
    const RunResult r = run_case(ref);
    ++tested;
    if (name != kPsi4EcpQuadratureFails) {
      check_against_psi4(r, ref, kEcpTolerance);
      continue;
    }
    const nlohmann::json pyscf = psi4_reference("pyscf_ecp_energies.json", name);
    CHECK(r.nbf == pyscf["nbf"].get<int>());
    CHECK(std::abs(r.e_nuc - pyscf["e_nuc"].get<double>()) < 3e-13);
    CHECK(std::abs(r.e_scf - pyscf["e_scf"].get<double>()) < kEcpTolerance);
    CHECK(std::abs(r.e_corr - pyscf["e_corr"].get<double>()) < kEcpTolerance);
  }
  CHECK(tested == 9);
}

TEST_CASE("DF-UHF / UHF and DF-UMP2 energies and <S^2> match Psi4 1.3 to 1e-7 Eh") {
  // Doublets, triplets, cations, frozen core, exact SCF, aug and def2 sets: all 13 cases.
  int tested = 0;
  for (const auto& ref : psi4_references("psi4_uhf_energies.json")) {
    INFO(ref["name"].get<std::string>());
    check_against_psi4(run_case(ref), ref);
    ++tested;
  }
  CHECK(tested == 13);
}

TEST_CASE("every backend and precision agrees with the reference backend on real molecules") {
  // Water (24 functions) and benzene (114 functions, 21 occupied: odd sizes for the pair blocks).
  for (const char* name : {"water-cc-pvdz-df-ae", "benzene-cc-pvdz-df-ae"})
    DYNAMIC_SECTION(name) { check_backends_agree(psi4_reference("psi4_energies.json", name)); }
}

TEST_CASE("every backend and precision agrees with the reference backend on open-shell molecules") {
  // Triplet methylene (5 α, 3 β occupied) and the allyl radical (12 α, 11 β; 67 functions).
  for (const char* name : {"methylene-def2-svp-df-ae", "allyl-cc-pvdz-df-ae"})
    DYNAMIC_SECTION(name) { check_backends_agree(psi4_reference("psi4_uhf_energies.json", name)); }
}

TEST_CASE("UHF of a closed shell is RHF: same energies, no spin contamination, E_aa = E_bb") {
  // Water, density-fitted and exact SCF (sto-3g keeps the exact one quick).
  for (const auto& [basis, scf] : {std::pair{"cc-pvdz", ScfType::df}, {"sto-3g", ScfType::exact}}) {
    INFO(basis);
    RunInput input;
    input.path = std::string(DFMP2_SOURCE_DIR) + "/inputs/water.xyz";
    input.molecule = read_xyz(input.path);
    RunOptions options;
    options.basis = basis;
    options.scf_type = scf;
    Progress quiet(true);
    const RunResult rhf = run(input, options, quiet);
    options.reference = Reference::uhf;
    const RunResult uhf = run(input, options, quiet);
    CHECK(rhf.reference == Reference::rhf);
    CHECK(uhf.reference == Reference::uhf);
    CHECK(std::abs(uhf.e_scf - rhf.e_scf) < 1e-9);
    CHECK(std::abs(uhf.e_os - rhf.e_os) < 1e-9);
    CHECK(std::abs(uhf.e_ss - rhf.e_ss) < 1e-9);
    CHECK(std::abs(uhf.e_aa - uhf.e_bb) < 1e-10);
    CHECK(std::abs(uhf.s2) < 1e-9);
  }
}

TEST_CASE("energy-only runs take B and orbital energies from /df") {
  // A tiny tensor checked against the formula summed directly over all i, j, a, b.
  const std::size_t nocc = 2, nvir = 3, naux = 4;
  std::vector<double> B;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 0.1);
  for (std::size_t k = 0; k < nocc * nvir * naux; ++k) B.push_back(normal(rng));
  GivenBiaTensor df{nocc, nvir, naux, false, {-1.2, -0.6}, {0.2, 0.5, 0.9}, {}};
  df.read_rows = [&](std::size_t first, std::size_t count, void* out) {
    std::copy(B.begin() + first * nvir * naux, B.begin() + (first + count) * nvir * naux, static_cast<double*>(out));
  };
  double expected = 0.0;
  auto T = [&](std::size_t i, std::size_t a, std::size_t j, std::size_t b) {
    double t = 0.0;
    for (std::size_t P = 0; P < naux; ++P) t += B[(i * nvir + a) * naux + P] * B[(j * nvir + b) * naux + P];
    return t;
  };
  for (std::size_t i = 0; i < nocc; ++i)
    for (std::size_t j = 0; j < nocc; ++j)
      for (std::size_t a = 0; a < nvir; ++a)
        for (std::size_t b = 0; b < nvir; ++b)
          expected += T(i, a, j, b) * (2 * T(i, a, j, b) - T(i, b, j, a)) /
                      (df.eps_occ[i] + df.eps_occ[j] - df.eps_vir[a] - df.eps_vir[b]);
  RunInput input;
  input.path = "memory";
  input.df = df;
  Progress quiet(true);
  const RunResult r = run(input, RunOptions{}, quiet);
  CHECK(r.nocc == 2);
  CHECK(r.naux == 4);
  CHECK(r.e_corr == Approx(expected).epsilon(1e-12));
}
