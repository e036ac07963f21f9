// The command line as a user meets it: good runs, and every kind of bad input getting one
// error line, a non-zero exit, no output file and an untouched input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>

#include <sys/stat.h>

#include <hdf5.h>
#include <hdf5_hl.h>
#include <nlohmann/json.hpp>

#include "kernels/blas_kernels.hpp"
#include "kernels/gpu/gpu_energy.hpp"
#include "src/common/progress.hpp"
#include "tests/src/psi4_case.hpp"
#include "tests/src/run_command.hpp"

namespace {

// inputs/water.xyz and inputs/open-shell/hydroxyl.xyz, and Psi4's DF-MP2 total energy for a
// case of tests/reference/<file>.
const std::string kWater = read_text(std::string(DFMP2_SOURCE_DIR) + "/inputs/water.xyz");
const std::string kHydroxyl = read_text(std::string(DFMP2_SOURCE_DIR) + "/inputs/open-shell/hydroxyl.xyz");
double psi4_total(const std::string& file, const std::string& name) {
  return dfmp2::testing::psi4_case(DFMP2_SOURCE_DIR, file, name)["e_total"].get<double>();
}
double water_cc_pvdz_total() { return psi4_total("psi4_energies.json", "water-cc-pvdz-df-ae"); }
// How far a CPU run's water total may be from Psi4's: measured 1.8e-10 Eh apart, the tolerance 10×.
constexpr double kWaterTotalTolerance = 2e-9;

// A bad input must produce exactly one error line naming the problem and no outputs.
void expect_rejected(const TempDir& dir, const std::string& args, const std::string& problem) {
  INFO("dfmp2 " << args);
  const std::string json = dir.path("out.json"), h5 = dir.path("out.h5");
  const CommandResult r = run_dfmp2(args + " --quiet --json " + json + " --output " + h5);
  CHECK(r.exit_code != 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::Contains(problem));
  CHECK_FALSE(std::filesystem::exists(json));
  CHECK_FALSE(std::filesystem::exists(h5));
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(json).parent_path()))
    CHECK(entry.path().string().find(".tmp-") == std::string::npos);
}

// An HDF5 file holding only /molecule/atomic_numbers, or with coordinates of the wrong shape.
std::string write_broken_h5(const TempDir& dir, const std::string& name, bool with_coordinates) {
  const std::string path = dir.path(name);
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  const hid_t group = H5Gcreate2(file, "molecule", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const int Z[3] = {8, 1, 1};
  const hsize_t n = 3;
  H5LTmake_dataset_int(group, "atomic_numbers", 1, &n, Z);
  if (with_coordinates) {
    const double xyz[6] = {0, 0, 0, 0, 1, 1};
    const hsize_t shape[2] = {3, 2};
    H5LTmake_dataset_double(group, "coordinates", 2, shape, xyz);
  }
  const char* basis = "cc-pvdz";
  H5LTset_attribute_string(file, "/", "basis", basis);
  H5Gclose(group);
  H5Fclose(file);
  return path;
}

// Rewrites a double dataset of an HDF5 file in place: `change` gets its values.
void rewrite_doubles(const std::string& path, const std::string& dataset,
                     const std::function<void(std::vector<double>&)>& change) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(file >= 0);
  const hid_t set = H5Dopen2(file, dataset.c_str(), H5P_DEFAULT);
  REQUIRE(set >= 0);
  const hid_t space = H5Dget_space(set);
  std::vector<double> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  change(values);
  H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Sclose(space);
  H5Dclose(set);
  H5Fclose(file);
}

