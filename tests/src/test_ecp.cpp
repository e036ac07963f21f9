// Effective core potentials: the .gbs reader's ECP section, the shipped def2 sets' potentials,
// the electrons they replace, libecpint's integrals against closed forms, their timings, and the
// Molden and TREXIO files of an ECP molecule. Energies against Psi4 and PySCF: test_energies.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
extern "C" {  // trexio.h declares C functions without a C++ guard
#include <trexio.h>
}

#include "src/common/errors.hpp"
#include "src/integrals/ecp.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/io/trexio_io.hpp"
#include "src/molecule/basis.hpp"
#include "src/molecule/molecule.hpp"
#include "tests/src/run_command.hpp"
#include "tests/src/run_json.hpp"

using namespace dfmp2;

namespace {

const std::string kHydrogenIodide = "tests/reference/molecules/hydrogen-iodide.xyz";

// H and I functions, then Psi4's ECP section: the element named again, its header, its channels.
const std::string kIodine =
    "spherical\n****\nH 0\nS 1 1.00\n 1.0 1.0\n****\nI 0\nS 1 1.00\n 0.5 1.0\nP 1 1.00\n 0.4 1.0\n****\n";
const std::string kIodinePotential =
    "I 0\nI-ECP 2 28\nd-ul potential\n 1\n2 3.84 -12.3\ns-ul potential\n 2\n2 5.04 89.5\n1 1.97 0.49\n"
    "p-d potential\n 1\n0 4.26 58.6\n";

BasisSetData parse_ecp_text(const std::string& text) { return parse_gbs(text, "ecp", "inline", BasisRole::orbital); }

Molecule two_atoms(int Z1, int Z2, double distance) {
  Molecule mol;
  mol.atoms = {{Z1, {0.0, 0.0, 0.0}}, {Z2, {0.0, 0.0, distance}}};
  return mol;
}

// One s primitive of exponent a on the origin, normalised, as a one-shell basis.
libint2::BasisSet s_primitive(double a) {
  return libint2::BasisSet({libint2::Shell({a}, {{0, false, {1.0}}}, {{0.0, 0.0, 0.0}})});
}

// ∫_0^∞ f by Simpson's rule on [0, 20] (bohr) in 40,000 steps: the integrands here decay as
// exp(−c r²) with c ≥ 0.7, so the cut and the steps err below 1e-14 relative.
template <typename F>
double radial_integral(F f) {
  constexpr int kSteps = 40'000;
  constexpr double kEnd = 20.0, h = kEnd / kSteps;
  double sum = f(0.0) + f(kEnd);
  for (int i = 1; i < kSteps; ++i) sum += (i % 2 ? 4.0 : 2.0) * f(i * h);
  return sum * h / 3.0;
}

}  // namespace

TEST_CASE("the .gbs reader reads Psi4's ECP section: header, channels (local first), terms") {
  const BasisSetData basis = parse_ecp_text(kIodine + kIodinePotential);
  REQUIRE(basis.ecp_by_Z.count(53) == 1);
  CHECK(basis.ecp_by_Z.size() == 1);
  const ElementEcp& ecp = basis.ecp_by_Z.at(53);
  CHECK(ecp.core_electrons == 28);
  CHECK(ecp.lmax == 2);
  REQUIRE(ecp.terms.size() == 4);
  CHECK((ecp.terms[0].l == 2 && ecp.terms[0].power == 2 && ecp.terms[0].exponent == 3.84 && ecp.terms[0].coefficient == -12.3));
  CHECK((ecp.terms[1].l == 0 && ecp.terms[2].l == 0 && ecp.terms[2].power == 1 && ecp.terms[2].exponent == 1.97));
  CHECK((ecp.terms[3].l == 1 && ecp.terms[3].power == 0 && ecp.terms[3].coefficient == 58.6));
  // The element named before its potential is not a second block of its functions.
  CHECK(basis.shells_by_Z.at(53).size() == 2);
  // Without its "I 0" line, the header alone starts the potential too.
  CHECK(parse_ecp_text(kIodine + kIodinePotential.substr(4)).ecp_by_Z.at(53).terms.size() == 4);
}

