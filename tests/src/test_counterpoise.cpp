// Ghost atoms and the counterpoise correction (src/run/counterpoise, --counterpoise) against Psi4
// 1.3.2's DF-MP2 runs of the same S22 dimers with ghost atoms
// (tests/reference/psi4_counterpoise_energies.json).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/common/errors.hpp"
#include "src/io/molden.hpp"
#include "src/io/xyz.hpp"
#include "src/run/counterpoise.hpp"
#include "tests/src/run_command.hpp"

namespace {

// Every energy and interaction energy against Psi4's, in Eh. Measured (one thread, as the runs here):
// at most 1.9e-9 for the ammonia dimer, 5.5e-9 for the water dimer (its interaction energies).
constexpr double kTolerance = 1e-8;

nlohmann::json counterpoise_reference(const std::string& name) {
  for (const auto& ref : nlohmann::json::parse(read_text(source("tests/reference/psi4_counterpoise_energies.json"))))
    if (ref["name"] == name) return ref;
  FAIL("no reference " << name);
  return {};
}

// With one thread: these molecules gain little from more on a shared machine.
std::string basis_options(const nlohmann::json& ref) {
  return " --threads 1 --basis " + ref["basis"].get<std::string>() + " --df-basis " + ref["df_basis"].get<std::string>() +
         " --jk-basis " + ref["jk_basis"].get<std::string>() + (ref["freeze_core"].get<bool>() ? " --frozen-core" : "");
}

// The five runs and the interaction energies of `dfmp2 <dimer> --counterpoise N` against Psi4's.
void check_counterpoise(const std::string& name) {
  INFO(name);
  const auto ref = counterpoise_reference(name);
  TempDir dir;
  const CommandResult r = run_dfmp2(source(ref["xyz"].get<std::string>()) + basis_options(ref) + " --counterpoise " +
                                    std::to_string(ref["natom_a"].get<int>()) + " --quiet --json " + dir.path("cp.json"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Counterpoise correction: monomer A atoms 1-" +
                                    std::to_string(ref["natom_a"].get<int>())));
  CHECK_THAT(r.out, Catch::Contains("Interaction energy  counterpoise-corrected            uncorrected"));
  const auto json = nlohmann::json::parse(read_text(dir.path("cp.json")));
  for (const auto& [key, value] : ref["interaction_energy"].items()) {
    INFO(key);
    CHECK(std::abs(json["interaction_energy"][key].get<double>() - value.get<double>()) < kTolerance);
  }
  for (const auto& [run, psi4] : ref["runs"].items()) {
    INFO(run);
    const auto& ours = json["counterpoise"]["runs"][run == "a" ? "a_alone" : run == "b" ? "b_alone" : run];
    CHECK(ours["nbf"] == psi4["nbf"]);
    CHECK(ours["nfrozen"] == psi4["nfrozen"]);
    CHECK(ours["nocc"].get<int>() + ours["nfrozen"].get<int>() == psi4["nalpha"].get<int>());
    for (const char* energy : {"e_nuc", "e_scf", "e_ss", "e_os", "e_total"})
      CHECK(std::abs(ours[energy].get<double>() - psi4[energy].get<double>()) < kTolerance);
  }
  // The top level is the dimer's run, as without --counterpoise.
  CHECK(json["e_total"] == json["counterpoise"]["runs"]["dimer"]["e_total"]);
  CHECK(json["counterpoise"]["monomer_a_atoms"] == ref["natom_a"]);
}

}  // namespace

TEST_CASE("S22 ammonia dimer, cc-pVDZ, with --counterpoise: interaction energies equal Psi4 1.3's to 1e-8 Eh") {
  check_counterpoise("s22-ammonia-dimer-cc-pvdz-df-ae");
}

// Hidden from the suite (the tag [.]), as it takes 5-12 s on two cores; the ammonia dimer runs the
// same code. By hand: build/tests/src/test_dfmp2 "[slow]".
TEST_CASE("S22 water dimer, aug-cc-pVDZ, frozen core, with --counterpoise: interaction energies equal Psi4 1.3's to 1e-8 Eh",
          "[.][slow]") {
  check_counterpoise("s22-water-dimer-aug-cc-pvdz-df-fc");
}

