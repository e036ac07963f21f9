// Orbitals in and out (src/io/molden, src/io/trexio_io): Psi4 1.3.2's own Molden files give
// Psi4's DF-MP2 energies, dfmp2's Molden and TREXIO files round-trip to the same energy, TREXIO
// files written through the library's own API in other programs' conventions read right, and
// malformed files are refused with one line.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>
extern "C" {  // trexio.h declares C functions without a C++ guard
#include <trexio.h>
}

#include "src/common/errors.hpp"
#include "src/io/ao_conventions.hpp"
#include "src/io/molden.hpp"
#include "src/io/orbital_file.hpp"
#include "src/io/trexio_io.hpp"
#include "src/run/driver.hpp"
#include "tests/src/run_command.hpp"

using namespace dfmp2;

namespace {

// Eh: Psi4's own orbitals, Psi4's energies. Measured: 1.7e-11 apart at most (water 6-31G*'s SCF);
// 1e-9 stays above dfmp2's run-to-run spread on two threads (up to 1.6e-10 Eh).
constexpr double kPsi4OrbitalsTolerance = 1e-9;
constexpr double kRoundTripTolerance = 1e-10;  // Eh: our file back into dfmp2

nlohmann::json psi4_molden_references() {
  return nlohmann::json::parse(read_text(source("tests/reference/psi4_molden_energies.json")));
}

nlohmann::json molden_reference(const std::string& name) {
  for (const auto& ref : psi4_molden_references())
    if (ref["name"] == name) return ref;
  FAIL("no reference " << name);
  return {};
}

// The DF-MP2 run of given orbitals with the Psi4 case's auxiliary sets.
RunResult run_given(const RunInput& input, const nlohmann::json& ref) {
  RunOptions options;
  options.df_basis = ref["df_basis"].get<std::string>();
  options.jk_basis = ref["jk_basis"].get<std::string>();
  Progress quiet(true);
  return run(input, options, quiet);
}

// The run of each Psi4 Molden file, once per test executable: later cases start from it.
const RunResult& psi4_run(const std::string& name) {
  static std::map<std::string, RunResult> runs;
  if (!runs.count(name)) {
    const auto ref = molden_reference(name);
    RunInput input = read_molden(source(ref["molden"].get<std::string>()));
    if (input.unoccupied) occupy_by_energy(input, 0, 1);  // Psi4's file of an MP2 wavefunction
    runs.emplace(name, run_given(input, ref));
  }
  return runs.at(name);
}

void check_energies(const RunResult& r, const nlohmann::json& ref, double tolerance) {
  CHECK(std::abs(r.e_scf - ref["e_scf"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_ss - ref["e_ss"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_os - ref["e_os"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_corr - ref["e_corr"].get<double>()) < tolerance);
  CHECK(std::abs(r.e_total - ref["e_total"].get<double>()) < tolerance);
}

void trexio_ok(trexio_exit_code rc) { REQUIRE(rc == TREXIO_SUCCESS); }

// How a test file spells one shell's functions: the radial factors (shell_factor and each
// primitive's coefficient × prim_factor, chosen as another program would) and each AO's
// normalisation with its libint2 function.
struct ForeignConvention {
  bool cartesian = false;
  // Writes shell_factor, coefficient and prim_factor of a shell from libint2's.
  std::function<void(const libint2::Shell&, double& shell_factor, std::vector<double>& coefficient,
                     std::vector<double>& prim_factor)>
      radial;
  // AO k of a shell: its normalisation factor, and which libint2 function it is (times the factor
  // `scale`: C_file = C_libint2 / scale).
  std::function<void(int l, int k, double& normalization, int& libint2_index, double& scale)> ao;
};

// The basis and orbitals as a file in `convention` holds them, shells in libint2's order.
struct ForeignBasis {
  std::vector<int32_t> shell_atom, shell_l, prim_shell, ao_shell;
  std::vector<double> shell_factor, exponent, coefficient, prim_factor, ao_norm;
  Eigen::MatrixXd C;  // AOs × orbitals
};

ForeignBasis in_convention(const RunInput& in, const ForeignConvention& convention) {
  const libint2::BasisSet& basis = in.orbital_basis->shells;
  ForeignBasis b;
  b.C.resize(in.orbitals->C.rows(), in.orbitals->C.cols());
  for (std::size_t s = 0; s < basis.size(); ++s) {
    const libint2::Shell& shell = basis[s];
    for (std::size_t a = 0; a < in.molecule->atoms.size(); ++a)
      if (in.molecule->atoms[a].r == shell.O) b.shell_atom.push_back(static_cast<int32_t>(a));
    const int l = shell.contr[0].l;
    b.shell_l.push_back(l);
    double factor = 0.0;
    std::vector<double> c, pf;
    convention.radial(shell, factor, c, pf);
    b.shell_factor.push_back(factor);
    for (std::size_t p = 0; p < shell.nprim(); ++p) {
      b.prim_shell.push_back(static_cast<int32_t>(s));
      b.exponent.push_back(shell.alpha[p]);
    }
    b.coefficient.insert(b.coefficient.end(), c.begin(), c.end());
    b.prim_factor.insert(b.prim_factor.end(), pf.begin(), pf.end());
    for (int k = 0; k < static_cast<int>(shell.size()); ++k) {
      double normalization = 1.0, scale = 1.0;
      int index = 0;
      convention.ao(l, k, normalization, index, scale);
      b.C.row(static_cast<Eigen::Index>(b.ao_shell.size())) =
          in.orbitals->C.row(static_cast<Eigen::Index>(basis.shell2bf()[s]) + index) / scale;
      b.ao_shell.push_back(static_cast<int32_t>(s));
      b.ao_norm.push_back(normalization);
    }
  }
  return b;
}

// A TREXIO file of the molecule, basis and orbitals written with the library's own API, in
// `convention`; occupations left out, so the reader takes them from the electron counts.
void write_foreign_trexio(const std::string& path, back_end_t back_end, const RunInput& in,
                          const ForeignConvention& convention) {
  trexio_exit_code rc = TREXIO_SUCCESS;
  trexio_t* f = trexio_open(path.c_str(), 'w', back_end, &rc);
  REQUIRE(rc == TREXIO_SUCCESS);
  std::vector<double> charge, coord;
  for (const Atom& a : in.molecule->atoms) {
    charge.push_back(a.Z);
    coord.insert(coord.end(), a.r.begin(), a.r.end());
  }
  trexio_ok(trexio_write_nucleus_num(f, static_cast<int32_t>(charge.size())));
  trexio_ok(trexio_write_nucleus_charge(f, charge.data()));
  trexio_ok(trexio_write_nucleus_coord(f, coord.data()));
  trexio_ok(trexio_write_electron_up_num(f, in.orbitals->nocc));
  trexio_ok(trexio_write_electron_dn_num(f, in.orbitals->nocc));
  const ForeignBasis b = in_convention(in, convention);
  trexio_ok(trexio_write_basis_type(f, "Gaussian", 16));
  trexio_ok(trexio_write_basis_shell_num(f, static_cast<int32_t>(b.shell_l.size())));
  trexio_ok(trexio_write_basis_prim_num(f, static_cast<int32_t>(b.exponent.size())));
  trexio_ok(trexio_write_basis_nucleus_index(f, b.shell_atom.data()));
  trexio_ok(trexio_write_basis_shell_ang_mom(f, b.shell_l.data()));
  trexio_ok(trexio_write_basis_shell_factor(f, b.shell_factor.data()));
  trexio_ok(trexio_write_basis_shell_index(f, b.prim_shell.data()));
  trexio_ok(trexio_write_basis_exponent(f, b.exponent.data()));
  trexio_ok(trexio_write_basis_coefficient(f, b.coefficient.data()));
  trexio_ok(trexio_write_basis_prim_factor(f, b.prim_factor.data()));
  trexio_ok(trexio_write_ao_cartesian(f, convention.cartesian ? 1 : 0));
  trexio_ok(trexio_write_ao_num(f, static_cast<int32_t>(b.ao_shell.size())));
  trexio_ok(trexio_write_ao_shell(f, b.ao_shell.data()));
  trexio_ok(trexio_write_ao_normalization(f, b.ao_norm.data()));
  trexio_ok(trexio_write_mo_num(f, static_cast<int32_t>(b.C.cols())));
  trexio_ok(trexio_write_mo_coefficient(f, b.C.data()));  // [mo][ao]: column-major AOs × orbitals
  trexio_ok(trexio_write_mo_energy(f, in.orbitals->eps.data()));
  trexio_ok(trexio_close(f));
}

// A bad input: exit 1, one line naming the file and the problem, no output written.
void expect_refused(const TempDir& dir, const std::string& input, const std::string& args, const std::string& problem) {
  INFO("dfmp2 " << input << " " << args);
  const std::string molden = dir.path("out.molden"), trexio = dir.path("out.trexio.h5");
  const CommandResult r = run_dfmp2(input + " " + args + " --quiet --molden " + molden + " --trexio " + trexio);
  CHECK(r.exit_code == 1);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Catch::StartsWith("dfmp2: error: ") && Catch::Contains("'" + input + "'"));
  CHECK_THAT(r.err, Catch::Contains(problem));
  CHECK_FALSE(std::filesystem::exists(molden));
  CHECK_FALSE(std::filesystem::exists(trexio));
}

std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("libint2's function conventions: orders and Cartesian norms") {
  CHECK(plus_minus_order(1) == std::vector<int>{2, 0, 1});        // z, x, y
  CHECK(plus_minus_order(2) == std::vector<int>{2, 3, 1, 4, 0});  // d0 d+1 d−1 d+2 d−2 in −2 … +2
  CHECK(cartesian_index({1, 1, 0}) == 1);                         // xx, xy, xz, yy, yz, zz
  CHECK(cartesian_index({0, 0, 2}) == 5);
  CHECK(cartesian_index({1, 1, 1}) == 4);  // xxx xxy xxz xyy xyz …
  CHECK(cartesian_norm({1, 1, 0}) == Approx(1.0 / std::sqrt(3.0)).epsilon(1e-15));
  CHECK(cartesian_norm({1, 1, 1}) == Approx(1.0 / std::sqrt(15.0)).epsilon(1e-15));
  CHECK(cartesian_norm({2, 2, 0}) == Approx(std::sqrt(1.0 / 35.0 * 3.0)).epsilon(1e-15));  // 3/35 in g
  // A single normalised primitive has unit x^l norm.
  for (int l = 0; l <= 4; ++l) CHECK(xl_norm(l, {0.7}, {primitive_norm(l, 0.7)}) == Approx(1.0).epsilon(1e-14));
}

TEST_CASE("Psi4 1.3.2's Molden files give Psi4's DF-MP2 energies to 1e-9 Eh with spherical d and f and Cartesian d") {
  for (const auto& ref : psi4_molden_references()) {
    INFO(ref["name"].get<std::string>());
    const RunInput input = read_molden(source(ref["molden"].get<std::string>()));
    REQUIRE(input.orbital_basis);
    CHECK(input.orbital_basis->pure == ref["puream"].get<bool>());
    CHECK(input.basis.empty());  // Molden names no basis set
    const RunResult& r = psi4_run(ref["name"].get<std::string>());
    CHECK(r.nbf == ref["nbf"].get<int>());
    CHECK(r.naux == ref["naux"].get<int>());
    CHECK(r.scf_iterations.empty());  // the SCF was skipped
    check_energies(r, ref, kPsi4OrbitalsTolerance);
  }
}

TEST_CASE("a Molden file without occupations (Psi4 1.3's of an MP2 wavefunction) is occupied by energy") {
  const auto ref = molden_reference("water-cc-pvdz-df-ae-mp2-wavefunction");
  const std::string molden = source(ref["molden"].get<std::string>());
  RunInput input = read_molden(molden);
  CHECK(input.unoccupied);
  CHECK(input.orbitals->nocc == 0);
  CHECK_THAT(occupy_by_energy(input, 0, 1), Catch::Contains("gives no orbital occupations: the 5 lowest in energy are "
                                                            "taken as doubly occupied (charge 0"));
  CHECK(input.orbitals->nocc == ref["nocc"].get<int>());
  CHECK(input.molecule->charge == 0);
  // The same orbitals with their occupations give the same energies.
  check_energies(psi4_run("water-cc-pvdz-df-ae-mp2-wavefunction"), molden_reference("water-cc-pvdz-df-ae"), 1e-12);

  TempDir dir;
  const std::string aux = " --df-basis cc-pvdz-ri --jk-basis cc-pvdz-jkfit --threads 1";
  const CommandResult r = run_dfmp2(molden + aux + " --json " + dir.path("w.json"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("dfmp2: note: '" + molden + "' gives no orbital occupations: the 5 lowest"));
  const auto json = nlohmann::json::parse(read_text(dir.path("w.json")));
  CHECK(std::abs(json["e_total"].get<double>() - ref["e_total"].get<double>()) < kPsi4OrbitalsTolerance);
  CHECK(std::abs(json["e_scf"].get<double>() - ref["e_scf"].get<double>()) < kPsi4OrbitalsTolerance);

  // The electron count is the options' to give, and must fit a closed shell with virtual orbitals.
  const auto occupied = [&](int charge, int multiplicity) {
    RunInput again = read_molden(molden);
    occupy_by_energy(again, charge, multiplicity);
    return again.orbitals->nocc;
  };
  CHECK(occupied(2, 1) == 4);
  CHECK_THROWS_WITH(occupied(1, 1), Catch::Contains("gives no orbital occupations: odd electron count (9)"));
  CHECK_THROWS_WITH(occupied(0, 3), Catch::Contains("occupied as a closed shell, which multiplicity 3 is not"));
  CHECK_THROWS_WITH(occupied(-38, 1), Catch::Contains("its 24 orbitals leave no virtual one for 48 electrons"));
}

TEST_CASE("dfmp2's Molden and TREXIO files round-trip to the same energy and orbitals") {
  TempDir dir;
  for (const std::string name : {"formaldehyde-cc-pvtz-df-ae", "water-6-31gs-df-ae"}) {
    INFO(name);
    const auto ref = molden_reference(name);
    const RunResult& first = psi4_run(name);
    const std::string molden = dir.path(name + ".molden"), trexio = dir.path(name + ".h5");
    write_molden(molden, first);
    write_trexio(trexio, first);
    CHECK(is_molden(molden));
    CHECK(is_trexio(trexio));
    for (const RunInput& again : {read_molden(molden), read_trexio(trexio)}) {
      CHECK(again.molecule->charge == 0);
      CHECK(again.orbital_basis->pure == ref["puream"].get<bool>());
      CHECK((again.orbitals->C - first.orbitals->C).cwiseAbs().maxCoeff() < 1e-12);
      const RunResult second = run_given(again, ref);
      CHECK(std::abs(second.e_scf - first.e_scf) < kRoundTripTolerance);
      CHECK(std::abs(second.e_corr - first.e_corr) < kRoundTripTolerance);
      CHECK(std::abs(second.e_total - first.e_total) < kRoundTripTolerance);
    }
  }
}

TEST_CASE("TREXIO files written through the library's API in PySCF's and GAMESS's conventions read right") {
  // Their energies against Psi4's show that every factor and the function order were taken as meant.
  TempDir dir;
  SECTION("spherical, PySCF's: prim_factor normalises r^l e^(-a r^2), ao_normalization sqrt((2l+1)/4pi)") {
    const auto ref = molden_reference("formaldehyde-cc-pvtz-df-ae");
    const RunInput psi4 = read_molden(source(ref["molden"].get<std::string>()));
    ForeignConvention pyscf;
    pyscf.radial = [](const libint2::Shell& shell, double& shell_factor, std::vector<double>& c,
                      std::vector<double>& pf) {
      const int l = shell.contr[0].l;
      auto radial_integral = [l](double gamma) {  // ∫ r^(2l+2) e^(−γ r²) dr
        return std::tgamma(l + 1.5) / (2.0 * std::pow(gamma, l + 1.5));
      };
      for (std::size_t p = 0; p < shell.nprim(); ++p) {
        c.push_back(shell.coeff_normalized(0, p));
        pf.push_back(1.0 / std::sqrt(radial_integral(2.0 * shell.alpha[p])));
      }
      double norm2 = 0.0;
      for (std::size_t p = 0; p < shell.nprim(); ++p)
        for (std::size_t q = 0; q < shell.nprim(); ++q)
          norm2 += c[p] * pf[p] * c[q] * pf[q] * radial_integral(shell.alpha[p] + shell.alpha[q]);
      shell_factor = 1.0 / std::sqrt(norm2);
    };
    pyscf.ao = [](int l, int k, double& normalization, int& index, double& scale) {
      normalization = std::sqrt((2 * l + 1) / (4.0 * M_PI));  // with Racah's solid harmonics: unit norm
      const int m = k == 0 ? 0 : (k % 2 == 1 ? (k + 1) / 2 : -k / 2);  // 0, +1, −1, +2, −2, …
      index = l == 1 ? (m == 0 ? 2 : m == 1 ? 0 : 1) : l + m;           // p as z, x, y
      scale = 1.0;
    };
    const std::string path = dir.path("pyscf.h5");
    write_foreign_trexio(path, TREXIO_HDF5, psi4, pyscf);
    check_energies(run_given(read_trexio(path), ref), ref, kPsi4OrbitalsTolerance);
  }
  SECTION("Cartesian, GAMESS's, text back end: unnormalised primitives, shell_factor for x^l, unit AOs") {
    const auto ref = molden_reference("water-6-31gs-df-ae");
    const RunInput psi4 = read_molden(source(ref["molden"].get<std::string>()));
    ForeignConvention gamess;
    gamess.cartesian = true;
    gamess.radial = [](const libint2::Shell& shell, double& shell_factor, std::vector<double>& c,
                       std::vector<double>& pf) {
      const int l = shell.contr[0].l;
      double norm2 = 0.0;  // of x^l Σ c_p e^(−α_p r²), libint2's already unit
      for (std::size_t p = 0; p < shell.nprim(); ++p) {
        c.push_back(3.0 * shell.contr[0].coeff[p]);  // any scale: shell_factor undoes it
        pf.push_back(1.0);
      }
      double df = 1.0;
      for (int k = 2 * l - 1; k > 1; k -= 2) df *= k;
      for (std::size_t p = 0; p < shell.nprim(); ++p)
        for (std::size_t q = 0; q < shell.nprim(); ++q)
          norm2 += c[p] * c[q] * df * std::pow(M_PI, 1.5) /
                   (std::pow(2.0, l) * std::pow(shell.alpha[p] + shell.alpha[q], l + 1.5));
      shell_factor = 1.0 / std::sqrt(norm2);
    };
    gamess.ao = [](int l, int k, double& normalization, int& index, double& scale) {
      // Alphabetical order is libint2's; xy, xz, yz carry √3 over xx (d is the only l ≥ 2 here).
      const bool mixed = l == 2 && (k == 1 || k == 2 || k == 4);
      normalization = mixed ? std::sqrt(3.0) : 1.0;
      index = k;
      scale = mixed ? std::sqrt(3.0) : 1.0;  // unit-normalised xy is √3 × libint2's
    };
    const std::string path = dir.path("gamess.trexio");  // the text back end: a directory
    write_foreign_trexio(path, TREXIO_TEXT, psi4, gamess);
    CHECK(is_trexio(path));
    check_energies(run_given(read_trexio(path), ref), ref, kPsi4OrbitalsTolerance);
  }
}

TEST_CASE("the command line reads and writes Molden and TREXIO, and the outputs run again") {
  TempDir dir;
  const auto ref = molden_reference("water-cc-pvdz-df-ae");
  const std::string molden = source(ref["molden"].get<std::string>());
  const std::string aux = " --df-basis cc-pvdz-ri --jk-basis cc-pvdz-jkfit --quiet";
  const CommandResult r = run_dfmp2(molden + aux + " --json " + dir.path("a.json") + " --molden " +
                                    dir.path("w.molden") + " --trexio " + dir.path("w.trexio.h5"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Basis given with the orbitals"));
  const double e_total = nlohmann::json::parse(read_text(dir.path("a.json")))["e_total"].get<double>();
  CHECK(std::abs(e_total - ref["e_total"].get<double>()) < kPsi4OrbitalsTolerance);
  for (const char* output : {"w.molden", "w.trexio.h5"}) {
    const CommandResult again = run_dfmp2(dir.path(output) + aux + " --json " + dir.path("b.json"));
    REQUIRE(again.exit_code == 0);
    CHECK(std::abs(nlohmann::json::parse(read_text(dir.path("b.json")))["e_total"].get<double>() - e_total) <
          kRoundTripTolerance);
  }
}

TEST_CASE("malformed Molden and TREXIO files and missing auxiliary sets are refused with one line") {
  TempDir dir;
  const std::string good = read_text(source("tests/reference/molden/water-cc-pvdz-df-ae.molden"));
  const std::string aux = "--df-basis cc-pvdz-ri --jk-basis cc-pvdz-jkfit";
  const auto molden = [&](const std::string& name, const std::string& text) { return dir.write(name, text); };
  const std::string cut = good.substr(0, good.find('\n', good.size() * 2 / 3) + 1);  // at a line's end
  expect_refused(dir, molden("cut.molden", cut), aux, "file truncated?");
  expect_refused(dir, molden("nogto.molden", replace_once(good, "[GTO]", "[Title]")), aux, "no [GTO] section");
  expect_refused(dir, molden("noflag.molden", replace_once(good, "[5D]", "")), aux,
                 "lists 24 coefficients, but [GTO] with its [5D]/[7F]/[9G] flags gives 25 functions");
  expect_refused(dir, molden("number.molden", replace_once(good, "0.0054700000", "0.00547OOOO")), aux,
                 "line 10: expected a number, found '0.00547OOOO'");
  expect_refused(dir, molden("exponent.molden", replace_once(good, "1.1850000000", "2.1850000000")), aux,
                 "the orbitals are not orthonormal in the file's basis");
  expect_refused(dir, molden("beta.molden", replace_once(good, "Spin= Alpha", "Spin= Beta")), aux,
                 "UHF orbitals are not supported yet");
  expect_refused(dir, molden("occ.molden", replace_once(good, "Occup=  2.0", "Occup=  1.5")), aux,
                 "orbital 1 has occupation 1.5: only closed-shell RHF orbitals (occupations 2 and 0) are read");
  const std::string psi4 = source("tests/reference/molden/water-cc-pvdz-df-ae.molden");
  expect_refused(dir, psi4, "--jk-basis cc-pvdz-jkfit", "does not name its orbital basis: give the auxiliary set with --df-basis NAME");
  expect_refused(dir, psi4, aux + " --basis cc-pvdz", "--basis cannot replace it");

  // TREXIO: a directory that is not one (left untouched), a file cut short, one without a basis,
  // one with β orbitals.
  const std::string empty = dir.path("empty.trexio");
  std::filesystem::create_directory(empty);
  expect_refused(dir, empty, aux, "cannot open");
  CHECK(std::filesystem::is_empty(empty));
  const RunResult& r = psi4_run("water-cc-pvdz-df-ae");
  const std::string whole = dir.path("whole.h5");
  write_trexio(whole, r);
  const std::string bytes = read_text(whole);
  expect_refused(dir, dir.write("cut.h5", bytes.substr(0, bytes.size() / 2)), aux, "");
  trexio_exit_code rc = TREXIO_SUCCESS;
  const std::string bare = dir.path("bare.h5");
  trexio_t* f = trexio_open(bare.c_str(), 'w', TREXIO_HDF5, &rc);
  const double charge = 1.0, coord[3] = {0, 0, 0};
  trexio_ok(trexio_write_nucleus_num(f, 1));
  trexio_ok(trexio_write_nucleus_charge(f, &charge));
  trexio_ok(trexio_write_nucleus_coord(f, coord));
  trexio_ok(trexio_close(f));
  expect_refused(dir, bare, aux, "it has no basis_type");
  const std::string uhf = dir.path("uhf.h5");
  std::filesystem::copy_file(whole, uhf);
  f = trexio_open(uhf.c_str(), 'u', TREXIO_HDF5, &rc);
  std::vector<int32_t> spin(static_cast<std::size_t>(r.nmo), 1);
  trexio_ok(trexio_delete_mo(f));
  trexio_ok(trexio_write_mo_num(f, r.nmo));
  trexio_ok(trexio_write_mo_spin(f, spin.data()));
  trexio_ok(trexio_close(f));
  expect_refused(dir, uhf, aux, "UHF orbitals are not supported yet");
}
