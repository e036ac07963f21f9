"""What the PySCF bridge's tests share (run in the PySCF venv, build/pyscf-venv): molecules from
inputs/*.xyz with dfmp2's own basis files (basis/*.gbs) read by PySCF, so that the bridge, PySCF
and the command line run the same functions, and tightly converged density-fitted SCFs."""
import os

from pyscf import gto, scf
from pyscf.gto.basis import parse_gaussian

from support import BOHR_IN_ANGSTROM, SOURCE_DIR


def gbs(name, symbols):
    path = os.path.join(SOURCE_DIR, "basis", name + ".gbs")
    return {s: parse_gaussian.load(path, s) for s in set(symbols)}


def read_xyz(name):
    """(symbol, [x, y, z] in bohr) of inputs/<name>.xyz, converted as dfmp2's XYZ reader does."""
    with open(os.path.join(SOURCE_DIR, "inputs", name + ".xyz")) as f:
        lines = f.read().splitlines()
    return [(a[0], [float(x) / BOHR_IN_ANGSTROM for x in a[1:4]])
            for a in (line.split() for line in lines[2:2 + int(lines[0])])]


def molecule(name, basis="cc-pvdz", spin=0, cart=False, atoms=None):
    """The molecule of inputs/<name>.xyz (or `atoms`, in bohr) in dfmp2's basis file `basis`."""
    atoms = atoms or read_xyz(name)
    return gto.M(atom=atoms, unit="Bohr", basis=gbs(basis, [a[0] for a in atoms]), spin=spin, cart=cart, verbose=0)


def symbols(mol):
    return [mol.atom_pure_symbol(a) for a in range(mol.natm)]


def ri(mol, name="cc-pvdz-ri"):
    """dfmp2's RI file as the bridge's auxbasis (PySCF picks none by name for a basis given as data)."""
    return gbs(name, symbols(mol))


def df_scf(mol, jk_basis="cc-pvdz-jkfit"):
    """DF-RHF (DF-UHF for a spin) with dfmp2's JK file, converged as tightly as the CLI tests'."""
    mf = (scf.UHF(mol) if mol.spin else scf.RHF(mol)).density_fit(auxbasis=gbs(jk_basis, symbols(mol)))
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    mf.kernel()
    assert mf.converged
    return mf