TEST_CASE("a bad ECP section is one error naming the line and the problem") {
  const std::string channels = kIodinePotential.substr(kIodinePotential.find("d-ul"));
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"Xe-ECP 2 28\n" + channels, "line 13: the effective core potential of Xe is for an element the file has no functions for"},
      {"I-ECP 2 28\n" + channels + "I-ECP 2 28\n" + channels, "the effective core potential of I is given twice (first on line 13)"},
      {"I 0\nS 1 1.00\n 1.0 1.0\n", "element I is given twice"},
      {"I 0\nH-ECP 2 28\n" + channels, "follows the element line of I"},
      {"I-ECP 2\n" + channels, "bad ECP header 'I-ECP 2'"},
      {"I-ECP 2 28 1\n" + channels, "bad ECP header"},
      {"Qq-ECP 2 28\n" + channels, "bad ECP header"},
      {"I-ECP 9 28\n" + channels, "ECP highest angular momentum 9 is above 5"},
      {"I-ECP 2 27\n" + channels, "ECP core electrons '27' must be an even number between 2 and 52 for I"},
      {"I-ECP 2 54\n" + channels, "must be an even number between 2 and 52"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 3.84 -12.3\n", "file ends inside an effective core potential (expected 3 channels)"},
      {"I-ECP 2 28\ns-ul potential\n 1\n2 3.84 -12.3\n", "the first ECP channel must be the local one, l = 2"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 3.84 1\nf-ul potential\n 1\n2 1 1\n", "is above the header's highest l 2"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 3.84 1\nd-ul potential\n 1\n2 1 1\n", "ECP channel 'd-ul potential' is given twice"},
      {"I-ECP 2 28\nd-ul pot\n 1\n2 3.84 1\n", "expected an ECP channel such as 'd-ul potential', got 'd-ul pot'"},
      {"I-ECP 2 28\nd-x potential\n 1\n2 3.84 1\n", "expected an ECP channel"},
      {"I-ECP 2 28\nd-ul potential\n 0\n", "the ECP term count ' 0' is not a positive whole number"},
      {"I-ECP 2 28\nd-ul potential\n 2.5\n", "is not a positive whole number"},
      {"I-ECP 2 28\nd-ul potential\n 2\n2 3.84 1\ns-ul potential\n", "expected an ECP term 'power exponent coefficient': 's-ul potential'"},
      {"I-ECP 2 28\nd-ul potential\n 1\n3 3.84 1\n", "ECP power 3 is not 0, 1 or 2"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 -3.84 1\n", "ECP exponent must be a finite number"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 3.84 nan\n", "its coefficient finite"},
      {"I-ECP 2 28\nd-ul potential\n 1\n2 3.84\n", "expected an ECP term"},
  };
  for (const auto& [section, why] : cases) {
    INFO(section);
    CHECK_THROWS_WITH(parse_ecp_text(kIodine + section), Catch::Contains("basis 'ecp' (inline), line ") && Catch::Contains(why));
  }
}

