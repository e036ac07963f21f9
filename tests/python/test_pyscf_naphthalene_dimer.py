"""The PySCF bridge on the naphthalene dimer (cc-pVDZ, 360 functions), whose PySCF DF-SCF and
DF-MP2 take minutes on two cores (the test 2.0-2.7 min on this machine's 2 shared cores):
dfmp2.pyscf.DFMP2(mf).kernel() against PySCF 2.14's own DF-MP2 with the same fitting set."""
import os
import unittest

from pyscf import df, gto, mp, scf

from dfmp2.pyscf import DFMP2
from support import SOURCE_DIR

# Measured (2026-11-27, 2 threads): 2.4e-13 Eh (E_corr; its parts 1.8e-13 and 6.1e-14). Checked to
# 1e-11 Eh as test_pyscf_bridge.py (dfmp2's threaded sums vary by ~3e-12); the issue asks for 1e-9.
TOLERANCE = 1e-11  # Eh


class NaphthaleneDimer(unittest.TestCase):
    def test_bridge_equals_pyscf(self):
        mol = gto.M(atom=os.path.join(SOURCE_DIR, "inputs", "naphthalene-dimer.xyz"), basis="cc-pvdz", verbose=0)
        mf = scf.RHF(mol).density_fit()
        mf.conv_tol = 1e-10
        mf.kernel()
        self.assertTrue(mf.converged)
        bridge = DFMP2(mf)
        bridge.kernel()
        reference = mp.dfmp2.DFMP2(mf)
        reference.with_df = df.DF(mol, auxbasis=df.make_auxbasis(mol, mp2fit=True))
        reference.kernel(with_t2=False)
        for key in ("e_corr", "e_corr_os", "e_corr_ss"):
            self.assertAlmostEqual(getattr(bridge, key), getattr(reference, key), delta=TOLERANCE, msg=key)


if __name__ == "__main__":
    unittest.main()
