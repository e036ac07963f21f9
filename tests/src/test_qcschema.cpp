// QCSchema in and out (src/io/qcschema, `dfmp2 qcschema`): AtomicInputs as QCEngine writes them
// (tests/reference/psi4_qcengine_energies.json keeps the ones its psi4 harness ran, with Psi4's
// results), their AtomicResults against Psi4's, and bad inputs as success: false.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "src/common/errors.hpp"
#include "src/io/qcschema.hpp"
#include "src/io/xyz.hpp"
#include "tests/src/run_command.hpp"

using namespace dfmp2;
using nlohmann::json;

namespace {

// Eh. Measured: 6.4e-12 apart at most (water MP2's total, through QCEngine); 1e-9 stays above the
// spread between machines' kernels and dfmp2's run-to-run spread on two threads (up to 1.6e-10 Eh).
constexpr double kPsi4Tolerance = 1e-9;

json qcschema_reference(const std::string& name) {
  for (const auto& ref : json::parse(read_text(source("tests/reference/psi4_qcengine_energies.json"))))
    if (ref["name"] == name) return ref;
  FAIL("no reference " << name);
  return {};
}

json water_input() { return qcschema_reference("water-mp2-cc-pvdz")["input"]; }

struct QcschemaRun {
  CommandResult command;
  json result;  // the AtomicResult file, null when none was written
};

// One thread: these molecules are too small to gain from more on a shared machine.
QcschemaRun run_qcschema(const json& input) {
  TempDir dir;
  const std::string in = dir.write("in.json", input.dump()), out = dir.path("out.json");
  QcschemaRun r{run_dfmp2("qcschema " + in + " -o " + out + " --quiet --threads 1"), nullptr};
  if (std::filesystem::exists(out)) r.result = json::parse(read_text(out));
  return r;
}

// A run of a Psi4 case's input: success, and the energies Psi4 gave through QCEngine.
json check_against_psi4(const std::string& name) {
  INFO(name);
  const json ref = qcschema_reference(name);
  const QcschemaRun r = run_qcschema(ref["input"]);
  REQUIRE(r.command.exit_code == 0);
  CHECK(r.command.err.empty());
  const json& result = r.result;
  CHECK(result["success"] == true);
  CHECK(result["schema_name"] == "qcschema_output");
  CHECK(result["molecule"] == ref["input"]["molecule"]);
  CHECK(result["keywords"] == ref["input"]["keywords"]);
  CHECK(result["provenance"]["creator"] == "dfmp2");
  CHECK(std::abs(result["return_result"].get<double>() - ref["return_energy"].get<double>()) < kPsi4Tolerance);
  for (const auto& [key, psi4] : ref["properties"].items()) {
    // Psi4's one- and two-electron parts and dipole are not dfmp2's; its SCF iterations differ.
    if (!result["properties"].contains(key) || key == "scf_iterations") continue;
    INFO(key);
    if (psi4.is_number_integer())
      CHECK(result["properties"][key] == psi4);
    else
      CHECK(std::abs(result["properties"][key].get<double>() - psi4.get<double>()) < kPsi4Tolerance);
  }
  CHECK_THAT(result["stdout"].get<std::string>(), Catch::Contains("dfmp2 — density-fitted MP2"));
  return result;
}

// What read_atomic_input says of the water input with one change.
std::string refusal(const std::function<void(json&)>& change) {
  json input = water_input();
  change(input);
  try {
    read_atomic_input(input);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("read_atomic_input: QCEngine's water MP2 input becomes the molecule, basis and options") {
  const QcschemaJob job = read_atomic_input(water_input());
  CHECK(job.method == QcMethod::mp2);
  REQUIRE(job.input.molecule);
  const Molecule& mol = *job.input.molecule;
  REQUIRE(mol.atoms.size() == 3);
  CHECK(mol.atoms[0].Z == 8);
  CHECK(mol.atoms[1].r[1] == 1.42759927);  // bohr, as given
  CHECK(mol.name == "H2O");
  CHECK(*job.options.basis == "cc-pvdz");
  CHECK(*job.options.df_basis == "cc-pvdz-ri");
  CHECK(*job.options.jk_basis == "cc-pvdz-jkfit");
  CHECK(job.options.scf_type == ScfType::df);
  CHECK(*job.options.scf.d_convergence == 1e-10);
  CHECK_FALSE(job.options.frozen_core);

  json input = water_input();
  input["molecule"]["real"] = {true, true, false};
  input["molecule"]["molecular_charge"] = 1.0;
  input["molecule"]["molecular_multiplicity"] = 1;
  input["model"]["method"] = "SCS-MP2";
  input["keywords"] = {{"freeze_core", "True"}, {"scf_type", "pk"}, {"backend", "loop"}, {"precision", "fp32"},
                       {"memory", "2GB"}, {"maxiter", 30}, {"reference", "uhf"}, {"guess", "core"}};
  const QcschemaJob other = read_atomic_input(input);
  CHECK(other.method == QcMethod::scs_mp2);
  CHECK(other.input.molecule->atoms[2].ghost);
  CHECK(electron_count(*other.input.molecule) == 8);  // O and H, charge +1, one H a ghost
  CHECK(other.options.frozen_core);
  CHECK(other.options.scf_type == ScfType::exact);
  CHECK(other.options.backend == kernels::Backend::loop);
  CHECK(other.options.precision == kernels::Precision::fp32);
  CHECK(other.options.memory_bytes == std::size_t(2) << 30);
  CHECK(other.options.scf.max_iterations == 30);
  CHECK(other.options.reference == Reference::uhf);
  CHECK(other.options.guess == ScfGuess::core);
  input["keywords"] = {{"memory", 1e9}};  // a number: bytes
  CHECK(read_atomic_input(input).options.memory_bytes == 1'000'000'000);
}

TEST_CASE("read_atomic_input refuses what dfmp2 cannot run, naming the field") {
  using Change = std::function<void(json&)>;
  const std::pair<Change, std::string> cases[] = {
      {[](json& i) { i["driver"] = "gradient"; i["model"]["method"] = "hf"; }, "driver gradient needs model.method mp2"},
      {[](json& i) { i["driver"] = "hessian"; }, "driver 'hessian' is not one dfmp2 computes: driver must be energy or gradient"},
      {[](json& i) { i.erase("driver"); }, "driver is missing"},
      {[](json& i) { i["model"]["method"] = "ccsd"; }, "unknown model.method 'ccsd' (expected one of: hf, scf, mp2, scs-mp2)"},
      {[](json& i) { i["model"]["basis"] = json::object(); }, "model.basis must name an orbital basis set"},
      {[](json& i) { i["model"].erase("basis"); }, "model.basis is missing"},
      {[](json& i) { i["keywords"]["puream"] = true; }, "unknown keyword 'puream' (dfmp2 takes: backend, d_convergence"},
      {[](json& i) { i["keywords"]["scf_type"] = "cd"; }, "unknown keywords.scf_type 'cd'"},
      {[](json& i) { i["keywords"]["mp2_type"] = "conv"; }, "dfmp2 computes DF-MP2 only"},
      {[](json& i) { i["keywords"]["freeze_core"] = "maybe"; }, "keywords.freeze_core must be true or false"},
      {[](json& i) { i["keywords"]["e_convergence"] = -1; }, "keywords.e_convergence must be a finite number above 0"},
      {[](json& i) { i["keywords"]["maxiter"] = 0; }, "keywords.maxiter must be at least 1"},
      {[](json& i) { i["keywords"]["memory"] = "lots"; }, "invalid memory size 'lots'"},
      {[](json& i) { i["keywords"]["memory"] = true; }, "keywords.memory must be a size such as \"8GB\""},
      {[](json& i) { i["keywords"] = json::array(); }, "keywords must be a JSON object"},
      {[](json& i) { i["molecule"]["geometry"].erase(0); }, "molecule.geometry must be a flat list of 3 x 3 coordinates"},
      {[](json& i) { i["molecule"]["real"] = {true}; }, "molecule.real must list true or false for each of the 3 atoms"},
      {[](json& i) { i["molecule"]["real"] = {false, false, false}; }, "every atom of the molecule is a ghost atom"},
      {[](json& i) { i["molecule"]["molecular_charge"] = 0.5; }, "molecule.molecular_charge must be an integer"},
      {[](json& i) { i["molecule"]["molecular_multiplicity"] = 2; }, "multiplicity 2 needs an odd electron count"},
      {[](json& i) { i["molecule"]["symbols"][1] = "Xx"; }, "unknown element symbol 'Xx'"},
      {[](json& i) { i["molecule"].erase("symbols"); }, "molecule.symbols is missing"},
      {[](json& i) { i["schema_name"] = "qcschema_molecule"; }, "dfmp2 reads a QCSchema AtomicInput"},
      {[](json& i) { i["protocols"] = {{"stdout", "yes"}}; }, "protocols.stdout must be true or false"},
      {[](json& i) { i = json::array(); }, "the input must be a QCSchema AtomicInput, a JSON object"},
  };
  for (const auto& [change, message] : cases) {
    INFO(message);
    CHECK_THAT(refusal(change), Catch::Contains(message));
  }
}

TEST_CASE("dfmp2 qcschema: water MP2 and HF, hydroxyl UMP2 equal Psi4 1.3's through QCEngine to 1e-9 Eh") {
  const json mp2 = check_against_psi4("water-mp2-cc-pvdz");
  CHECK(mp2["properties"]["calcinfo_nalpha"] == 5);
  // SCS-MP2 (what method scs-mp2 returns) from Psi4's parts: E_SCF + 6/5 E_OS + 1/3 E_SS.
  const json psi4 = qcschema_reference("water-mp2-cc-pvdz")["properties"];
  const double psi4_scs = psi4["scf_total_energy"].get<double>() +
                          1.2 * psi4["mp2_opposite_spin_correlation_energy"].get<double>() +
                          psi4["mp2_same_spin_correlation_energy"].get<double>() / 3.0;
  CHECK(std::abs(mp2["extras"]["qcvars"]["SCS-MP2 TOTAL ENERGY"].get<double>() - psi4_scs) < kPsi4Tolerance);
  const json hf = check_against_psi4("water-hf-cc-pvdz");
  CHECK_FALSE(hf["properties"].contains("mp2_total_energy"));
  CHECK(hf["return_result"] == hf["properties"]["scf_total_energy"]);
  const json uhf = check_against_psi4("hydroxyl-mp2-cc-pvdz");
  CHECK(uhf["properties"]["calcinfo_nalpha"] == 5);
  CHECK(uhf["properties"]["calcinfo_nbeta"] == 4);
}

TEST_CASE("atomic_result: the method's energy, QCSchema's properties, Psi4's qcvars and the echoed input") {
  RunResult r;
  r.reference = Reference::uhf;
  r.natom = 2;
  r.nbf = 19;
  r.nmo = 19;
  r.nocc = 4;
  r.nocc_beta = 3;
  r.nfrozen = 1;
  r.e_nuc = 4.0;
  r.e_scf = -75.0;
  r.e_ss = -0.03;
  r.e_os = -0.12;
  r.e_corr = -0.15;
  r.e_scs_corr = 1.2 * r.e_os + r.e_ss / 3.0;
  r.e_total = -75.15;
  json input = water_input();
  input["extras"] = {{"mine", 1}};
  input["protocols"] = {{"stdout", false}};
  const json scs = atomic_result(input, QcMethod::scs_mp2, r, "the report");
  // Each field against the SCS-MP2 total made here, not against another field of the result.
  const double scs_total = r.e_scf + r.e_scs_corr;
  CHECK(scs["return_result"] == scs_total);
  CHECK(scs["properties"]["return_energy"] == scs_total);
  CHECK(scs["extras"]["qcvars"]["SCS-MP2 TOTAL ENERGY"] == scs_total);
  CHECK(scs["extras"]["qcvars"]["CURRENT ENERGY"] == scs_total);
  CHECK(scs["extras"]["mine"] == 1);
  CHECK(scs["properties"]["calcinfo_nalpha"] == 5);  // 4 active + 1 frozen
  CHECK(scs["properties"]["calcinfo_nbeta"] == 4);
  CHECK(scs["properties"]["mp2_same_spin_correlation_energy"] == -0.03);
  CHECK(scs["properties"]["mp2_total_energy"] == -75.15);
  CHECK_FALSE(scs.contains("stdout"));
  CHECK(scs["molecule"] == input["molecule"]);
  CHECK(scs["schema_name"] == "qcschema_output");
  CHECK(scs["success"] == true);
  const json hf = atomic_result(water_input(), QcMethod::hf, r, "the report");
  CHECK(hf["return_result"] == -75.0);
  CHECK_FALSE(hf["properties"].contains("mp2_total_energy"));
  CHECK_FALSE(hf["extras"]["qcvars"].contains("MP2 TOTAL ENERGY"));
  CHECK(hf["stdout"] == "the report");
  CHECK(atomic_result(water_input(), QcMethod::mp2, r, "")["return_result"] == -75.15);
}

TEST_CASE("dfmp2 qcschema: stdin to stdout") {
  TempDir dir;
  json input = water_input();
  input["model"]["basis"] = "sto-3g";
  input["keywords"] = json::object();
  const CommandResult r =
      run_command("(" + std::string(DFMP2_EXE) + " qcschema --quiet --threads 1 <" + dir.write("in.json", input.dump()) + ")");
  REQUIRE(r.exit_code == 0);
  const json result = json::parse(r.out);
  CHECK(result["success"] == true);
  CHECK(result["properties"]["calcinfo_nbasis"] == 7);
  CHECK_THAT(result["stdout"].get<std::string>(), Catch::Contains("Basis sto-3g"));
}

TEST_CASE("dfmp2 qcschema: a bad input or a failed run gives success false with the error's type") {
  json gradient = water_input();
  gradient["driver"] = "gradient";
  gradient["keywords"]["scf_type"] = "pk";
  json slow = water_input();
  slow["keywords"]["maxiter"] = 2;
  const std::tuple<std::string, std::string, std::string> cases[] = {
      {gradient.dump(), "input_error", "--gradient is not available for --scf exact"},
      {"{\"molecule\": ", "input_error", "the input is not JSON"},
      {slow.dump(), "convergence_error", "SCF did not converge in 2 iterations"},
  };
  for (const auto& [text, type, message] : cases) {
    INFO(message);
    TempDir dir;
    const std::string out = dir.path("out.json");
    const CommandResult r = run_dfmp2("qcschema " + dir.write("in.json", text) + " -o " + out + " --quiet --threads 1");
    CHECK(r.exit_code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::StartsWith("dfmp2: error: ") && Catch::Contains(message));
    REQUIRE(std::filesystem::exists(out));
    const json result = json::parse(read_text(out));
    CHECK(result["success"] == false);
    CHECK(result["error"]["error_type"] == type);
    CHECK_THAT(result["error"]["error_message"].get<std::string>(), Catch::Contains(message));
    CHECK(result["schema_name"] == "qcschema_output");
  }
}

TEST_CASE("dfmp2 qcschema: an unreadable input or unwritable result is one error line and no file") {
  TempDir dir;
  const std::string in = dir.write("in.json", water_input().dump());
  const std::pair<std::string, std::string> cases[] = {
      {"qcschema " + dir.path("none.json") + " -o " + dir.path("out.json"), "cannot read the QCSchema input"},
      {"qcschema " + in + " -o " + dir.path("no/such/dir/out.json"), "cannot write"},
      {"qcschema " + in + " -o " + in, "the result would overwrite the input"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    const CommandResult r = run_dfmp2(args + " --quiet");
    CHECK(r.exit_code == 1);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK_THAT(r.err, Catch::StartsWith("dfmp2: error: ") && Catch::Contains(message));
    CHECK_FALSE(std::filesystem::exists(dir.path("out.json")));
  }
  CHECK(json::parse(read_text(in)) == water_input());
}

TEST_CASE("dfmp2 qcschema: driver gradient returns the DF-MP2 gradient (natom × 3 row by row) and the relaxed "
          "dipole, as Psi4 1.3's") {
  json ref;
  for (const auto& r : json::parse(read_text(source("tests/reference/psi4_mp2_gradients.json"))))
    if (r["name"] == "water-cc-pvdz-mp2-grad") ref = r;
  REQUIRE(ref.is_object());
  json symbols = json::array(), geometry = json::array();
  for (const Atom& atom : read_xyz(source(ref["xyz"].get<std::string>())).atoms) {
    symbols.push_back(atom_label(atom));
    for (const double x : atom.r) geometry.push_back(x);
  }
  const json input = {{"molecule", {{"symbols", symbols}, {"geometry", geometry}, {"fix_com", true},
                                    {"fix_orientation", true}}},
                      {"driver", "gradient"},
                      {"model", {{"method", "mp2"}, {"basis", "cc-pvdz"}}},
                      {"keywords", {{"d_convergence", 1e-10}}}};
  const QcschemaRun r = run_qcschema(input);
  REQUIRE(r.command.exit_code == 0);
  REQUIRE(r.result["success"] == true);
  const json& gradient = r.result["return_result"];
  REQUIRE(gradient.size() == 9);
  CHECK(r.result["properties"]["return_gradient"] == gradient);
  CHECK(std::abs(r.result["properties"]["return_energy"].get<double>() - ref["e_total"].get<double>()) < 1e-9);
  for (std::size_t i = 0; i < 9; ++i) {
    INFO("element " << i);
    CHECK(std::abs(gradient[i].get<double>() - ref["gradient"][i / 3][i % 3].get<double>()) < 1e-8);
  }
  // The relaxed density's dipole moment, QCSchema's mp2_dipole_moment (e·a0).
  const json& dipole = r.result["properties"]["mp2_dipole_moment"];
  REQUIRE(dipole.size() == 3);
  for (std::size_t k = 0; k < 3; ++k) CHECK(std::abs(dipole[k].get<double>() - ref["dipole"][k].get<double>()) < 1e-8);
}