TEST_CASE("ghost atoms in an XYZ file: monomer A in the dimer basis, as Psi4 computed it") {
  const auto ref = counterpoise_reference("s22-ammonia-dimer-cc-pvdz-df-ae");
  const auto& psi4 = ref["runs"]["a_in_dimer_basis"];
  TempDir dir;
  std::istringstream lines(read_text(source(ref["xyz"].get<std::string>())));
  std::string xyz, line;
  for (int k = 1; std::getline(lines, line); ++k) {
    // Atoms 5-8 (lines 7-10), monomer B, become ghosts: the N written @N, the H atoms Gh(H).
    if (k >= 7) {
      const auto space = line.find(' ');
      line = k == 7 ? "@" + line : "Gh(" + line.substr(0, space) + ")" + line.substr(space);
    }
    xyz += line + "\n";
  }
  const std::string path = dir.write("ghosts.xyz", xyz);
  const CommandResult r = run_dfmp2(path + basis_options(ref) + " --quiet --json " + dir.path("a.json"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Gh(N)") && Catch::Contains("Gh(H)"));
  const auto json = nlohmann::json::parse(read_text(dir.path("a.json")));
  CHECK(json["nbf"] == psi4["nbf"]);
  CHECK(json["nocc"] == psi4["nalpha"]);
  CHECK(std::abs(json["e_nuc"].get<double>() - psi4["e_nuc"].get<double>()) < kTolerance);
  CHECK(std::abs(json["e_scf"].get<double>() - psi4["e_scf"].get<double>()) < kTolerance);
  CHECK(std::abs(json["e_total"].get<double>() - psi4["e_total"].get<double>()) < kTolerance);

  // dfmp2's HDF5 writers, Molden and TREXIO hold no ghost atoms: refused before the run.
  const CommandResult refused = run_dfmp2(path + basis_options(ref) + " --quiet --output " + dir.path("o.h5"));
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.err, Catch::StartsWith("dfmp2: error: --output, --molden and --trexio cannot hold ghost atoms"));
  CHECK_FALSE(std::filesystem::exists(dir.path("o.h5")));
  const CommandResult convert = run_dfmp2("convert " + path + " --basis cc-pvdz -o " + dir.path("g.h5"));
  CHECK(convert.exit_code == 1);
  CHECK_THAT(convert.err, Catch::Contains("convert writes no ghost atoms"));
  CHECK_FALSE(std::filesystem::exists(dir.path("g.h5")));
}

TEST_CASE("what --counterpoise cannot split is refused before any run") {
  using namespace dfmp2;
  RunInput dimer;
  dimer.path = source("inputs/s22/ammonia-dimer.xyz");
  dimer.molecule = read_xyz(dimer.path);
  RunOptions options;
  options.basis = "cc-pvdz";
  Progress quiet(true);
  const auto refusal = [&](const RunInput& input, const RunOptions& with, int natom_a) {
    try {
      run_counterpoise(input, with, natom_a, quiet);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_THAT(refusal(dimer, options, 8), Catch::Contains("--counterpoise 8 must leave each monomer an atom: between 1 and 7"));
  CHECK_THAT(refusal(dimer, options, 3), Catch::Contains("monomer A (atoms 1-3) has 9 electrons"));
  RunOptions charged = options;
  charged.charge = 1;
  CHECK_THAT(refusal(dimer, charged, 4), Catch::Contains("takes a neutral closed-shell dimer"));
  RunInput ghosts = dimer;
  ghosts.molecule->atoms.back().ghost = true;
  CHECK_THAT(refusal(ghosts, options, 4), Catch::Contains("--counterpoise places the ghost atoms itself"));
  RunInput orbitals = read_molden(source("tests/reference/molden/water-cc-pvdz-df-ae.molden"));
  CHECK_THAT(refusal(orbitals, options, 1), Catch::Contains("it needs a molecule alone"));

  // On the command line: the one error line, no output.
  TempDir dir;
  const CommandResult r = run_dfmp2(dimer.path + " --basis cc-pvdz --counterpoise 3 --quiet --json " + dir.path("x.json"));
  CHECK(r.exit_code == 1);
  CHECK(r.err == "dfmp2: error: --counterpoise takes neutral closed-shell monomers, and monomer A (atoms 1-3) has 9 "
                 "electrons\n");
  CHECK_FALSE(std::filesystem::exists(dir.path("x.json")));
}
