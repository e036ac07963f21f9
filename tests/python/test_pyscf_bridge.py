"""dfmp2.pyscf.DFMP2(mf).kernel() against PySCF 2.14's own DF-MP2 (mp.dfmp2.DFMP2, mp.dfump2.DFUMP2)
of the same SCF with the same auxiliary set, PySCF's basis sets by name; and what the bridge
refuses, how it reports dfmp2's errors, the threads and memory it passes, its temporary files."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import h5py

from pyscf import df, dft, gto, lib, mp, scf

from dfmp2.pyscf import DFMP2, DFMP2Error
from support import EXE, SOURCE_DIR

# Measured (2026-11-27, 2 threads): at most 1.4e-14 Eh between the bridge and PySCF (E_corr, its
# opposite- and same-spin parts, E_tot) over the cases below (the Cartesian one's). Checked to
# 1e-11 Eh, above the ~3e-12 Eh by which dfmp2's threaded sums vary with the thread count
# (test_package.py); the issue asks for 1e-9.
TOLERANCE = 1e-11  # Eh

WATER = "O 0 0 0.1178; H 0 0.7555 -0.4712; H 0 -0.7555 -0.4712"


def converged(mf):
    mf.conv_tol = 1e-11
    mf.kernel()
    assert mf.converged
    return mf


def pyscf_dfmp2(mf, frozen=None):
    """PySCF's own DF-MP2 of mf with its MP2 fitting set (the bridge's default auxbasis)."""
    unrestricted = isinstance(mf, scf.uhf.UHF)
    pt = (mp.dfump2.DFUMP2 if unrestricted else mp.dfmp2.DFMP2)(mf, frozen=frozen)
    pt.with_df = df.DF(mf.mol, auxbasis=df.make_auxbasis(mf.mol, mp2fit=True))
    pt.kernel(with_t2=False)
    return pt


class EnergyAgainstPyscf(unittest.TestCase):
    def check(self, mf, frozen=None):
        bridge = DFMP2(mf, frozen=frozen)
        e_corr = bridge.kernel()
        reference = pyscf_dfmp2(mf, frozen)
        self.assertEqual(e_corr, bridge.e_corr)
        for key in ("e_corr", "e_corr_os", "e_corr_ss", "e_tot"):
            self.assertAlmostEqual(getattr(bridge, key), getattr(reference, key), delta=TOLERANCE, msg=key)
        return bridge

    def test_water_df_rhf_and_rhf(self):
        mol = gto.M(atom=WATER, basis="cc-pvdz", verbose=0)
        self.check(converged(scf.RHF(mol).density_fit()))
        self.check(converged(scf.RHF(mol)))  # no density fitting in the SCF

    def test_uhf_radical(self):
        mol = gto.M(atom="O 0 0 0; H 0 0 0.97", basis="cc-pvdz", spin=1, verbose=0)
        self.check(converged(scf.UHF(mol).density_fit()))

    def test_frozen_core_as_an_int_and_a_list(self):
        mf = converged(scf.RHF(gto.M(atom=WATER, basis="cc-pvdz", verbose=0)).density_fit())
        self.assertAlmostEqual(self.check(mf, frozen=1).e_corr, DFMP2(mf, frozen=[0]).kernel(), delta=TOLERANCE)
        uhf = converged(scf.UHF(gto.M(atom="O 0 0 0; H 0 0 0.97", basis="cc-pvdz", spin=1, verbose=0)).density_fit())
        self.check(uhf, frozen=1)

    def test_cartesian_basis(self):
        self.check(converged(scf.RHF(gto.M(atom=WATER, basis="6-31g*", cart=True, verbose=0)).density_fit()))

    def test_ghost_atoms(self):  # water in the basis of a water dimer (/molecule/ghost)
        ghosts = "; GHOST-O 0 0 3.0; GHOST-H 0 0.7555 3.59; GHOST-H 0 -0.7555 3.59"
        self.check(converged(scf.RHF(gto.M(atom=WATER + ghosts, basis="cc-pvdz", verbose=0)).density_fit()))

    def test_f_functions(self):  # cc-pVTZ's f shells: PySCF's and libint2's solid harmonics agree
        self.check(converged(scf.RHF(gto.M(atom=WATER, basis="cc-pvtz", verbose=0)).density_fit()))


class Refusals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mol = gto.M(atom=WATER, basis="cc-pvdz", verbose=0)
        cls.mf = converged(scf.RHF(cls.mol).density_fit())

    def refused(self, message, mf, **kwargs):
        with self.assertRaises(DFMP2Error) as raised:
            DFMP2(mf, **kwargs).kernel()
        self.assertIn(message, str(raised.exception))

    def test_what_dfmp2_cannot_take(self):
        self.refused("dfmp2 takes RHF or UHF objects, not ROHF",
                     converged(scf.ROHF(gto.M(atom="O 0 0 0; H 0 0 0.97", basis="cc-pvdz", spin=1, verbose=0))))
        self.refused("not Kohn-Sham ones", dft.RKS(self.mol).run())
        self.refused("dfmp2 freezes the lowest orbitals only", self.mf, frozen=[1])
        self.refused("must leave an active occupied orbital", self.mf, frozen=5)
        self.refused("effective core potentials",
                     converged(scf.RHF(gto.M(atom="I 0 0 0; H 0 0 1.6", basis="def2-svp", ecp={"I": "def2-svp"}, verbose=0))))

    def test_a_dfmp2_error_is_an_exception_with_its_line(self):
        mf = self.mf.copy()
        mf.max_memory = 1  # MB: less than the process holds
        self.refused("dfmp2: error: ", mf)

    def test_threads_memory_and_no_temporary_left(self):
        with tempfile.TemporaryDirectory() as tmp, lib.with_omp_threads(1):
            previous = os.environ.get("TMPDIR")
            os.environ["TMPDIR"] = tempfile.tempdir = tmp
            try:
                bridge = DFMP2(self.mf)
                bridge.kernel()
                starved = self.mf.copy()
                starved.max_memory = 1
                with self.assertRaises(DFMP2Error):  # a run dfmp2 stops leaves nothing either
                    DFMP2(starved).kernel()
                left = os.listdir(tmp)
            finally:
                tempfile.tempdir = None
                os.environ.pop("TMPDIR") if previous is None else os.environ.update(TMPDIR=previous)
        self.assertEqual(left, [])
        self.assertEqual(bridge.results["threads"], 1)
        self.assertEqual(bridge.results["memory"]["limit_bytes"], int(self.mf.max_memory * 1e6))
        # PySCF's E_SCF goes with the orbitals: dfmp2 builds no Fock matrix and loads no JK set.
        self.assertEqual((bridge.results["scf_type"], bridge.results["naux_jk"]), ("given", 0))
        self.assertEqual(bridge.results["e_scf"], self.mf.e_tot)


class GivenScfEnergy(unittest.TestCase):
    """/scf's e_scf attribute on the command line: E_SCF as given, no Fock build, E_corr unchanged;
    and what /molecule/ghost (the bridge's ghost atoms) may not hold."""

    def run_dfmp2(self, path, *args):
        out = path + ".json"
        done = subprocess.run([EXE, path, "--quiet", "--json", out, *args], capture_output=True, text=True)
        if done.returncode != 0:
            return done, None
        with open(out) as f:
            return done, json.load(f)

    def test_e_scf_is_taken_and_checked(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = os.path.join(tmp, "results.h5")
            subprocess.run([EXE, os.path.join(SOURCE_DIR, "inputs", "water.xyz"), "--basis", "cc-pvdz", "--quiet",
                            "--output", results], check=True, stdout=subprocess.DEVNULL)
            given = os.path.join(tmp, "given.h5")
            shutil.copy(results, given)
            with h5py.File(given, "a") as f:
                f["scf"].attrs["e_scf"] = -76.5
            _, built = self.run_dfmp2(results)
            _, taken = self.run_dfmp2(given)
            self.assertEqual((taken["scf_type"], taken["e_scf"], taken["naux_jk"]), ("given", -76.5, 0))
            self.assertEqual(taken["e_total"], -76.5 + taken["e_corr"])
            self.assertAlmostEqual(taken["e_corr"], built["e_corr"], delta=1e-12)  # the same orbitals and sets
            _, gradient = self.run_dfmp2(given, "--gradient")  # the gradient builds dfmp2's own
            self.assertAlmostEqual(gradient["e_scf"], built["e_scf"], delta=TOLERANCE)  # threaded sums' order
            with h5py.File(given, "a") as f:
                f["scf"].attrs["e_scf"] = 3
            done, _ = self.run_dfmp2(given)
            self.assertIn("attribute 'e_scf' on /scf must be a floating-point number", done.stderr)
            for ghost, problem in (([0, 2, 0], "dataset /molecule/ghost must hold 0 or 1, found 2 at index 1"),
                                   ([0, 0], "dataset /molecule/ghost has length 2, but /molecule/atomic_numbers has 3")):
                shutil.copy(results, given)
                with h5py.File(given, "a") as f:
                    f["molecule/ghost"] = ghost
                done, _ = self.run_dfmp2(given)
                self.assertIn(problem, done.stderr)


if __name__ == "__main__":
    unittest.main()