TEST_CASE("the shipped def2 sets: potentials from Rb on (28, 46, 60 core electrons), auxiliary sets for each element") {
  const BasisSetData svp = load_basis("def2-svp", BasisRole::orbital);
  const BasisSetData tzvp = load_basis("def2-tzvp", BasisRole::orbital);
  std::set<int> elements;
  for (const auto& [Z, shells] : svp.shells_by_Z) elements.insert(Z);
  CHECK(elements.size() == 72);  // H–La, Hf–Rn: Psi4's files have no lanthanides past La
  for (int Z : elements) {
    INFO(element_symbol(Z));
    const int core = Z < 37 ? 0 : Z <= 54 ? 28 : Z <= 57 ? 46 : 60;
    CHECK((svp.ecp_by_Z.count(Z) ? svp.ecp_by_Z.at(Z).core_electrons : 0) == core);
    CHECK((tzvp.ecp_by_Z.count(Z) ? tzvp.ecp_by_Z.at(Z).core_electrons : 0) == core);
    CHECK(tzvp.shells_by_Z.count(Z) == 1);
  }
  for (const char* aux : {"def2-svp-ri", "def2-svp-jkfit", "def2-tzvp-ri", "def2-tzvp-jkfit", "def2-universal-jkfit"}) {
    INFO(aux);
    const BasisSetData set = load_basis(aux, BasisRole::auxiliary);
    for (int Z : elements) CHECK(set.shells_by_Z.count(Z) == 1);
    CHECK(set.ecp_by_Z.empty());
  }
}

TEST_CASE("electrons an ECP replaces are counted nowhere: charge, electrons, repulsion, frozen core, ghosts") {
  const BasisSetData svp = load_basis("def2-svp", BasisRole::orbital);
  Molecule hi = two_atoms(1, 53, 3.0);
  assign_ecp_cores(svp, hi);
  CHECK(hi.atoms[1].ecp_electrons == 28);
  CHECK(nuclear_charge(hi.atoms[1]) == 25);
  CHECK(electron_count(hi) == 26);
  CHECK(alpha_electrons(hi) == 13);
  CHECK(nuclear_repulsion(hi) == Approx(25.0 / 3.0).epsilon(1e-15));
  CHECK(nuclear_repulsion_gradient(hi)(1, 2) == Approx(-25.0 / 9.0).epsilon(1e-15));
  CHECK(frozen_core_orbitals(hi) == 4);  // Kr core (36) less 28: the 4s4p
  hi.atoms[1].ghost = true;
  assign_ecp_cores(svp, hi);
  CHECK(hi.atoms[1].ecp_electrons == 0);  // a ghost has no core to replace
  // Frozen core per atom (Psi4 ≥ 1.4's count, see molecule.cpp): Ag, Cs, La 4 orbitals (the
  // n−1 s and p); Au and Rn, past the 4f that the 60-electron ECP holds, 4 too.
  for (const auto& [Z, frozen] : std::vector<std::pair<int, int>>{{47, 4}, {55, 4}, {57, 4}, {79, 4}, {86, 4}}) {
    Molecule atom;
    atom.atoms = {{Z, {0.0, 0.0, 0.0}}};
    assign_ecp_cores(svp, atom);
    INFO(element_symbol(Z));
    CHECK(frozen_core_orbitals(atom) == frozen);
  }
  // All-electron (no ECP): Au freezes [Xe]4f14, 34 orbitals.
  Molecule gold;
  gold.atoms = {{79, {0.0, 0.0, 0.0}}};
  CHECK(frozen_core_orbitals(gold) == 34);
}

TEST_CASE("ECP integrals: the local channel on a neighbour's s function is the three-centre Gaussian overlap") {
  // ⟨g_a|c e^{−g|r−C|²}|g_a⟩ = N² c (π/(2a+g))^{3/2} e^{−2a g R²/(2a+g)}, exactly.
  BasisSetData set = parse_ecp_text("spherical\n****\nH 0\nS 1 1.00\n 1.0 1.0\n****\nI 0\nS 1 1.00\n 1.0 1.0\n****\n"
                                    "I-ECP 0 28\ns-ul potential\n 1\n2 3.8431140 -12.3169\n");
  const double a = 0.12194962, g = 3.8431140, c = -12.3169, R = 3.04;
  Molecule hi = two_atoms(1, 53, R);
  assign_ecp_cores(set, hi);
  const EcpIntegrals ecp = ecp_integrals(s_primitive(a), set, hi);
  const double norm2 = std::pow(2.0 * a / M_PI, 1.5);
  const double exact = norm2 * c * std::pow(M_PI / (2.0 * a + g), 1.5) * std::exp(-2.0 * a * g * R * R / (2.0 * a + g));
  CHECK(ecp.U(0, 0) == Approx(exact).epsilon(1e-12));  // measured 7e-14 relative
  CHECK(ecp.computed == 1);
}

