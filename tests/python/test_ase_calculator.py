"""The ASE calculator dfmp2.ase.DFMP2 with Debian's ASE: energies equal the command line's (in eV),
forces are minus the command line's DF-MP2 gradient (in eV/Å), the dipole is its relaxed DF-MP2
dipole (in e·Å), and failed runs raise with dfmp2's message."""
import os
import unittest

from ase import Atoms, units
from ase.calculators.calculator import CalculationFailed
from ase.io import read

from dfmp2.ase import DFMP2
from support import SOURCE_DIR, cli_json

CLI_TOLERANCE = 1e-12  # Eh
CLI_GRADIENT_TOLERANCE = 1e-10  # Eh/bohr
CLI_DIPOLE_TOLERANCE = 1e-10  # e·bohr


def setUpModule():
    # dfmp2 inherits the threads: one, as support.cli_json's runs (and these molecules are small).
    os.environ["OMP_NUM_THREADS"] = "1"


def water():
    return read(os.path.join(SOURCE_DIR, "inputs", "water.xyz"))


class CalculatorTest(unittest.TestCase):
    def test_energy_equals_the_command_line_in_ev(self):
        atoms = water()
        atoms.calc = DFMP2(basis="cc-pvdz", freeze_core=True)
        energy = atoms.get_potential_energy()
        geometry = (atoms.get_positions() / units.Bohr).ravel().tolist()
        cli = cli_json(atoms.get_chemical_symbols(), geometry, ["--basis", "cc-pvdz", "--frozen-core"])
        self.assertAlmostEqual(energy / units.Hartree, cli["e_total"], delta=CLI_TOLERANCE)

    def test_parameters_become_the_atomic_input(self):
        atoms = water()
        calc = DFMP2(method="scs-mp2", basis="def2-svp", charge=1, multiplicity=2, scf_type="pk", memory="1GB")
        atomic_input = calc.atomic_input(atoms)
        self.assertEqual(atomic_input["model"], {"method": "scs-mp2", "basis": "def2-svp"})
        self.assertEqual(atomic_input["keywords"], {"scf_type": "pk", "memory": "1GB"})
        molecule = atomic_input["molecule"]
        self.assertEqual((molecule["molecular_charge"], molecule["molecular_multiplicity"]), (1, 2))
        self.assertEqual(molecule["symbols"], ["O", "H", "H"])
        self.assertEqual(molecule["geometry"][2], 0.117790 / units.Bohr)
        self.assertEqual(DFMP2().atomic_input(atoms)["model"], {"method": "mp2", "basis": "cc-pvdz"})

    def test_a_moved_atom_is_a_new_run(self):
        atoms = water()
        atoms.calc = DFMP2(basis="sto-3g")
        first = atoms.get_potential_energy()
        self.assertEqual(atoms.calc.get_property("energy", atoms, allow_calculation=False), first)
        atoms.positions[1, 2] += 0.05
        self.assertIsNone(atoms.calc.get_property("energy", atoms, allow_calculation=False))
        self.assertNotEqual(atoms.get_potential_energy(), first)

    def test_forces_and_dipole_are_the_command_line_gradient_runs(self):
        atoms = water()
        atoms.calc = DFMP2(basis="cc-pvdz", freeze_core=True)
        forces = atoms.get_forces()
        geometry = (atoms.get_positions() / units.Bohr).ravel().tolist()
        cli = cli_json(atoms.get_chemical_symbols(), geometry, ["--basis", "cc-pvdz", "--frozen-core", "--gradient"])
        for row, cli_row in zip(forces, cli["gradient"]):
            for force, gradient in zip(row, cli_row):
                self.assertAlmostEqual(-force / (units.Hartree / units.Bohr), gradient, delta=CLI_GRADIENT_TOLERANCE)
        self.assertAlmostEqual(atoms.get_potential_energy() / units.Hartree, cli["e_total"], delta=CLI_TOLERANCE)
        # From the same run: asking for it starts none.
        dipole = atoms.calc.get_property("dipole", atoms, allow_calculation=False)
        for component, cli_component in zip(dipole, cli["mp2_dipole_moment"]):
            self.assertAlmostEqual(component / units.Bohr, cli_component, delta=CLI_DIPOLE_TOLERANCE)
        self.assertGreater(abs(cli["mp2_dipole_moment"][2]), 0.5)  # water's dipole lies along z

    def test_forces_of_an_ecp_molecule_are_the_command_line_gradient(self):
        # Hydrogen iodide off the axes in def2-SVP: iodine's 28 core electrons are its potential's,
        # whose derivatives are part of the forces.
        atoms = Atoms("IH", positions=[[0.1, -0.2, 0.05], [0.8, 0.7, 1.3]])
        atoms.calc = DFMP2(basis="def2-svp")
        forces = atoms.get_forces()
        geometry = (atoms.get_positions() / units.Bohr).ravel().tolist()
        cli = cli_json(atoms.get_chemical_symbols(), geometry, ["--basis", "def2-svp", "--gradient"])
        self.assertEqual(cli["nocc"], 13)  # valence electrons only: (53 − 28 + 1) / 2
        for row, cli_row in zip(forces, cli["gradient"]):
            for force, gradient in zip(row, cli_row):
                self.assertAlmostEqual(-force / (units.Hartree / units.Bohr), gradient, delta=CLI_GRADIENT_TOLERANCE)
        self.assertGreater(max(abs(f) for f in forces.ravel()), 0.1)  # eV/Å: away from the minimum
        self.assertAlmostEqual(atoms.get_potential_energy() / units.Hartree, cli["e_total"], delta=CLI_TOLERANCE)

    def test_dipole_alone_is_a_gradient_run(self):
        atoms = water()
        atoms.calc = DFMP2(basis="sto-3g")
        dipole = atoms.get_dipole_moment()
        self.assertIsNotNone(atoms.calc.get_property("forces", atoms, allow_calculation=False))
        self.assertGreater(abs(dipole[2]), 0.1)

    def test_forces_of_another_method_are_refused(self):
        atoms = water()
        atoms.calc = DFMP2(method="hf", basis="sto-3g")
        with self.assertRaisesRegex(CalculationFailed, "driver gradient needs model.method mp2"):
            atoms.get_forces()

    def test_what_dfmp2_refuses_raises_calculation_failed(self):
        atoms = water()
        atoms.calc = DFMP2(basis="sto-3g", puream=True)
        with self.assertRaisesRegex(CalculationFailed, "dfmp2: unknown keyword 'puream'"):
            atoms.get_potential_energy()
        crystal = Atoms("He", cell=[3, 3, 3], pbc=True)
        crystal.calc = DFMP2(basis="cc-pvdz")
        with self.assertRaisesRegex(CalculationFailed, "must not be periodic"):
            crystal.get_potential_energy()


if __name__ == "__main__":
    unittest.main()
