// Energies against Psi4 1.3 (tests/reference/psi4_energies.json, made by
// tests/reference/psi4_reference.py) and every energy backend against the reference backend.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "src/run/driver.hpp"
#include "src/run/options.hpp"
#include "src/common/errors.hpp"
#include "src/io/xyz.hpp"

using namespace dfmp2;

namespace {

// Psi4 agreement the issue asks for, in Eh.
constexpr double kScfTolerance = 1e-7;
constexpr double kCorrTolerance = 1e-7;
// Cases up to this size run in the suite; larger ones are checked by hand (docs).
constexpr int kLargestTestedNbf = 150;

nlohmann::json psi4_references() {
  std::ifstream in(std::string(DFMP2_SOURCE_DIR) + "/tests/reference/psi4_energies.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// The Psi4 case's molecule into input, and its settings as options.
RunOptions case_options(const nlohmann::json& ref, RunInput& input) {
  input.path = std::string(DFMP2_SOURCE_DIR) + "/" + ref["xyz"].get<std::string>();
  input.molecule = read_xyz(input.path);
  RunOptions options;
  options.charge = ref["charge"].get<int>();
  options.basis = ref["basis"].get<std::string>();
  options.df_basis = ref["df_basis"].get<std::string>();
  if (ref["scf_type"] == "df") options.jk_basis = ref["jk_basis"].get<std::string>();
  options.scf_type = ref["scf_type"] == "df" ? ScfType::df : ScfType::exact;
  options.frozen_core = ref["freeze_core"].get<bool>();
  return options;
}

RunResult run_case(const nlohmann::json& ref) {
  RunInput input;
  const RunOptions options = case_options(ref, input);
  Progress quiet(true);
  return run(input, options, quiet);
}

}  // namespace

TEST_CASE("DF-RHF / RHF and DF-MP2 energies match Psi4 1.3 to 1e-7 Eh") {
  int tested = 0;
  for (const auto& ref : psi4_references()) {
    if (ref["nbf"].get<int>() > kLargestTestedNbf) continue;
    INFO(ref["name"].get<std::string>());
    const RunResult r = run_case(ref);  // default backend (auto) and precision (fp64)
    CHECK(r.nbf == ref["nbf"].get<int>());
    CHECK(r.naux == ref["naux"].get<int>());
    CHECK(r.nfrozen == ref["nfrozen"].get<int>());
    CHECK(std::abs(r.e_nuc - ref["e_nuc"].get<double>()) < 1e-8);
    CHECK(std::abs(r.e_scf - ref["e_scf"].get<double>()) < kScfTolerance);
    CHECK(std::abs(r.e_corr - ref["e_corr"].get<double>()) < kCorrTolerance);
    CHECK(std::abs(r.e_ss - ref["e_ss"].get<double>()) < kCorrTolerance);
    CHECK(std::abs(r.e_os - ref["e_os"].get<double>()) < kCorrTolerance);
    CHECK(std::abs(r.e_scs_corr - ref["e_scs_corr"].get<double>()) < kCorrTolerance);
    CHECK(std::abs(r.e_total - ref["e_total"].get<double>()) < kScfTolerance + kCorrTolerance);
    ++tested;  // cases run, not rows read
  }
  CHECK(tested >= 12);  // water, ammonia, methane × {DF, exact} × {all-electron, frozen core}
}

TEST_CASE("every backend and precision agrees with the reference backend on real molecules") {
  // Water (24 functions) and benzene (114 functions, 21 occupied: odd sizes for the pair blocks);
  // the SCF and DF transform run once per molecule, each backend on the same B.
  const auto refs = psi4_references();
  for (const char* name : {"water-cc-pvdz-df-ae", "benzene-cc-pvdz-df-ae"}) {
    DYNAMIC_SECTION(name) {
      const auto ref = std::find_if(refs.begin(), refs.end(), [&](const auto& r) { return r["name"] == name; });
      REQUIRE(ref != refs.end());
      RunInput input;
      RunOptions options = case_options(*ref, input);
      Progress quiet(true);
      PreparedRun prepared(input, options, quiet);
      const auto energy = [&](kernels::Backend backend, kernels::Precision precision) {
        return prepared.energy(backend, precision);
      };
      const RunResult reference = energy(kernels::Backend::reference, kernels::Precision::fp64);
      CHECK(std::abs(reference.e_corr - (*ref)["e_corr"].get<double>()) < kCorrTolerance);
      for (auto backend : {kernels::Backend::reference, kernels::Backend::loop, kernels::Backend::fused,
                           kernels::Backend::automatic}) {
        const RunResult fp64 = energy(backend, kernels::Precision::fp64);
        CHECK(std::abs(fp64.e_corr - reference.e_corr) <= 1e-10 * std::abs(reference.e_corr));
        CHECK(std::abs(fp64.e_os - reference.e_os) <= 1e-10 * std::abs(reference.e_os));
        const RunResult fp32 = energy(backend, kernels::Precision::fp32);
        CHECK(std::abs(fp32.e_corr - reference.e_corr) <= 1e-6);  // Eh
      }
    }
  }
}

TEST_CASE("energy-only runs take B and orbital energies from /df") {
  // A tiny tensor checked against the formula summed directly over all i, j, a, b.
  const std::size_t nocc = 2, nvir = 3, naux = 4;
  std::vector<double> B;
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 0.1);
  for (std::size_t k = 0; k < nocc * nvir * naux; ++k) B.push_back(normal(rng));
  GivenDFTensor df{nocc, nvir, naux, false, {-1.2, -0.6}, {0.2, 0.5, 0.9}, {}};
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
