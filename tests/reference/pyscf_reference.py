"""Reference energies from PySCF 2.14 for dfmp2's tests (run in a venv with PySCF, such as the
one the test suite makes: build/pyscf-venv, from tests/python/pyscf-requirements.txt):

    build/pyscf-venv/bin/python tests/reference/pyscf_reference.py

Writes tests/reference/pyscf_energies.json: one record per case with its settings and PySCF's
DF-SCF and DF-MP2 energies (full precision). PySCF reads dfmp2's own basis files (basis/*.gbs, the
orbital, RI and JK sets), so both programs run the very same functions: what the CLI tests
compare is the computation. PySCF: DF-RHF/DF-UHF with the JK set (conv_tol 1e-12, conv_tol_grad
1e-9), then its own mp.dfmp2.DFMP2 / mp.dfump2.DFUMP2 with the RI set, amplitudes not kept; both
sets fitted with Psi4's and dfmp2's fitting condition (below, `fitting`). PySCF
takes the molecule's spherical/Cartesian choice for every set (its three-centre integrals have
one), so a Cartesian case's RI set is Cartesian too: the CLI test gives dfmp2 that set as a .gbs
file saying `cartesian`. dfmp2 never runs PySCF: this script is how the numbers were made.
"""
import json
import os
import sys

import numpy as np
import pyscf
from pyscf import df, gto, mp, scf
from pyscf.gto.basis import parse_gaussian

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "reference", "pyscf_energies.json")
BOHR_IN_ANGSTROM = 0.52917721067  # dfmp2's XYZ reader's (CODATA 2014); PySCF's own differs in the 9th digit

CASES = [
    # name, xyz (from the repository's root), basis, RI set, JK set, charge, multiplicity, frozen, Cartesian
    ("water-cc-pvdz", "inputs/water.xyz", "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", 0, 1, 0, False),
    ("water-cc-pvdz-fc", "inputs/water.xyz", "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", 0, 1, 1, False),
    ("hydroxyl-cc-pvdz-uhf", "inputs/open-shell/hydroxyl.xyz", "cc-pvdz", "cc-pvdz-ri", "cc-pvdz-jkfit", 0, 2, 0, False),
    ("water-6-31gs-cartesian", "inputs/water.xyz", "6-31gs", "cc-pvdz-ri", "cc-pvdz-jkfit", 0, 1, 0, True),
]


def read_xyz(path):
    with open(os.path.join(REPO, path)) as f:
        lines = f.read().splitlines()
    atoms = [line.split() for line in lines[2:2 + int(lines[0])]]
    return [(a[0], [float(x) / BOHR_IN_ANGSTROM for x in a[1:4]]) for a in atoms]


def gbs(name, symbols):
    """dfmp2's basis/<name>.gbs for these elements, in PySCF's form."""
    path = os.path.join(REPO, "basis", name + ".gbs")
    return {s: parse_gaussian.load(path, s) for s in set(symbols)}


def libint2_norms(mol):
    """Each AO's squared norm in libint2's convention (dfmp2's and Psi4's): 1 for spherical
    functions, (2a-1)!!(2b-1)!!(2c-1)!!/(2l-1)!! for the Cartesian x^a y^b z^c."""
    def double_factorial(n):
        return 1 if n <= 0 else n * double_factorial(n - 2)
    norms = []
    for shell in range(mol.nbas):
        l = mol.bas_angular(shell)
        if mol.cart:
            shell_norms = [double_factorial(2 * a - 1) * double_factorial(2 * b - 1) *
                           double_factorial(2 * (l - a - b) - 1) / double_factorial(2 * l - 1)
                           for a in range(l, -1, -1) for b in range(l - a, -1, -1)]
        else:
            shell_norms = [1.0] * (2 * l + 1)
        norms += shell_norms * mol.bas_nctr(shell)
    return np.array(norms)


def fitting(mol, name):
    """PySCF's DF object for the set basis/<name>.gbs, fitted as Psi4 and dfmp2 fit: with the
    metric of libint2's functions, whose eigenvalues below 1e-10 × the largest are dropped.
    PySCF's own Cholesky keeps them all: Cartesian cc-pVDZ-JKFIT on water has one at 5e-11 of the
    largest, worth 1.7e-7 Eh in E_SCF; and which ones fall below depends on how the Cartesian
    functions are normalised (3e-9 Eh here between PySCF's and libint2's)."""
    auxmol = df.addons.make_auxmol(mol, gbs(name, [mol.atom_pure_symbol(a) for a in range(mol.natm)]))
    scale = np.sqrt(auxmol.intor_symmetric("int1e_ovlp").diagonal() / libint2_norms(auxmol))  # PySCF = scale × libint2
    metric = auxmol.intor("int2c2e") / np.outer(scale, scale)
    w, v = np.linalg.eigh(metric)
    kept = w > 1e-10 * w[-1]
    low = (v[:, kept] / np.sqrt(w[kept])).T / scale  # acts on PySCF's functions
    fitted = df.DF(mol)
    fitted.auxmol = auxmol
    fitted._cderi = low @ df.incore.aux_e2(mol, auxmol, "int3c2e", aosym="s2ij").T
    return fitted


def run(name, xyz, basis, ri, jk, charge, multiplicity, frozen, cart):
    atoms = read_xyz(xyz)
    symbols = [a[0] for a in atoms]
    mol = gto.M(atom=atoms, unit="Bohr", basis=gbs(basis, symbols), charge=charge, spin=multiplicity - 1,
                cart=cart, verbose=0)
    mf = (scf.UHF(mol) if multiplicity > 1 else scf.RHF(mol)).density_fit(with_df=fitting(mol, jk))
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel()
    assert mf.converged, name
    pt = (mp.dfump2.DFUMP2 if multiplicity > 1 else mp.dfmp2.DFMP2)(mf, frozen=frozen or None)
    pt.with_df = fitting(mol, ri)
    pt.kernel(with_t2=False)
    return {"name": name, "xyz": xyz, "basis": basis, "df_basis": ri, "jk_basis": jk, "charge": charge,
            "multiplicity": multiplicity, "frozen": frozen, "cartesian": cart, "nbf": mol.nao_nr(),
            "naux": pt.with_df.auxmol.nao_nr(), "e_scf": mf.e_tot, "e_corr": pt.e_corr, "e_os": pt.e_corr_os,
            "e_ss": pt.e_corr_ss, "program": f"PySCF {pyscf.__version__}",
            "settings": "DF-SCF conv_tol 1e-12, conv_tol_grad 1e-9; mp.dfmp2.DFMP2 / mp.dfump2.DFUMP2"}


def main():
    records = [run(*case) for case in CASES]
    with open(OUT, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    for r in records:
        print(f"{r['name']:28s} E_SCF {r['e_scf']:.12f}  E_corr {r['e_corr']:.12f}", file=sys.stderr)


if __name__ == "__main__":
    main()