TEST_CASE("ECP integrals: a semilocal s channel on a neighbour's s function, against its radial integral") {
  // ⟨g_a|P_s c e^{−g r²}|g_a⟩ = N² c 4π ∫ r² e^{−(g+2a) r² − 2aR²} (sinh(2aRr)/(2aRr))² dr.
  const double a = 0.12194962, R = 3.04;
  for (const double g : {0.5, 2.0, 5.036551}) {
    const std::string potential = "I-ECP 1 28\np-ul potential\n 1\n2 1.0 0.0\ns-ul potential\n 1\n2 " + std::to_string(g) + " 1.0\n";
    BasisSetData set = parse_ecp_text("spherical\n****\nH 0\nS 1 1.00\n 1.0 1.0\n****\nI 0\nS 1 1.00\n 1.0 1.0\n****\n" + potential);
    Molecule hi = two_atoms(1, 53, R);
    assign_ecp_cores(set, hi);
    const double norm2 = std::pow(2.0 * a / M_PI, 1.5);
    const double exact = norm2 * 4.0 * M_PI * radial_integral([&](double r) {
      const double x = 2.0 * a * R * r, i0 = r == 0.0 ? 1.0 : std::sinh(x) / x;
      return r * r * std::exp(-(g + 2.0 * a) * r * r - 2.0 * a * R * R) * i0 * i0;
    });
    INFO("g = " << g);
    // libecpint 1.0.7's own function for this pair is 2.1e-6 relative off (its angular factor
    // printed to six digits, src/integrals/ecp_shell_pair.hpp); dfmp2's sum: measured ≤ 1.5e-14.
    const double relative = ecp_integrals(s_primitive(a), set, hi).U(0, 0) / exact - 1.0;
    INFO("relative difference " << relative);
    CHECK(std::abs(relative) < 1e-13);
  }
}

TEST_CASE("ECP integrals: screening leaves out only shell pairs whose integrals vanish, and U is symmetric") {
  // HI and a second HI 12 bohr away: the far H's diffuse s reaches the iodine, its tight s does not.
  const BasisSetData svp = load_basis("def2-svp", BasisRole::orbital);
  Molecule dimer;
  dimer.atoms = {{53, {0, 0, 0}}, {1, {0, 0, 3.04}}, {53, {0, 0, 12.0}}, {1, {0, 0, 15.04}}};
  assign_ecp_cores(svp, dimer);
  const libint2::BasisSet obs = place_on(svp, dimer);
  const EcpIntegrals screened = ecp_integrals(obs, svp, dimer);
  const EcpIntegrals all = ecp_integrals(obs, svp, dimer, std::numeric_limits<double>::infinity());
  CHECK(screened.screened > 0);
  CHECK(all.screened == 0);
  CHECK(screened.computed + screened.screened == all.computed);
  CHECK((screened.U - all.U).cwiseAbs().maxCoeff() < 1e-15);  // measured 0: each left-out block is below 1e-300
  CHECK((all.U - all.U.transpose()).cwiseAbs().maxCoeff() == 0.0);
  CHECK(all.U.cwiseAbs().maxCoeff() > 1.0);
}

