#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <limits>

#include "src/common/errors.hpp"
#include "src/molecule/molecule.hpp"
#include "src/io/xyz.hpp"
#include "tests/src/temp_dir.hpp"

using namespace dfmp2;

TEST_CASE("element symbols map to atomic numbers, any case") {
  CHECK(atomic_number("O") == 8);
  CHECK(atomic_number("cl") == 17);
  CHECK(atomic_number("FE") == 26);
  CHECK(element_symbol(36) == "Kr");
  CHECK_THROWS_WITH(atomic_number("Xx"), Catch::Contains("unknown element symbol 'Xx'"));
}

TEST_CASE("XYZ files are read in Ångström and converted to bohr") {
  TempDir dir;
  const auto path = dir.write("w.xyz", "3\n  water  \nO 0 0 0.1\nH 0 0.75 -0.47\nh 0 -0.75 -0.47\n");
  const Molecule mol = read_xyz(path);
  REQUIRE(mol.atoms.size() == 3);
  CHECK(mol.name == "water");
  CHECK(mol.atoms[2].Z == 1);
  CHECK(mol.atoms[0].r[2] == Approx(0.1 / 0.52917721067).epsilon(1e-14));
  CHECK(electron_count(mol) == 10);
  CHECK(formula(mol) == "H2O");
}