// Every name in the directory, sorted.
std::vector<std::string> names_in(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Polls `done` every 10 ms for up to two minutes (sanitizer builds are slow).
bool eventually(const std::function<bool()>& done) {
  for (int tries = 0; tries < 12000; ++tries) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// True while `pid` holds `path` open.
bool holds_open(pid_t pid, const std::string& path) {
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    if (std::filesystem::read_symlink(fd.path(), ec) == path) return true;
  return false;
}

// Checks that each part of `stage` has a positive wall time in the JSON's timings ("<stage>_<part>")
// and an "of which" row in the report, and that together they stay within the stage's time.
void check_stage_parts(const nlohmann::json& j, const std::string& report, const std::string& stage,
                       std::initializer_list<const char*> parts) {
  double sum = 0.0;
  for (const std::string part : parts) {
    INFO(stage << " " << part);
    const double seconds = j.at("timings").at(stage + "_" + part).get<double>();
    CHECK(seconds > 0.0);
    sum += seconds;
    CHECK_THAT(report, Catch::Contains("\n    of which " + part + " "));
  }
  CHECK(sum <= j["timings"][stage].get<double>());
}

}  // namespace

TEST_CASE("an XYZ run prints the report and writes JSON with the documented keys") {
  TempDir dir;
  const std::string xyz = dir.write("water.xyz", kWater);
  const CommandResult r =
      run_dfmp2(xyz + " --basis cc-pvdz --quiet --json " + dir.path("w.json"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("MP2 correlation"));
  const auto j = nlohmann::json::parse(read_text(dir.path("w.json")));
  for (const char* key : {"molecule", "natom", "nbf", "naux", "naux_jk", "nocc", "nvir", "nfrozen",
                          "e_nuc", "e_scf", "e_ss", "e_os", "e_corr", "e_scs_corr", "e_total",
                          "backend", "precision", "threads", "blas_kernels", "timings"})
    CHECK(j.contains(key));
  for (const char* stage : {"setup", "integrals", "scf", "df_transform", "energy", "total"})
    CHECK(j["timings"].contains(stage));
  for (const char* stage : {"integrals", "scf", "df_transform", "energy"})
    CHECK(j["floors"][stage].get<double>() > 0.0);
  // The SCF's atomic guess and its iterations' J/K builds, within the SCF stage's time.
  check_stage_parts(j, r.out, "scf", {"guess", "jk"});
  // ... the J/K builds' time iteration by iteration.
  const auto& jk_seconds = j.at("scf_jk_seconds");
  REQUIRE(jk_seconds.size() == j["scf_iterations"].get<std::size_t>());
  double jk_sum = 0.0;
  for (const auto& seconds : jk_seconds) jk_sum += seconds.get<double>();
  CHECK(jk_sum == Approx(j["timings"]["scf_jk"].get<double>()).epsilon(1e-12));
  CHECK(j["gemm_gflops"]["fp64"].get<double>() > 0.0);
  // The energy step's GEMM shape probed, and the step's rate beside it.
  const auto& probe = j["energy_gemm_probe"];
  CHECK((probe["m"] == j["nvir"] && probe["n"] == j["nvir"] && probe["k"] == j["naux"]));
  CHECK(probe["fp64_gflops"].get<double>() > 0.0);
  CHECK(probe["fp32_gflops"].get<double>() > 0.0);
  CHECK(probe["energy_gflops"].get<double>() > 0.0);
  CHECK(probe["fraction"].get<double>() == Approx(probe["energy_gflops"].get<double>() / probe["fp64_gflops"].get<double>()));
  CHECK_THAT(r.out, Catch::Contains("% of DGEMM at its shape 19 × 19 × 84"));
  CHECK(j["resources"]["peak_rss_bytes"].get<double>() > 0.0);
  CHECK(j["resources"]["minor_page_faults"].get<double>() > 0.0);
  CHECK(j["nbf"] == 24);
  CHECK(j["e_total"].get<double>() == Approx(water_cc_pvdz_total()).margin(kWaterTotalTolerance));
}

TEST_CASE("the report names the OpenBLAS kernels and notes when OPENBLAS_CORETYPE narrows them") {
  TempDir dir;
  const std::string xyz = dir.write("water.xyz", kWater);
  const std::string args = " " + xyz + " --basis sto-3g --json " + dir.path("w.json");
  const CommandResult r = run_command("OPENBLAS_CORETYPE=Haswell " + std::string(DFMP2_EXE) + args);
  REQUIRE(r.exit_code == 0);
  CHECK(nlohmann::json::parse(read_text(dir.path("w.json")))["blas_kernels"] == "Haswell");
  CHECK_THAT(r.out, Catch::Contains("OpenBLAS kernels Haswell"));
  if (dfmp2::kernels::cpu_has_avx512())
    CHECK_THAT(r.err, Catch::Contains("because OPENBLAS_CORETYPE=Haswell is set"));
  else
    CHECK_THAT(r.err, !Catch::Contains("OPENBLAS_CORETYPE"));
  const CommandResult quiet = run_command("OPENBLAS_CORETYPE=Haswell " + std::string(DFMP2_EXE) + args + " --quiet");
  REQUIRE(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("progress goes to stderr unless --quiet") {
  TempDir dir;
  const std::string xyz = dir.write("water.xyz", kWater);
  const CommandResult r = run_dfmp2(xyz + " --basis cc-pvdz --gradient");
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("SCF iter"));
  CHECK_THAT(r.err, Catch::Contains("MP2 gradient: Z-vector iter   0  max |residual| = "));
  const CommandResult quiet = run_dfmp2(xyz + " --basis cc-pvdz --gradient --quiet");
  REQUIRE(quiet.exit_code == 0);
  CHECK(without_notes(quiet.err).empty());
}

TEST_CASE("a stage's share done is printed at most twice a second, its end when it took a second") {
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  dfmp2::Progress progress(false, sink);
  progress.begin("quick");
  progress.fraction(0.5);
  progress.fraction(1.0);
  progress.begin("slow");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  progress.fraction(0.4);
  progress.fraction(0.5);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  progress.fraction(1.0);
  std::rewind(sink);
  std::string printed;
  for (int c; (c = std::fgetc(sink)) != EOF;) printed += static_cast<char>(c);
  std::fclose(sink);
  CHECK_THAT(printed, !Catch::Contains("quick"));
  CHECK_THAT(printed, Catch::Contains("slow:  40.0% done"));
  CHECK_THAT(printed, !Catch::Contains("50.0%"));
  CHECK_THAT(printed, Catch::Contains("slow: 100.0% done"));
}

TEST_CASE("a set-up step says so once it has run its time, and when it ends, and a quick one says nothing") {
  std::FILE* sink = std::tmpfile();
  REQUIRE(sink != nullptr);
  const dfmp2::Progress progress(false, sink);
  { const dfmp2::Progress::Step quick(progress, "quick step", std::chrono::milliseconds(300)); }
  {
    const dfmp2::Progress::Step slow(progress, "slow step", std::chrono::milliseconds(100));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  const dfmp2::Progress quiet(true, sink);
  { const dfmp2::Progress::Step unheard(quiet, "quiet step", std::chrono::milliseconds(0)); }
  std::rewind(sink);
  std::string printed;
  for (int c; (c = std::fgetc(sink)) != EOF;) printed += static_cast<char>(c);
  std::fclose(sink);
  CHECK_THAT(printed, Catch::StartsWith("dfmp2: slow step (0.1 s so far)\ndfmp2: slow step: done in 0."));
  CHECK(std::count(printed.begin(), printed.end(), '\n') == 2);
}

TEST_CASE("convert writes an HDF5 input that runs to the same energy, and results feed back") {
  TempDir dir;
  const std::string xyz = dir.write("water.xyz", kWater);
  const std::string h5 = dir.path("water.h5");
  REQUIRE(run_dfmp2("convert " + xyz + " --basis cc-pvdz -o " + h5).exit_code == 0);
  const auto before = std::filesystem::last_write_time(h5);
  const CommandResult r = run_dfmp2(h5 + " --quiet --json " + dir.path("a.json") + " --output " +
                                    dir.path("results.h5"));
  REQUIRE(r.exit_code == 0);
  CHECK(std::filesystem::last_write_time(h5) == before);
  const auto a = nlohmann::json::parse(read_text(dir.path("a.json")));
  CHECK(a["e_total"].get<double>() == Approx(water_cc_pvdz_total()).margin(kWaterTotalTolerance));
  // The results file carries the orbitals: the SCF is skipped, the energies stay.
  const CommandResult again =
      run_dfmp2(dir.path("results.h5") + " --quiet --json " + dir.path("b.json"));
  REQUIRE(again.exit_code == 0);
  const auto b = nlohmann::json::parse(read_text(dir.path("b.json")));
  CHECK(b["e_scf"].get<double>() == Approx(a["e_scf"].get<double>()).margin(1e-9));
  CHECK(b["e_corr"].get<double>() == Approx(a["e_corr"].get<double>()).margin(1e-9));
  // --frozen-orbitals N freezes the N lowest orbitals (PySCF's frozen=N): water's one is its core.
  REQUIRE(run_dfmp2(dir.path("results.h5") + " --quiet --frozen-orbitals 1 --json " + dir.path("n.json")).exit_code == 0);
  REQUIRE(run_dfmp2(dir.path("results.h5") + " --quiet --frozen-core --json " + dir.path("core.json")).exit_code == 0);
  const auto n = nlohmann::json::parse(read_text(dir.path("n.json")));
  const auto core = nlohmann::json::parse(read_text(dir.path("core.json")));
  CHECK(n["nfrozen"] == 1);
  CHECK(n["e_corr"].get<double>() == Approx(core["e_corr"].get<double>()).margin(1e-12));
  CHECK(n["e_corr"].get<double>() > b["e_corr"].get<double>() + 1e-3);
  expect_rejected(dir, dir.path("results.h5") + " --frozen-orbitals 5", "frozen core leaves no active occupied orbital");
  expect_rejected(dir, dir.path("results.h5") + " --frozen-orbitals 1 --frozen-core", "--frozen-core excludes --frozen-orbitals");
  // Options on the command line override the file.
  const CommandResult fc = run_dfmp2(h5 + " --quiet --frozen-core --basis sto-3g --json " +
                                     dir.path("c.json"));
  REQUIRE(fc.exit_code == 0);
  const auto c = nlohmann::json::parse(read_text(dir.path("c.json")));
  CHECK(c["nbf"] == 7);
  CHECK(c["nfrozen"] == 1);
}

// Psi4 1.3.2's DF-MP2 gradient of water (tests/reference/psi4_mp2_gradients.json); the SCF
// converged as tightly as the gradient tests' (at the default 1e-8 it differs by about 1e-7).
TEST_CASE("the DF-MP2 gradient (--gradient) in the report and the JSON, as Psi4's, and refused where not covered") {
  TempDir dir;
  const std::string xyz = dir.write("water.xyz", kWater);
  const CommandResult r =
      run_dfmp2(xyz + " --basis cc-pvdz --gradient --d-convergence 1e-10 --quiet --json " + dir.path("g.json") +
                " --output " + dir.path("g.h5"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("DF-MP2 gradient (Eh/bohr)"));
  const auto j = nlohmann::json::parse(read_text(dir.path("g.json")));
  nlohmann::json reference, reference_dipole;
  for (const auto& ref : nlohmann::json::parse(read_text(std::string(DFMP2_SOURCE_DIR) +
                                                         "/tests/reference/psi4_mp2_gradients.json")))
    if (ref["name"] == "water-cc-pvdz-mp2-grad") {
      reference = ref["gradient"];
      reference_dipole = ref["dipole"];
    }
  REQUIRE(j["gradient"].size() == 3);
  REQUIRE(j["mp2_dipole_moment"].size() == 3);
  CHECK_THAT(r.out, Catch::Contains("Relaxed DF-MP2 dipole (e·bohr, origin 0)"));
  for (std::size_t k = 0; k < 3; ++k)
    CHECK(j["mp2_dipole_moment"][k].get<double>() == Approx(reference_dipole[k].get<double>()).margin(1e-8));
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t k = 0; k < 3; ++k)
      CHECK(j["gradient"][a][k].get<double>() == Approx(reference[a][k].get<double>()).margin(1e-8));
  CHECK(j["e_total"].get<double>() == Approx(psi4_total("psi4_mp2_gradients.json", "water-cc-pvdz-mp2-grad")).margin(1e-9));
  // The HDF5 results hold the same natom × 3 gradient and dipole moment.
  const hid_t results = H5Fopen(dir.path("g.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(results >= 0);
  int rank = 0;
  REQUIRE(H5LTget_dataset_ndims(results, "/gradient", &rank) >= 0);
  REQUIRE(rank == 2);
  hsize_t dims[2] = {0, 0};
  H5LTget_dataset_info(results, "/gradient", dims, nullptr, nullptr);
  CHECK((dims[0] == 3 && dims[1] == 3));
  std::vector<double> stored(9);
  H5LTread_dataset_double(results, "/gradient", stored.data());
  std::vector<double> dipole(3);
  CHECK(H5LTread_dataset_double(results, "/mp2_dipole_moment", dipole.data()) >= 0);
  H5Fclose(results);
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t k = 0; k < 3; ++k) CHECK(stored[3 * a + k] == j["gradient"][a][k].get<double>());
  for (std::size_t k = 0; k < 3; ++k) CHECK(dipole[k] == j["mp2_dipole_moment"][k].get<double>());

  // Its energies come from the gradient's amplitudes: the same as a run of the energy step.
  REQUIRE(run_dfmp2(xyz + " --basis cc-pvdz --d-convergence 1e-10 --quiet --json " + dir.path("e.json")).exit_code == 0);
  const auto e = nlohmann::json::parse(read_text(dir.path("e.json")));
  for (const char* key : {"e_os", "e_ss", "e_corr", "e_scs_corr", "e_total"})
    CHECK(j[key].get<double>() == Approx(e[key].get<double>()).margin(1e-10));
  CHECK(j["backend"] == "gradient");
  CHECK(j["timings"]["energy"].get<double>() == 0.0);  // no energy step
  CHECK_FALSE(j.contains("energy_gemm_probe"));
  CHECK(j["floors"]["gradient"].get<double>() > 0.0);
  // Its phases' wall times, within the gradient stage's: in the JSON and the report's "of which" rows.
  check_stage_parts(j, r.out, "gradient", {"ri_b", "ampl", "ri_lag", "zvector", "jk_set", "ri_set"});
  CHECK_FALSE(j["timings"].contains("gradient_ecp"));

  expect_rejected(dir, xyz + " --basis cc-pvdz --backend fused --gradient",
                  "--backend and --precision do not apply with --gradient");
  expect_rejected(dir, xyz + " --basis cc-pvdz --scf exact --gradient", "--gradient is not available for --scf exact");
  expect_rejected(dir, xyz + " --basis cc-pvdz --counterpoise 1 --gradient", "--gradient is not available with --counterpoise");

  // Given orbitals (the results file's) give the same gradient when they are the SCF solution of
  // this JK set (measured 1.2e-10 Eh/bohr apart), and are refused with another set, whose Fock
  // operator they do not solve (largest F_ia 4.6e-5 Eh).
  REQUIRE(run_dfmp2(dir.path("g.h5") + " --gradient --quiet --json " + dir.path("given.json")).exit_code == 0);
  const auto given = nlohmann::json::parse(read_text(dir.path("given.json")));
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t k = 0; k < 3; ++k)
      CHECK(given["gradient"][a][k].get<double>() == Approx(j["gradient"][a][k].get<double>()).margin(1e-9));
  expect_rejected(dir, dir.path("g.h5") + " --gradient --jk-basis cc-pvtz-jkfit",
                  "--gradient needs given orbitals converged with the JK set 'cc-pvtz-jkfit'");
}

// The UHF DF-MP2 gradient on the command line (its values: tests/src/test_gradient.cpp).
TEST_CASE("a UHF run with --gradient: the gradient and the relaxed dipole in the report and the JSON") {
  TempDir dir;
  const std::string oh = dir.write("oh.xyz", kHydroxyl);
  const CommandResult r = run_dfmp2(oh + " --basis cc-pvdz --multiplicity 2 --frozen-core --gradient --quiet --json " +
                                    dir.path("g.json"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("DF-MP2 gradient (Eh/bohr)"));
  CHECK_THAT(r.out, Catch::Contains("Relaxed DF-MP2 dipole (e·bohr, origin 0)"));
  const auto j = nlohmann::json::parse(read_text(dir.path("g.json")));
  CHECK(j["reference"] == "uhf");
  REQUIRE(j["gradient"].size() == 2);
  REQUIRE(j["mp2_dipole_moment"].size() == 3);
  // The bond lies along z: equal and opposite forces along it, none across it. Translation and
  // rotation leave the energy unchanged only at converged orbitals and Z-vector (residual 1e-10):
  // the residual leaves up to 1e-10 Eh/bohr across the bond, more or less by CPU, so the margin is
  // 1e-8, against a force of 5e-3.
  const double g_z = j["gradient"][1][2].get<double>();
  CHECK(std::abs(g_z) > 1e-4);
  CHECK(j["gradient"][0][2].get<double>() == Approx(-g_z).margin(1e-8));
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t k = 0; k < 2; ++k) CHECK(std::abs(j["gradient"][a][k].get<double>()) < 1e-8);
  // Its energies, split by spin, from the gradient's amplitudes: as the energy step's.
  REQUIRE(run_dfmp2(oh + " --basis cc-pvdz --multiplicity 2 --frozen-core --quiet --json " + dir.path("e.json"))
              .exit_code == 0);
  const auto e = nlohmann::json::parse(read_text(dir.path("e.json")));
  for (const char* key : {"e_aa", "e_bb", "e_os", "e_ss", "e_total"})
    CHECK(j[key].get<double>() == Approx(e[key].get<double>()).margin(1e-10));
}

TEST_CASE("a UHF gradient without β electrons (H2⁺): no correlation energy, equal and opposite forces") {
  // The β set has no occupied orbital: its arrays are empty, and its Z-vector products skipped.
  TempDir dir;
  const std::string h2 = dir.write("h2.xyz", "2\nH2+\nH 0 0 0\nH 0 0 1.1\n");
  const CommandResult r = run_dfmp2(h2 + " --basis cc-pvdz --charge 1 --multiplicity 2 --gradient --quiet --json " +
                                    dir.path("g.json"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(read_text(dir.path("g.json")));
  CHECK(std::abs(j["e_corr"].get<double>()) < 1e-14);  // one electron: no pair (measured: 3.5e-35)
  const double g_z = j["gradient"][1][2].get<double>();
  CHECK(std::abs(g_z) > 1e-3);
  CHECK(j["gradient"][0][2].get<double>() == Approx(-g_z).margin(1e-8));  // as the hydroxyl radical's above
}

TEST_CASE("a UHF run: both spins in the report, JSON and HDF5, and the results file feeds back") {
  TempDir dir;
  const std::string oh = dir.write("oh.xyz", kHydroxyl);
  const CommandResult r = run_dfmp2(oh + " --basis cc-pvdz --multiplicity 2 --quiet --json " + dir.path("a.json") +
                                    " --output " + dir.path("results.h5"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("SCF (df, UHF)"));
  CHECK_THAT(r.out, Catch::Contains("<S^2> 0.754599"));
  CHECK_THAT(r.out, Catch::Contains("MP2 same-spin alpha-alpha"));
  const auto a = nlohmann::json::parse(read_text(dir.path("a.json")));
  CHECK(a["reference"] == "uhf");
  CHECK(a["multiplicity"] == 2);
  CHECK(a["nocc"] == 5);
  CHECK(a["nocc_beta"] == 4);
  CHECK(a["nvir"] == 14);
  CHECK(a["nvir_beta"] == 15);
  CHECK(a["mo_energies"].size() == 19);
  CHECK(a["mo_energies_beta"].size() == 19);
  // Every energy of the report against Psi4's, none against another of dfmp2's: E_αα, E_ββ and
  // E_αβ are the reference script's sums over Psi4's orbitals, the rest Psi4's own. Measured:
  // 1.4e-12 Eh apart at most; 1e-9 Eh stays above dfmp2's run-to-run spread on two threads (up to
  // 1.6e-10 Eh).
  const auto psi4 = dfmp2::testing::psi4_case(DFMP2_SOURCE_DIR, "psi4_uhf_energies.json", "hydroxyl-cc-pvdz-df-ae");
  for (const auto& [ours, theirs] : {std::pair{"e_aa", "numpy_e_aa"}, {"e_bb", "numpy_e_bb"}, {"e_ab", "numpy_e_ab"},
                                     {"e_ss", "e_ss"}, {"e_os", "e_os"}, {"e_corr", "e_corr"}, {"e_total", "e_total"}}) {
    INFO(ours);
    CHECK(a[ours].get<double>() == Approx(psi4[theirs].get<double>()).margin(1e-9));
  }
  // The results file holds both spins' orbitals: the SCF is skipped, the energies stay.
  const CommandResult again = run_dfmp2(dir.path("results.h5") + " --quiet --json " + dir.path("b.json"));
  REQUIRE(again.exit_code == 0);
  const auto b = nlohmann::json::parse(read_text(dir.path("b.json")));
  CHECK(b["scf_iterations"] == 0);
  for (const char* key : {"e_scf", "e_aa", "e_bb", "e_os", "e_corr", "s2"}) {
    INFO(key);
    CHECK(b[key].get<double>() == Approx(a[key].get<double>()).margin(1e-9));
  }
  // The multiplicity stored by convert is used; --multiplicity overrides it.
  const std::string h5 = dir.path("oh.h5");
  REQUIRE(run_dfmp2("convert " + oh + " --basis cc-pvdz --multiplicity 2 -o " + h5).exit_code == 0);
  REQUIRE(run_dfmp2(h5 + " --quiet --json " + dir.path("c.json")).exit_code == 0);
  CHECK(nlohmann::json::parse(read_text(dir.path("c.json")))["e_corr"].get<double>() ==
        Approx(a["e_corr"].get<double>()).margin(1e-9));
  REQUIRE(run_dfmp2(h5 + " --quiet --charge 1 --multiplicity 3 --json " + dir.path("d.json")).exit_code == 0);
  CHECK(nlohmann::json::parse(read_text(dir.path("d.json")))["nocc_beta"] == 3);
}

TEST_CASE("bad spin input: one error line, non-zero exit, no output") {
  TempDir dir;
  const std::string water = dir.write("water.xyz", kWater) + " --basis sto-3g";
  const std::string oh = dir.write("oh.xyz", kHydroxyl) + " --basis sto-3g";
  for (const auto& [args, problem] : std::initializer_list<std::pair<std::string, const char*>>{
           {oh, "odd electron count (9) cannot be a singlet: give the multiplicity"},
           {oh + " --multiplicity 3", "multiplicity 3 needs an even electron count"},
           {water + " --multiplicity 2", "multiplicity 2 needs an odd electron count"},
           {water + " --multiplicity 13", "multiplicity 13 needs 12 unpaired electrons"},
           {water + " --multiplicity 0", "multiplicity 0 is not a spin multiplicity"},
           {oh + " --multiplicity 2 --reference rhf", "--reference rhf needs a closed shell"},
           {water + " --reference roks", "--reference"},
           {oh + " --multiplicity 2 --molden " + dir.path("oh.molden"), "--molden and --trexio write RHF orbitals only"}})
    expect_rejected(dir, args, problem);
  CHECK_FALSE(std::filesystem::exists(dir.path("oh.molden")));
  // UHF orbitals of a singlet given to an RHF run (the default for multiplicity 1).
  const std::string uhf = dir.path("uhf.h5");
  REQUIRE(run_dfmp2(water + " --reference uhf --quiet --output " + uhf).exit_code == 0);
  expect_rejected(dir, uhf, "given orbitals are UHF's (α and β) but the run is RHF");
  // convert checks the multiplicity before writing anything.
  const CommandResult convert =
      run_dfmp2("convert " + dir.path("water.xyz") + " --basis sto-3g --multiplicity 2 -o " + dir.path("w.h5"));
  CHECK(convert.exit_code != 0);
  CHECK_THAT(convert.err, Catch::Contains("multiplicity 2 needs an odd electron count"));
  CHECK_FALSE(std::filesystem::exists(dir.path("w.h5")));
}

TEST_CASE("bad input: one error line, non-zero exit, no output") {
  TempDir dir;
  const std::string water = dir.write("water.xyz", kWater);
  expect_rejected(dir, dir.path("missing.h5"), "does not exist");
  expect_rejected(dir, dir.write("text.h5", "not hdf5\n"), "not an HDF5 file");
  expect_rejected(dir, std::string(DFMP2_SOURCE_DIR) + "/tests/fuzz/regressions/hdf5/local-heap-crash.h5",
                  "is damaged: the HDF5 library crashes reading it");
  expect_rejected(dir, write_broken_h5(dir, "nocoord.h5", false), "coordinates");
  expect_rejected(dir, write_broken_h5(dir, "shape.h5", true), "coordinates");
  expect_rejected(dir, dir.write("xx.xyz", "1\nx\nXx 0 0 0\n") + " --basis cc-pvdz",
                  "unknown element symbol 'Xx'");
  expect_rejected(dir, water + " --basis cc-pv9z", "unknown basis set 'cc-pv9z'");
  expect_rejected(dir, dir.write("rb.xyz", "2\nx\nRb 0 0 0\nH 0 0 2.5\n") + " --basis cc-pvdz",
                  "no functions for element Rb");
  expect_rejected(dir, water + " --basis cc-pvdz --charge 1", "odd electron count (9) cannot be a singlet");
  expect_rejected(dir, dir.write("nan.xyz", "2\nx\nH 0 0 nan\nH 0 0 0.7\n") + " --basis cc-pvdz",
                  "non-finite");
  expect_rejected(dir, dir.write("same.xyz", "2\nx\nH 0 0 0\nH 0 0 0\n") + " --basis cc-pvdz",
                  "closer than 0.2 bohr");
  expect_rejected(dir, dir.write("bad.xyz", "3\nwater\nO 0 0\n") + " --basis cc-pvdz",
                  "is not 'El x y z'");
  expect_rejected(dir, water, "needs --basis");
  expect_rejected(dir, water + " --basis cc-pvdz --backend turbo", "--backend");
  expect_rejected(dir, water + " --basis cc-pvdz --precision fp16", "--precision");
  expect_rejected(dir, water + " --basis cc-pvdz --scf hf", "--scf");
  expect_rejected(dir, water + " --basis cc-pvdz --threads 0", "--threads");
  expect_rejected(dir, water + " --basis cc-pvdz --memory lots", "invalid memory size 'lots'");
  expect_rejected(dir, water + " --basis cc-pvdz --memory 1KB", "raise --memory");
  expect_rejected(dir, water + " --basis cc-pvdz --max-iterations 2", "did not converge");
  const std::string h_block = "spherical\n****\nH 0\nS 1 1.00\n nan 1.0\n****\n";
  expect_rejected(dir, water + " --basis " + dir.write("nan.gbs", h_block),
                  "nan.gbs), line 5: the exponent must be a finite number");
  expect_rejected(dir, water + " --basis " + dir.write("i.gbs", "spherical\n****\nO 0\nI 1 1.00\n 1.0 1.0\n****\n"),
                  "line 4: angular momentum 6 (I shell) is above 5");
}

TEST_CASE("orbitals or a DF tensor that MP2 cannot use are refused before any integral") {
  TempDir dir;
  const std::string water = dir.write("water.xyz", kWater);
  const std::string results = dir.path("results.h5");
  REQUIRE(run_dfmp2(water + " --basis sto-3g --quiet --output " + results).exit_code == 0);
  const auto edited = [&](const std::string& name, const std::string& dataset,
                          const std::function<void(std::vector<double>&)>& change) {
    const std::string path = dir.path(name);
    std::filesystem::copy_file(results, path);
    rewrite_doubles(path, dataset, change);
    return path;
  };
  expect_rejected(dir, edited("zero.h5", "/scf/mo_coefficients", [](auto& C) { std::fill(C.begin(), C.end(), 0.0); }),
                  "the given orbitals are not orthonormal in the basis's overlap");
  expect_rejected(dir, edited("scaled.h5", "/scf/mo_coefficients", [](auto& C) { C[0] *= 1.001; }),
                  "not orthonormal");
  expect_rejected(dir, edited("unsorted.h5", "/scf/mo_energies", [](auto& e) { std::swap(e[0], e[1]); }),
                  "the given orbitals are not sorted by orbital energy");
  // Water sto-3g: 5 occupied, 2 virtual; a virtual level with the HOMO's energy leaves no gap.
  expect_rejected(dir, edited("gap.h5", "/scf/mo_energies", [](auto& e) { e[5] = e[4]; }),
                  "the given orbitals have no occupied-virtual gap");
  const std::string df = std::string(DFMP2_SOURCE_DIR) + "/tests/fuzz/corpus/hdf5/df64.h5";
  const std::string lowered = dir.path("lowered.h5");
  std::filesystem::copy_file(df, lowered);
  rewrite_doubles(lowered, "/df/eps_vir", [](auto& e) { e[0] = -100.0; });
  expect_rejected(dir, lowered, "(/df/eps_occ, /df/eps_vir) have no occupied-virtual gap");
}

TEST_CASE("option values that cannot mean anything are refused") {
  TempDir dir;
  const std::string water = dir.write("water.xyz", kWater) + " --basis sto-3g";
  expect_rejected(dir, water + " --e-convergence nan", "--e-convergence");
  expect_rejected(dir, water + " --d-convergence inf", "--d-convergence");
  expect_rejected(dir, water + " --memory 0.5", "'0.5' is less than one byte");
  expect_rejected(dir, water + " --charge -2000", "2010 electrons need 1005 doubly occupied orbitals, but the basis has 7 functions");
  expect_rejected(dir, water + " --charge -2147483648", "more than dfmp2 takes");
  const std::string converted = dir.path("converted.h5");
  const CommandResult r = run_dfmp2("convert " + water + " --df-basis nosuch-ri -o " + converted);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("unknown basis set 'nosuch-ri'"));
  CHECK_FALSE(std::filesystem::exists(converted));
}

TEST_CASE("the energy step's device: auto runs where it can, gpu without a usable GPU is one error line, what it cannot run is refused") {
  TempDir dir;
  const std::string water = dir.write("water.xyz", kWater) + " --basis cc-pvdz";
  const std::string no_gpu = dfmp2::kernels::gpu_unavailable_reason();
  const CommandResult automatic = run_dfmp2(water + " --quiet --device auto --json " + dir.path("auto.json"));
  REQUIRE(automatic.exit_code == 0);
  // Water's step (2·10⁶ flops) is far below what the GPU needs to gain: auto keeps it on the CPU.
  CHECK(nlohmann::json::parse(read_text(dir.path("auto.json")))["device"] == "cpu");
  if (!no_gpu.empty()) {
    expect_rejected(dir, water + " --device gpu", "--device gpu: no usable GPU: " + no_gpu);
    // The gradient's amplitude loop runs on the GPU with --device gpu (tests/gpu runs it there).
    expect_rejected(dir, water + " --device gpu --gradient", "--device gpu: no usable GPU: " + no_gpu);
  } else {
    const CommandResult gpu = run_dfmp2(water + " --quiet --device gpu --json " + dir.path("gpu.json"));
    REQUIRE(gpu.exit_code == 0);
    const auto j = nlohmann::json::parse(read_text(dir.path("gpu.json")));
    CHECK(j["device"] == "gpu");
    CHECK(j["gpu"]["uploaded_bytes"].get<double>() > 0.0);
    CHECK(j["e_total"].get<double>() == Approx(water_cc_pvdz_total()).margin(1e-7));
  }
  expect_rejected(dir, water + " --device gpu --backend reference", "--backend reference runs on the CPU only");
  expect_rejected(dir, water + " --device tpu", "--device");
  expect_rejected(dir, water + " --gpu-memory 0.5", "'0.5' is less than one byte");
}

TEST_CASE("a broken auxiliary basis is refused before the SCF runs") {
  TempDir dir;
  const std::string twice =
      "spherical\n****\nH 0\nS 1 1.00\n 1.0 1.0\n****\nO 0\nS 1 1.00\n 1.0 1.0\n****\n"
      "H 0\nS 1 1.00\n 0.5 1.0\n****\n";
  const CommandResult r = run_dfmp2(dir.write("water.xyz", kWater) + " --basis cc-pvdz --df-basis " +
                                    dir.write("twice.gbs", twice));
  CHECK(r.exit_code == 1);
  CHECK(without_notes(r.err) == "dfmp2: error: basis '" + dir.path("twice.gbs") + "' (" + dir.path("twice.gbs") +
                     "), line 11: element H is given twice (first on line 3)\n");
}

TEST_CASE("the def2 fitting sets' i shells (3d metals) are computed: DF-SCF of ZnH2 near exact") {
  TempDir dir;
  const std::string znh2 = dir.write("znh2.xyz", "3\nzinc hydride\nZn 0 0 0\nH 0 0 1.54\nH 0 0 -1.54\n");
  const CommandResult df = run_dfmp2(znh2 + " --basis def2-svp --quiet --json " + dir.path("df.json"));
  REQUIRE(df.exit_code == 0);
  const CommandResult exact =
      run_dfmp2(znh2 + " --basis def2-svp --scf exact --quiet --json " + dir.path("exact.json"));
  REQUIRE(exact.exit_code == 0);
  const auto e_df = nlohmann::json::parse(read_text(dir.path("df.json")))["e_scf"].get<double>();
  const auto e_exact = nlohmann::json::parse(read_text(dir.path("exact.json")))["e_scf"].get<double>();
  CHECK(std::abs(e_df - e_exact) < 5e-4);  // the fitting error; 1.0e-4 Eh when written
}

TEST_CASE("an output path equal to the input is refused before anything runs") {
  TempDir dir;
  const std::string h5 = dir.path("water.h5");
  REQUIRE(run_dfmp2("convert " + dir.write("w.xyz", kWater) + " --basis cc-pvdz -o " + h5)
              .exit_code == 0);
  const std::string before = read_text(h5);
  const CommandResult r = run_dfmp2(h5 + " --quiet --output " + h5);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("overwrite the input"));
  CHECK(read_text(h5) == before);
}

TEST_CASE("the input and the outputs are compared as files, not as spellings") {
  TempDir dir;
  const std::string h5 = dir.path("water.h5");
  REQUIRE(run_dfmp2("convert " + dir.write("w.xyz", kWater) + " --basis sto-3g -o " + h5).exit_code == 0);
  const std::string before = read_text(h5);
  std::filesystem::create_symlink(h5, dir.path("link.json"));
  const std::string in_dir = "cd " + dir.path("") + " && " + DFMP2_EXE + " ";
  for (const auto& [args, problem] : std::vector<std::pair<std::string, std::string>>{
           {"water.h5 --json x.out --output " + dir.path("x.out"), "--json and --output name the same file"},
           {"water.h5 --json ./sub/../x.out --output x.out", "--json and --output name the same file"},
           {"water.h5 --output " + h5, "overwrite the input"},
           {h5 + " --json link.json", "overwrite the input"}}) {
    INFO(args);
    const CommandResult r = run_command(in_dir + args + " --quiet");
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::StartsWith("dfmp2: error: ") && Catch::Contains(problem));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  CHECK(read_text(h5) == before);
  CHECK(names_in(dir.path("")) == std::vector<std::string>{"link.json", "w.xyz", "water.h5"});
}

TEST_CASE("a failing --output leaves no --json file, and an older one as it was") {
  TempDir dir;
  const std::string json = dir.write("out.json", "older\n");
  const CommandResult r = run_dfmp2(dir.write("water.xyz", kWater) + " --basis sto-3g --quiet --json " +
                                    json + " --output " + dir.path("missing/out.h5"));
  CHECK(r.exit_code == 1);
  CHECK(without_notes(r.err) == "dfmp2: error: cannot write '" + dir.path("missing/out.h5") + "': directory '" +
                     dir.path("missing") + "' does not exist\n");
  CHECK(read_text(json) == "older\n");
  CHECK(names_in(dir.path("")) == std::vector<std::string>{"out.json", "water.xyz"});
}

TEST_CASE("an output given as a symlink is written through it, and the link stays") {
  TempDir dir;
  std::filesystem::create_directory(dir.path("results"));
  std::filesystem::create_symlink("results/w.json", dir.path("w.json"));  // dangling until written
  std::filesystem::create_symlink(dir.path("results/w.h5"), dir.path("w.h5"));
  dir.write("results/w.h5", "older");
  const CommandResult r = run_dfmp2(dir.write("water.xyz", kWater) + " --basis sto-3g --quiet --json " +
                                    dir.path("w.json") + " --output " + dir.path("w.h5"));
  REQUIRE(r.exit_code == 0);
  CHECK(std::filesystem::is_symlink(dir.path("w.json")));
  CHECK(std::filesystem::is_symlink(dir.path("w.h5")));
  CHECK(nlohmann::json::parse(read_text(dir.path("results/w.json")))["nbf"] == 7);
  CHECK(H5Fis_hdf5(dir.path("results/w.h5").c_str()) > 0);
  CHECK(names_in(dir.path("results")) == std::vector<std::string>{"w.h5", "w.json"});
}

TEST_CASE("SIGINT or SIGTERM while computing: the usual death, no output") {
  for (int signal : {SIGINT, SIGTERM}) {
    INFO("signal " << signal);
    TempDir dir, logs;
    const std::string benzene =
        dir.write("benzene.xyz", "12\nbenzene\nC 0 1.3968 0\nC 1.2097 0.6984 0\nC 1.2097 -0.6984 0\n"
                                 "C 0 -1.3968 0\nC -1.2097 -0.6984 0\nC -1.2097 0.6984 0\nH 0 2.4842 0\n"
                                 "H 2.1514 1.2421 0\nH 2.1514 -1.2421 0\nH 0 -2.4842 0\n"
                                 "H -2.1514 -1.2421 0\nH -2.1514 1.2421 0\n");
    BackgroundDfmp2 run({benzene, "--basis", "cc-pvdz", "--json", dir.path("b.json"), "--output",
                         dir.path("b.h5")},
                        logs);
    run.start();
    REQUIRE(eventually([&] { return run.err().find("SCF iter") != std::string::npos || !run.running(); }));
    kill(run.pid(), signal);
    const int status = run.wait();
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == signal);
    CHECK(names_in(dir.path("")) == std::vector<std::string>{"benzene.xyz"});
  }
}

TEST_CASE("SIGTERM while writing an output removes the temporary, and an ignored SIGINT stays ignored") {
  TempDir dir, logs;
  const std::string water = dir.write("water.xyz", kWater);
  const std::string json = dir.path("w.json");
  BackgroundDfmp2 run({water, "--basis", "cc-pvdz", "--quiet", "--json", json, "--output", dir.path("w.h5")},
                      logs, SIGINT);
  // The JSON temporary is made a full pipe, so dfmp2 blocks inside its write.
  const std::string temporary = std::filesystem::canonical(dir.path("")).string() + "/w.json.tmp-" +
                                std::to_string(run.pid());
  REQUIRE(mkfifo(temporary.c_str(), 0600) == 0);
  const int reader = open(temporary.c_str(), O_RDONLY | O_NONBLOCK);
  const int filler = open(temporary.c_str(), O_WRONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  REQUIRE(filler >= 0);
  fcntl(filler, F_SETPIPE_SZ, 4096);
  const std::string block(4096, 'x');
  while (write(filler, block.data(), block.size()) > 0) {
  }
  run.start();
  REQUIRE(eventually([&] { return holds_open(run.pid(), temporary) || !run.running(); }));
  REQUIRE(run.running());
  kill(run.pid(), SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(run.running());
  kill(run.pid(), SIGTERM);
  const int status = run.wait();
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  CHECK(names_in(dir.path("")) == std::vector<std::string>{"water.xyz"});
  close(reader);
  close(filler);
}