TEST_CASE("ECP derivative integrals are the central differences of the sum of D U (HI off the axes, def2-SVP)") {
  const BasisSetData svp = load_basis("def2-svp", BasisRole::orbital);
  Molecule hi;
  hi.atoms = {{53, {0.1, -0.2, 0.05}}, {1, {1.3, 1.6, 2.2}}};
  assign_ecp_cores(svp, hi);
  const libint2::BasisSet obs = place_on(svp, hi);
  std::srand(47);
  const Eigen::MatrixXd A = Eigen::MatrixXd::Random(obs.nbf(), obs.nbf()), D = 0.5 * (A + A.transpose());
  Communicator this_process;
  const Eigen::MatrixXd analytic = ecp_gradient(obs, svp, hi, D, this_process);
  // Five-point differences, h = 1e-3 bohr: the functions and the potential of a moved atom move.
  const auto energy = [&](std::size_t atom, int k, double t) {
    Molecule moved = hi;
    moved.atoms[atom].r[static_cast<std::size_t>(k)] += t;
    return D.cwiseProduct(ecp_integrals(place_on(svp, moved), svp, moved).U).sum();
  };
  constexpr double h = 1e-3;
  double largest = 0.0;
  for (std::size_t atom = 0; atom < 2; ++atom)
    for (int k = 0; k < 3; ++k) {
      const double difference =
          (energy(atom, k, -2 * h) - 8 * energy(atom, k, -h) + 8 * energy(atom, k, h) - energy(atom, k, 2 * h)) / (12 * h);
      largest = std::max(largest, std::abs(analytic(static_cast<Eigen::Index>(atom), k) - difference));
    }
  INFO("max |analytic − differences| = " << largest);
  CHECK(largest < 5e-8);  // measured 5.8e-9 (sum over 961 elements of D of order 1)
  CHECK((analytic.row(0) + analytic.row(1)).norm() < 1e-9);  // translation moves nothing
}

TEST_CASE("a run with ECPs reports their integrals within the integrals stage, in the report and the JSON") {
  TempDir dir;
  const CommandResult run = run_dfmp2(source(kHydrogenIodide) + " --basis def2-svp --threads 1 --json " +
                                      dir.path("hi.json"));
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("\n    of which ecp ") != std::string::npos);
  CHECK(run.out.find("Failed to converge") == std::string::npos);
  const auto timings = nlohmann::json::parse(read_text(dir.path("hi.json")))["timings"];
  CHECK(timings["integrals_ecp"].get<double>() > 0.0);
  CHECK(timings["integrals_ecp"].get<double>() <= timings["integrals"].get<double>());
  CHECK(!timings.contains("ecp"));
  const auto gradient = run_json(dir, source(kHydrogenIodide) + " --basis def2-svp --threads 1 --gradient")["timings"];
  CHECK(gradient["gradient_ecp"].get<double>() > 0.0);
  CHECK(gradient["gradient_ecp"].get<double>() <= gradient["gradient"].get<double>());
}

