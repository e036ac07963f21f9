#include <catch2/catch.hpp>

#include <filesystem>
#include <optional>

#include "src/molecule/basis.hpp"
#include "src/common/errors.hpp"
#include "src/integrals/density_fitting.hpp"
#include "src/integrals/four_index.hpp"
#include "src/integrals/libint.hpp"
#include "src/integrals/one_electron.hpp"
#include "src/integrals/shell_pairs.hpp"
#include "src/integrals/three_index.hpp"
#include "src/io/xyz.hpp"

using namespace dfmp2;

namespace {

const char* kPople = R"(cartesian
! comment
****
H     0
S   2   1.00
      1.0D+01           0.5
      1.0               0.5
****
C     0
SP   2   1.00
      3.0  0.1  0.2
      0.5  0.9  0.8
D   1   1.00
      0.8  1.0
****
)";

// Hydrogen alone with the given shells: its first shell header is line 4, a primitive line 5.
std::string hydrogen_with(const std::string& shells) {
  return "spherical\n****\nH 0\n" + shells + "****\n";
}

BasisSetData parse_orbital(const std::string& text) {
  return parse_gbs(text, "x", "p", BasisRole::orbital);
}

// A hydrogen set with an s shell and one shell of angular momentum l.
std::string hydrogen_with_l(int l) {
  return hydrogen_with("S 1 1.00\n 1.0 1.0\n" + std::string(1, "SPDFGHIK"[l]) + " 1 1.00\n 0.8 1.0\n");
}

Molecule methyl_free_ch() {
  Molecule mol;
  mol.atoms = {{6, {0, 0, 0}}, {1, {0, 0, 2.0}}};
  return mol;
}

}  // namespace

TEST_CASE("G94 text parses: header, D exponents, SP shells split into s and p") {
  const BasisSetData basis = parse_gbs(kPople, "test", "inline", BasisRole::orbital);
  CHECK_FALSE(basis.pure);
  REQUIRE(basis.shells_by_Z.at(1).size() == 1);
  CHECK(basis.shells_by_Z.at(1)[0].exponents[0] == 10.0);
  const auto& carbon = basis.shells_by_Z.at(6);
  REQUIRE(carbon.size() == 3);
  CHECK(carbon[0].l == 0);
  CHECK(carbon[1].l == 1);
  CHECK(carbon[1].coefficients == std::vector<double>{0.2, 0.8});
  CHECK(carbon[2].l == 2);
}

TEST_CASE("placing a basis on a molecule counts Cartesian and pure functions") {
  BasisSetData basis = parse_gbs(kPople, "test", "inline", BasisRole::orbital);
  // C: s + p + Cartesian d (6) = 10, H: 1.
  CHECK(place_on(basis, methyl_free_ch()).nbf() == 11);
  basis.pure = true;  // spherical d has 5
  CHECK(place_on(basis, methyl_free_ch()).nbf() == 10);
  Molecule no_basis;
  no_basis.atoms = {{8, {0, 0, 0}}};
  CHECK_THROWS_WITH(place_on(basis, no_basis), Catch::Contains("no functions for element O"));
  CHECK_THROWS_WITH(count_on(basis, no_basis), Catch::Contains("no functions for element O"));
}

TEST_CASE("counting a basis on a molecule gives the shells and functions placing it makes") {
  const Molecule uracil = read_xyz(std::string(DFMP2_SOURCE_DIR) + "/inputs/uracil.xyz");
  for (const std::string name : {"6-31g*", "cc-pvtz", "aug-cc-pvdz", "def2-tzvp-jkfit", "cc-pvtz-ri"})
    for (const std::optional<bool> pure : {std::optional<bool>(), std::optional(true), std::optional(false)}) {
      INFO(name << ", pure " << (pure ? std::to_string(*pure) : "as the file says"));
      const BasisSetData basis = load_basis(name, BasisRole::auxiliary);
      const libint2::BasisSet placed = place_on(basis, uracil, pure);
      const BasisCount counted = count_on(basis, uracil, pure);
      CHECK(counted.shells == placed.size());
      CHECK(counted.functions == static_cast<std::size_t>(placed.nbf()));
    }
}

TEST_CASE("malformed basis text is rejected with a line number") {
  CHECK_THROWS_WITH(parse_orbital("spherical\n****\nH 0\nS 2 1.0\n 1.0 0.5\n"),
                    Catch::Contains("ends inside a shell"));
  CHECK_THROWS_WITH(parse_orbital("spherical\n****\nH 0\nQ 1 1.0\n 1.0 0.5\n"),
                    Catch::Contains("bad shell header"));
  CHECK_THROWS_WITH(parse_orbital("****\nH 0\nS 1 1.0\n 1.0 0.5\n"), Catch::Contains("header"));
  CHECK_THROWS_WITH(parse_orbital(hydrogen_with("S 1 1.00\n 1.0 0.5x\n")),
                    Catch::Contains("line 5: bad number '0.5x'"));
}

