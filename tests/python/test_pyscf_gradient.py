"""The DF-MP2 gradient through the PySCF bridge (DFMP2(mf).nuc_grad_method()): against the command
line's --gradient of the same molecule and sets (dfmp2's basis files, read by PySCF), against
central differences of the bridge's own energies, and a geomeTRIC optimisation of water through
PySCF's driver that reaches Psi4 1.3.2's DF-MP2 minimum."""
import json
import os
import unittest

import numpy as np
from pyscf import lib
from pyscf.geomopt import geometric_solver

from dfmp2.pyscf import DFMP2, DFMP2Error
from pyscf_support import df_scf, molecule, read_xyz, ri, symbols
from support import SOURCE_DIR, cli_json

# Bridge against the command line, both SCFs converged tightly (PySCF conv_tol 1e-12,
# conv_tol_grad 1e-9; dfmp2 --d-convergence 1e-10), one thread each: measured (2026-11-27) at most
# 1.2e-10 Eh/bohr (water RHF, frozen core, OH UHF); checked to 1e-9 (the issue asks for 1e-8).
CLI_TOLERANCE = 1e-9  # Eh/bohr
# Central differences of the bridge's E_tot with a step of 2e-4 bohr (1e-3 leaves 1.4e-7 of h²
# error): measured at most 5.7e-9 Eh/bohr from the analytic gradient; checked to 5e-8 (the issue
# asks for 1e-6).
STEP = 2e-4  # bohr
DIFFERENCE_TOLERANCE = 5e-8  # Eh/bohr


def setUpModule():
    lib.num_threads(1)  # as the command line's runs in cli_json


class GradientAgainstCli(unittest.TestCase):
    def check(self, name, spin=0, frozen=None, cli_args=()):
        mol = molecule(name, spin=spin)
        gradient = DFMP2(df_scf(mol), auxbasis=ri(mol), frozen=frozen).nuc_grad_method().kernel()
        cli = cli_json(symbols(mol), mol.atom_coords().ravel().tolist(),
                       ["--basis", "cc-pvdz", "--multiplicity", str(spin + 1), "--gradient", "--d-convergence", "1e-10",
                        *cli_args])
        np.testing.assert_allclose(gradient, np.array(cli["gradient"]), rtol=0, atol=CLI_TOLERANCE)

    def test_water(self):
        self.check("water")

    def test_water_frozen_core(self):
        self.check("water", frozen=1, cli_args=["--frozen-core"])

    def test_uhf_radical(self):
        self.check("open-shell/hydroxyl", spin=1)


class GradientAgainstDifferences(unittest.TestCase):
    def test_central_differences_of_the_bridge_energy(self):
        atoms = read_xyz("water")
        mol = molecule("water")
        gradient = DFMP2(df_scf(mol), auxbasis=ri(mol)).Gradients().kernel()

        def energy(atom, axis, step):
            moved = [(s, list(x)) for s, x in atoms]
            moved[atom][1][axis] += step
            bridge = DFMP2(df_scf(molecule("water", atoms=moved)), auxbasis=ri(mol))
            bridge.kernel()
            return bridge.e_tot

        for atom, axis in ((0, 2), (1, 1), (1, 2)):  # the others vanish by symmetry
            difference = (energy(atom, axis, STEP) - energy(atom, axis, -STEP)) / (2 * STEP)
            self.assertAlmostEqual(gradient[atom, axis], difference, delta=DIFFERENCE_TOLERANCE)

    def test_an_scf_without_density_fitting_is_refused(self):
        from pyscf import scf
        mf = scf.RHF(molecule("water")).run()
        with self.assertRaises(DFMP2Error) as raised:
            DFMP2(mf).nuc_grad_method().kernel()
        self.assertIn("needs a density-fitted SCF", str(raised.exception))


class GeomericOptimisation(unittest.TestCase):
    def test_water_reaches_psi4s_minimum(self):
        with open(os.path.join(SOURCE_DIR, "tests", "reference", "psi4_mp2_minima.json")) as f:
            psi4 = next(r for r in json.load(f) if r["name"] == "water-cc-pvdz-mp2-opt")
        mol = molecule("water")
        converged, mol = geometric_solver.kernel(DFMP2(df_scf(mol), auxbasis=ri(mol)), convergence_set="GAU_VERYTIGHT")
        self.assertTrue(converged)
        x = mol.atom_coords(unit="Angstrom")
        bonds = [np.linalg.norm(x[0] - x[k]) for k in (1, 2)]
        a, b = x[1] - x[0], x[2] - x[0]
        angle = np.degrees(np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b)))
        np.testing.assert_allclose(bonds, psi4["bond_lengths"], rtol=0, atol=BOND_TOLERANCE)
        self.assertAlmostEqual(angle, psi4["bond_angles"][0], delta=ANGLE_TOLERANCE)


# geomeTRIC's GAU_VERYTIGHT (largest gradient 2e-6 Eh/bohr, as Psi4's gau_verytight that made the
# minimum): measured 3.2e-7 Å and 1.2e-4° from Psi4's minimum; checked to 3e-6 Å and 1e-3°.
BOND_TOLERANCE = 3e-6  # Å
ANGLE_TOLERANCE = 1e-3  # degrees

if __name__ == "__main__":
    unittest.main()