TEST_CASE("Molden and TREXIO files of an ECP molecule: Molden names the core, TREXIO holds the potentials and reads back") {
  TempDir dir;
  const std::string molden = dir.path("hi.molden"), trexio = dir.path("hi.h5");
  const nlohmann::json first = run_json(dir, source(kHydrogenIodide) + " --basis def2-svp --threads 1 --molden " +
                                                 molden + " --trexio " + trexio);
  // Molden: iodine keeps its atomic number in [Atoms]; [Core] (Molden2AIM's, PySCF's) its 28.
  const std::string text = read_text(molden);
  CHECK(text.find("\nI      1   53 ") != std::string::npos);
  CHECK(text.find("\n[Core]\n 1 : 28\n[MO]\n") != std::string::npos);
  // dfmp2 reads no potential from it, and says so in one line.
  const CommandResult again = run_dfmp2(molden + " --df-basis def2-svp-ri --jk-basis def2-svp-jkfit --quiet");
  CHECK(again.exit_code != 0);
  CHECK(without_notes(again.err) == "dfmp2: error: '" + molden + "': line " +
                                        std::to_string(std::count(text.begin(), text.begin() + text.find("[Core]"), '\n') + 1) +
                                        ": [core] gives an atom an effective core potential, whose terms Molden files do "
                                        "not hold: run the TREXIO file of the same orbitals (--trexio writes one, "
                                        "potentials included) or the molecule with --basis\n");
  // TREXIO: nucleus_charge 25 (Z_eff), ecp_z_core 28 and def2-SVP's potential for iodine, term for term.
  const RunInput input = read_trexio(trexio);
  CHECK(input.molecule->atoms[0].Z == 53);
  CHECK(input.molecule->atoms[0].ecp_electrons == 28);
  CHECK(input.molecule->charge == 0);
  const std::map<int, ElementEcp> svp{*load_basis("def2-svp", BasisRole::orbital).ecp_by_Z.find(53)};
  CHECK(input.orbital_basis->potentials == svp);
  // Run again from the file's orbitals and potentials (one thread each: no threaded sums' spread):
  // the same energies. Measured 1.1e-13 Eh apart (E_SCF, E_total), 4e-16 (E_corr); checked to 1e-12.
  const nlohmann::json second =
      run_json(dir, trexio + " --df-basis def2-svp-ri --jk-basis def2-svp-jkfit --threads 1");
  for (const char* key : {"e_scf", "e_corr", "e_total"}) {
    INFO(key << ": " << first[key].get<double>() - second[key].get<double>());
    CHECK(std::abs(first[key].get<double>() - second[key].get<double>()) < 1e-12);
  }
  CHECK(second["nocc"] == first["nocc"]);
  // Without its ecp group, iodine's nucleus_charge 25 would be manganese's: its label says otherwise.
  const std::string bare = dir.path("no-ecp.h5");
  std::filesystem::copy_file(trexio, bare);
  trexio_exit_code rc = TREXIO_SUCCESS;
  trexio_t* f = trexio_open(bare.c_str(), 'u', TREXIO_HDF5, &rc);
  REQUIRE(rc == TREXIO_SUCCESS);
  REQUIRE(trexio_delete_ecp(f) == TREXIO_SUCCESS);
  REQUIRE(trexio_close(f) == TREXIO_SUCCESS);
  CHECK_THROWS_WITH(read_trexio(bare), Catch::Contains("nucleus 0 is labelled 'I', but its nucleus_charge and "
                                                       "ecp_z_core (0) make Mn"));
}


TEST_CASE("ECP integrals match PySCF 2.14's element by element (HI and AuH off the axes, def2-SVP)") {
  if (!libint2::initialized()) libint2::initialize();
  const BasisSetData svp = load_basis("def2-svp", BasisRole::orbital);
  std::ifstream file(source("tests/reference/pyscf_ecp_matrices.json"));
  for (const nlohmann::json& ref : nlohmann::json::parse(file)) {
    INFO(ref["name"].get<std::string>());
    Molecule mol;
    for (const nlohmann::json& atom : ref["atoms"])
      mol.atoms.push_back({atomic_number(atom[0].get<std::string>()), atom[1].get<std::array<double, 3>>()});
    assign_ecp_cores(svp, mol);
    const libint2::BasisSet obs = place_on(svp, mol);
    const auto matrix = [&](const char* key) {
      Eigen::MatrixXd m(obs.nbf(), obs.nbf());
      for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j) m(i, j) = ref[key][static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      return m;
    };
    // The same functions in the same order: the overlaps agree to rounding.
    REQUIRE((overlap_matrix(obs) - matrix("overlap")).cwiseAbs().maxCoeff() < 1e-14);
    const double largest = (ecp_integrals(obs, svp, mol).U - matrix("ecp")).cwiseAbs().maxCoeff();
    INFO("max |dfmp2 − PySCF| = " << largest);
    // Measured 2.5e-12 (HI) and 3.7e-12 (AuH); with libecpint's unrolled functions HI was 1.9e-7 off.
    CHECK(largest < 2e-11);
  }
}