TEST_CASE("exponents and coefficients libint2 cannot take are refused with file and line") {
  for (const char* exponent : {"nan", "-nan", "inf", "-1.0", "0.0", "-0.0", "1e300", "1e-300"}) {
    INFO(exponent);
    CHECK_THROWS_WITH(
        parse_orbital(hydrogen_with("S 1 1.00\n " + std::string(exponent) + " 1.0\n")),
        Catch::Contains("basis 'x' (p), line 5: the exponent must be a finite number between "
                        "1e-20 and 1e+20"));
  }
  for (const char* coefficient : {"nan", "inf", "-inf"}) {
    INFO(coefficient);
    CHECK_THROWS_WITH(
        parse_orbital(hydrogen_with("S 2 1.00\n 2.0 0.5\n 1.0 " + std::string(coefficient) + "\n")),
        Catch::Contains("line 6: a contraction coefficient is not finite"));
  }
  // All zero, cancelling (one exponent twice), and the p half of an SP shell all zero.
  for (const char* shell : {"S 2 1.00\n 2.0 0.0\n 1.0 0.0\n", "S 2 1.00\n 1.0 0.7\n 1.0 -0.7\n",
                            "SP 2 1.00\n 2.0 0.5 0.0\n 1.0 0.5 0.0\n"}) {
    INFO(shell);
    CHECK_THROWS_WITH(parse_orbital(hydrogen_with(shell)),
                      Catch::Contains("line 4: the contracted function is zero"));
  }
  // The edges of the exponent range, and strong but legitimate cancellation, are accepted.
  CHECK_NOTHROW(parse_orbital(hydrogen_with("S 2 1.00\n 1e20 1.0\n 1e-20 1.0\n")));
  CHECK_NOTHROW(parse_orbital(hydrogen_with("S 2 1.00\n 1.0 1.0\n 1.1 -0.99\n")));
}

TEST_CASE("primitive counts must be whole numbers and scale factors 1") {
  for (const char* count : {"3.7", "3e0", "0", "-1", "x", "99999999999"}) {
    INFO(count);
    CHECK_THROWS_WITH(
        parse_orbital(hydrogen_with("S " + std::string(count) + " 1.00\n 1.0 1.0\n")),
        Catch::Contains("line 4: the primitive count '" + std::string(count) +
                        "' is not a positive whole number"));
  }
  for (const char* scale : {"1.2", "0", "abc", "nan"}) {
    INFO(scale);
    CHECK_THROWS_WITH(
        parse_orbital(hydrogen_with("S 1 " + std::string(scale) + "\n 1.0 1.0\n")),
        Catch::Contains("line 4: scale factor '" + std::string(scale) + "' is not supported"));
  }
  for (const char* header : {"S 1", "S 1 1.00 2"}) {
    INFO(header);
    CHECK_THROWS_WITH(parse_orbital(hydrogen_with(std::string(header) + "\n 1.0 1.0\n")),
                      Catch::Contains("line 4: bad shell header"));
  }
  const BasisSetData two = parse_orbital(hydrogen_with("S 2 1.0\n 2.0 0.5\n 1.0 0.5\n"));
  CHECK(two.shells_by_Z.at(1)[0].exponents.size() == 2);
}

TEST_CASE("an element given twice is refused, not merged") {
  const std::string twice = hydrogen_with("S 1 1.00\n 1.0 1.0\n") + "h 0\nS 1 1.00\n 0.5 1.0\n****\n";
  CHECK_THROWS_WITH(parse_orbital(twice),
                    Catch::Contains("line 7: element H is given twice (first on line 3)"));
}

TEST_CASE("angular momentum is limited by what libint2 computes in the set's role") {
  // Debian's libint2 2.7: up to h on orbital centres, up to k on fitting centres (2- and
  // 3-centre Coulomb integrals).
  CHECK(max_angular_momentum(BasisRole::orbital) == 5);
  CHECK(max_angular_momentum(BasisRole::auxiliary) == 7);
  CHECK_THROWS_WITH(parse_orbital(hydrogen_with_l(6)),
                    Catch::Contains("line 6: angular momentum 6 (I shell) is above 5, the most "
                                    "libint2 computes for an orbital basis"));
  CHECK_THROWS_WITH(parse_orbital(hydrogen_with_l(7)), Catch::Contains("angular momentum 7 (K shell)"));
  CHECK_NOTHROW(parse_orbital(hydrogen_with_l(5)));
  for (int l : {6, 7}) CHECK_NOTHROW(parse_gbs(hydrogen_with_l(l), "x", "p", BasisRole::auxiliary));
  // The shipped def2 fitting sets carry i shells (3d metals), fine as auxiliary sets only.
  CHECK_THROWS_WITH(load_basis("def2-svp-jkfit", BasisRole::orbital),
                    Catch::Contains("(I shell) is above 5"));
  CHECK_NOTHROW(load_basis("def2-svp-jkfit", BasisRole::auxiliary));
}

