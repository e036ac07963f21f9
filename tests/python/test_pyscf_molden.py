"""PySCF 2.14 reads dfmp2's Molden file of a molecule with an effective core potential: the core
electrons from [Core], and orbitals that are PySCF's own DF-RHF solution in that basis."""
import json
import os
import subprocess
import tempfile
import unittest

import numpy
from pyscf import gto, scf
from pyscf.tools import molden

from pyscf_support import gbs
from support import EXE, SOURCE_DIR

# Eh: dfmp2's orbitals in PySCF's DF-RHF (libcgto's ECP integrals beside libecpint's, the same
# def2-SVP functions and JK set) lie above PySCF's own minimum by second order in their difference
# (the two E_SCF differ by 2.3e-8 Eh, first order). Measured 4.0e-13 above (2026-11-27); checked
# to 4e-12, and to no more than 1e-12 below (PySCF converged to conv_tol 1e-12).
VARIATIONAL_TOLERANCE = 4e-12


class MoldenWithEcp(unittest.TestCase):
    def test_pyscf_reads_the_core_and_the_orbitals(self):
        with tempfile.TemporaryDirectory() as tmp:
            path, results = os.path.join(tmp, "hi.molden"), os.path.join(tmp, "hi.json")
            subprocess.run([EXE, os.path.join(SOURCE_DIR, "tests", "reference", "molecules", "hydrogen-iodide.xyz"),
                            "--basis", "def2-svp", "--threads", "1", "--quiet", "--molden", path, "--json", results],
                           check=True, stdout=subprocess.DEVNULL)
            read, mo_energy, mo_coeff, mo_occ, _, _ = molden.load(path)
            with open(results) as f:
                dfmp2 = json.load(f)
        self.assertEqual({label: core for label, (core, _) in read.ecp.items()}, {"I1": 28})
        self.assertEqual(mo_occ.sum(), 26)  # valence electrons: 53 − 28 + 1
        self.assertEqual(list(mo_energy), dfmp2["mo_energies"])
        # The file's basis with PySCF's def2-SVP potential for iodine; the orbitals projected onto
        # it (the same functions, perhaps in another order: exact).
        mol = gto.M(atom=read._atom, unit="Bohr", basis=read._basis, ecp={"I1": "def2-svp"}, verbose=0)
        overlap = mol.intor("int1e_ovlp")
        projected = numpy.linalg.solve(overlap, gto.intor_cross("int1e_ovlp", mol, read) @ mo_coeff)
        mf = scf.RHF(mol).density_fit(auxbasis=gbs("def2-svp-jkfit", ["I", "H"]))
        mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
        mf.kernel()
        self.assertTrue(mf.converged)
        above = mf.energy_tot(mf.make_rdm1(projected, mo_occ)) - mf.e_tot
        self.assertGreaterEqual(above, -1e-12)  # Eh: PySCF's own minimum is the lowest, up to its convergence
        self.assertLess(above, VARIATIONAL_TOLERANCE)


if __name__ == "__main__":
    unittest.main()