TEST_CASE("unreadable XYZ files are rejected with the reason") {
  TempDir dir;
  CHECK_THROWS_WITH(read_xyz(dir.path("none.xyz")), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(read_xyz(dir.write("a.xyz", "two\nx\n")), Catch::Contains("atom count"));
  CHECK_THROWS_WITH(read_xyz(dir.write("b.xyz", "2\nx\nH 0 0 0\n")),
                    Catch::Contains("expected 2 atoms, found 1"));
  CHECK_THROWS_WITH(read_xyz(dir.write("c.xyz", "1\nx\nH 0 0 zero\n")),
                    Catch::Contains("bad coordinate 'zero'"));
  CHECK_THROWS_WITH(read_xyz(dir.write("d.xyz", "1\nx\nQq 0 0 0\n")),
                    Catch::Contains("unknown element symbol 'Qq'"));
  CHECK_THROWS_WITH(read_xyz(dir.write("e.xyz", "1\nx\nH 0 0 0\nH 1 0 0\n")),
                    Catch::Contains("more lines"));
}

TEST_CASE("validation catches impossible molecules and multiplicities") {
  Molecule h2;
  h2.atoms = {{1, {0, 0, 0}}, {1, {0, 0, 1.4}}};
  CHECK_NOTHROW(validate(h2));
  Molecule odd = h2;
  odd.charge = 1;
  CHECK_THROWS_WITH(validate(odd), Catch::Contains("odd electron count (1) cannot be a singlet"));
  odd.multiplicity = 2;
  CHECK_NOTHROW(validate(odd));
  Molecule triplet = h2;
  triplet.multiplicity = 3;
  CHECK_NOTHROW(validate(triplet));
  triplet.multiplicity = 2;
  CHECK_THROWS_WITH(validate(triplet), Catch::Contains("multiplicity 2 needs an odd electron count"));
  triplet.multiplicity = 5;
  CHECK_THROWS_WITH(validate(triplet), Catch::Contains("multiplicity 5 needs 4 unpaired electrons"));
  triplet.multiplicity = 0;
  CHECK_THROWS_WITH(validate(triplet), Catch::Contains("multiplicity 0 is not a spin multiplicity"));
  Molecule clash = h2;
  clash.atoms[1].r = {0, 0, 1e-6};
  CHECK_THROWS_WITH(validate(clash), Catch::Contains("closer than 0.2 bohr"));
  clash.atoms[1].r = {0, 0, 0.19};
  CHECK_THROWS_WITH(validate(clash), Catch::Contains("are 0.19 bohr apart"));
  clash.atoms[1].r = {0, 0, 0.21};
  CHECK_NOTHROW(validate(clash));
  Molecule nan = h2;
  nan.atoms[0].r[1] = std::nan("");
  CHECK_THROWS_WITH(validate(nan), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(validate(Molecule{}), Catch::Contains("no atoms"));
  Molecule ion = h2;
  ion.charge = std::numeric_limits<int>::min();  // −charge overflows an int
  CHECK(electron_count(ion) == 2147483650LL);
  CHECK_THROWS_WITH(validate(ion), Catch::Contains("2147483650 electrons, more than dfmp2 takes"));
  ion.charge = std::numeric_limits<int>::max();
  CHECK_THROWS_WITH(validate(ion), Catch::Contains("leaves -2147483645 electrons"));
}

TEST_CASE("the unpaired electrons are α") {
  Molecule o2;
  o2.atoms = {{8, {0, 0, 0}}, {8, {0, 0, 2.28}}};
  o2.multiplicity = 3;
  CHECK(alpha_electrons(o2) == 9);
  CHECK(beta_electrons(o2) == 7);
  o2.multiplicity = 1;
  CHECK(alpha_electrons(o2) == 8);
  CHECK(beta_electrons(o2) == 8);
}

TEST_CASE("nuclear repulsion and frozen core follow their definitions") {
  Molecule hf;
  hf.atoms = {{9, {0, 0, 0}}, {1, {0, 0, 2.0}}};
  CHECK(nuclear_repulsion(hf) == Approx(9.0 / 2.0).epsilon(1e-15));
  CHECK(frozen_core_orbitals(hf) == 1);  // F: 1s
  Molecule sih4;
  sih4.atoms = {{14, {0, 0, 0}}, {1, {0, 0, 2.8}}};
  CHECK(frozen_core_orbitals(sih4) == 5);  // Si: 1s2s2p
  Molecule kbr;
  kbr.atoms = {{19, {0, 0, 0}}, {35, {0, 0, 5.0}}};
  CHECK(frozen_core_orbitals(kbr) == 9 + 9);  // K: [Ne]3s3p; Br: [Ar] (Psi4 1.3 keeps 3d active)
}

TEST_CASE("ghost atoms: read as Psi4 writes them, with no charge, electrons or frozen core") {
  TempDir dir;
  const auto path = dir.write("g.xyz", "4\nwater, a ghost water\nO 0 0 0.1\nH 0 0.75 -0.47\n@O 3 0 0.1\nGh(h) 3 0.75 -0.47\n");
  const Molecule mol = read_xyz(path);
  REQUIRE(mol.atoms.size() == 4);
  CHECK_FALSE(mol.atoms[1].ghost);
  CHECK(mol.atoms[2].ghost);
  CHECK(mol.atoms[2].Z == 8);
  CHECK(mol.atoms[3].ghost);
  CHECK(mol.atoms[3].Z == 1);
  CHECK(atom_label(mol.atoms[2]) == "Gh(O)");
  CHECK(atom_label(mol.atoms[1]) == "H");
  CHECK(has_ghost_atoms(mol));
  CHECK(electron_count(mol) == 9);
  CHECK(formula(mol) == "HO");
  CHECK(frozen_core_orbitals(mol) == 1);
  Molecule real = mol;
  real.atoms.resize(2);
  CHECK(nuclear_repulsion(mol) == nuclear_repulsion(real));
  CHECK_FALSE(has_ghost_atoms(real));

  CHECK_THROWS_WITH(read_xyz(dir.write("a.xyz", "1\nx\n@Qq 0 0 0\n")), Catch::Contains("unknown element symbol 'Qq'"));
  CHECK_THROWS_WITH(read_xyz(dir.write("b.xyz", "1\nx\nGh(O 0 0 0\n")), Catch::Contains("unknown element symbol 'Gh(O'"));
  CHECK_THROWS_WITH(read_xyz(dir.write("c.xyz", "1\nx\n@ 0 0 0\n")), Catch::Contains("unknown element symbol '@'"));
  Molecule ghosts = mol;
  for (Atom& atom : ghosts.atoms) atom.ghost = true;
  CHECK_THROWS_WITH(validate(ghosts), Catch::Contains("every atom of the molecule is a ghost atom"));
}