TEST_CASE("shells at each role's limit go through every integral dfmp2 computes") {
  Molecule h2;
  h2.atoms = {{1, {0, 0, 0}}, {1, {0, 0, 1.4}}};
  const BasisSetData orbital =
      parse_orbital(hydrogen_with_l(max_angular_momentum(BasisRole::orbital)));
  const BasisSetData auxiliary = parse_gbs(hydrogen_with_l(max_angular_momentum(BasisRole::auxiliary)),
                                           "x", "p", BasisRole::auxiliary);
  Libint2Session session;
  const libint2::BasisSet obs = place_on(orbital, h2);
  CHECK(overlap_matrix(obs).allFinite());
  CHECK(core_hamiltonian(obs, h2).allFinite());
  const ShellPairs pairs = significant_shell_pairs(obs);
  const Eigen::MatrixXd D = Eigen::MatrixXd::Identity(obs.nbf(), obs.nbf());
  CHECK(exact_two_electron_fock(obs, pairs, {D}).front().allFinite());
  // Spherical and Cartesian: the SCF fitting set follows the orbital set's choice.
  for (bool pure : {true, false}) {
    INFO("pure " << pure);
    const libint2::BasisSet aux = place_on(auxiliary, h2, pure);
    const Eigen::MatrixXd metric = coulomb_metric(aux);
    CHECK(metric.allFinite());
    CHECK(metric.diagonal().minCoeff() > 0.0);
    const ThreeIndexIntegrals integrals(aux, obs, pairs, metric);
    const ShellRange rows{0, obs.size()};
    std::vector<double> three_index(aux.nbf() * integrals.columns(rows));
    integrals.compute({0, aux.size()}, rows, three_index.data());
    CHECK(std::all_of(three_index.begin(), three_index.end(), [](double v) { return std::isfinite(v); }));
    // The highest shell's block is really computed, not left zero.
    const std::size_t last_first = aux.shell2bf().back() * integrals.columns(rows);
    CHECK(std::any_of(three_index.begin() + last_first, three_index.end(),
                      [](double v) { return v != 0.0; }));
  }
}

TEST_CASE("a common factor of a contraction's coefficients does not matter, however large") {
  Molecule h;
  h.atoms = {{1, {0, 0, 0}}};
  const auto normalized = [&](const std::string& c1, const std::string& c2) {
    const BasisSetData basis =
        parse_orbital(hydrogen_with("S 2 1.00\n 2.0 " + c1 + "\n 0.5 " + c2 + "\n"));
    return place_on(basis, h)[0].contr[0].coeff;
  };
  const auto reference = normalized("0.5", "0.25");
  for (const auto& [c1, c2] : {std::pair{"5e299", "2.5e299"}, {"5e-299", "2.5e-299"}}) {
    const auto scaled = normalized(c1, c2);
    REQUIRE(scaled.size() == 2);
    for (int p = 0; p < 2; ++p) CHECK(scaled[p] == Approx(reference[p]).epsilon(1e-14));
  }
}

TEST_CASE("shipped sets load by name, case-insensitively, with Psi4's default aux sets") {
  const BasisSetData ccpvdz = load_basis("cc-pVDZ", BasisRole::orbital);
  CHECK(ccpvdz.pure);
  Molecule water;
  water.atoms = {{8, {0, 0, 0}}, {1, {0, 1.4, 1.1}}, {1, {0, -1.4, 1.1}}};
  CHECK(place_on(ccpvdz, water).nbf() == 24);
  CHECK(place_on(load_basis(default_df_basis("cc-pVDZ"), BasisRole::auxiliary), water).nbf() == 84);
  CHECK(place_on(load_basis(default_jk_basis("cc-pVDZ"), BasisRole::auxiliary), water).nbf() == 116);
  CHECK(place_on(load_basis("6-31G*", BasisRole::orbital), water).nbf() == 19);  // Cartesian d on O
  CHECK(default_df_basis("aug-cc-pvtz") == "aug-cc-pvtz-ri");
  CHECK(default_jk_basis("def2-SVP") == "def2-svp-jkfit");
  CHECK_THROWS_WITH(load_basis("cc-pv9z", BasisRole::orbital),
                    Catch::Contains("unknown basis set 'cc-pv9z'"));
  CHECK_THROWS_WITH(load_basis("/nonexistent/x.gbs", BasisRole::orbital),
                    Catch::Contains("cannot open basis file"));
}

TEST_CASE("every shipped basis set loads in its role") {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(DFMP2_SOURCE_DIR) + "/basis")) {
    if (entry.path().extension() != ".gbs") continue;
    const std::string stem = entry.path().stem().string();
    const bool fitting = stem.ends_with("-ri") || stem.ends_with("-jkfit");
    INFO(stem);
    const BasisSetData basis =
        load_basis(entry.path().string(), fitting ? BasisRole::auxiliary : BasisRole::orbital);
    CHECK(basis.shells_by_Z.count(1) == 1);
    CHECK(basis.shells_by_Z.count(6) == 1);
    ++count;
  }
  CHECK(count == 21);
}
