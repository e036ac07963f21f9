#include <catch2/catch.hpp>

#include "src/molecule/basis.hpp"
#include "src/common/errors.hpp"

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

Molecule methyl_free_ch() {
  Molecule mol;
  mol.atoms = {{6, {0, 0, 0}}, {1, {0, 0, 2.0}}};
  return mol;
}

}  // namespace

TEST_CASE("G94 text parses: header, D exponents, SP shells split into s and p") {
  const BasisSetData basis = parse_gbs(kPople, "test", "inline");
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
  BasisSetData basis = parse_gbs(kPople, "test", "inline");
  // C: s + p + Cartesian d (6) = 10, H: 1.
  CHECK(place_on(basis, methyl_free_ch()).nbf() == 11);
  basis.pure = true;  // spherical d has 5
  CHECK(place_on(basis, methyl_free_ch()).nbf() == 10);
  Molecule no_basis;
  no_basis.atoms = {{8, {0, 0, 0}}};
  CHECK_THROWS_WITH(place_on(basis, no_basis), Catch::Contains("no functions for element O"));
}

TEST_CASE("malformed basis text is rejected with a line number") {
  CHECK_THROWS_WITH(parse_gbs("spherical\n****\nH 0\nS 2 1.0\n 1.0 0.5\n", "x", "p"),
                    Catch::Contains("ends inside a shell"));
  CHECK_THROWS_WITH(parse_gbs("spherical\n****\nH 0\nQ 1 1.0\n 1.0 0.5\n", "x", "p"),
                    Catch::Contains("bad shell header"));
  CHECK_THROWS_WITH(parse_gbs("****\nH 0\nS 1 1.0\n 1.0 0.5\n", "x", "p"),
                    Catch::Contains("header"));
}

TEST_CASE("shipped sets load by name, case-insensitively, with Psi4's default aux sets") {
  const BasisSetData ccpvdz = load_basis("cc-pVDZ");
  CHECK(ccpvdz.pure);
  Molecule water;
  water.atoms = {{8, {0, 0, 0}}, {1, {0, 1.4, 1.1}}, {1, {0, -1.4, 1.1}}};
  CHECK(place_on(ccpvdz, water).nbf() == 24);
  CHECK(place_on(load_basis(default_df_basis("cc-pVDZ")), water).nbf() == 84);
  CHECK(place_on(load_basis(default_jk_basis("cc-pVDZ")), water).nbf() == 116);
  CHECK(place_on(load_basis("6-31G*"), water).nbf() == 19);  // Cartesian d on O
  CHECK(default_df_basis("aug-cc-pvtz") == "aug-cc-pvtz-ri");
  CHECK(default_jk_basis("def2-SVP") == "def2-svp-jkfit");
  CHECK_THROWS_WITH(load_basis("cc-pv9z"), Catch::Contains("unknown basis set 'cc-pv9z'"));
  CHECK_THROWS_WITH(load_basis("/nonexistent/x.gbs"), Catch::Contains("cannot open basis file"));
}

TEST_CASE("every shipped basis set parses") {
  for (const char* name :
       {"sto-3g", "6-31g*", "cc-pvdz", "cc-pvtz", "aug-cc-pvdz", "aug-cc-pvtz", "def2-svp",
        "def2-tzvp", "cc-pvdz-ri", "cc-pvtz-ri", "aug-cc-pvdz-ri", "aug-cc-pvtz-ri", "def2-svp-ri",
        "def2-tzvp-ri", "cc-pvdz-jkfit", "cc-pvtz-jkfit", "aug-cc-pvdz-jkfit", "aug-cc-pvtz-jkfit",
        "def2-svp-jkfit", "def2-tzvp-jkfit"}) {
    INFO(name);
    const BasisSetData basis = load_basis(name);
    CHECK(basis.shells_by_Z.count(1) == 1);
    CHECK(basis.shells_by_Z.count(6) == 1);
  }
}

TEST_CASE("elements with an effective core potential are refused, not silently wrong") {
  const BasisSetData basis = parse_gbs(
      "spherical\n****\nH 0\nS 1 1.00\n 1.0 1.0\n****\nI 0\nS 1 1.00\n 1.0 1.0\n****\n"
      "I-ECP 2 28\nd-ul potential\n 1\n2 1.0 0.5\n",
      "ecp-test", "inline");
  Molecule hi;
  hi.atoms = {{1, {0, 0, 0}}, {53, {0, 0, 3.0}}};
  CHECK_THROWS_WITH(place_on(basis, hi), Catch::Contains("effective core potential for I"));
}
