"""DF-MP2 energies and gradients of a converged PySCF SCF, computed by dfmp2:

    from pyscf import gto, scf
    from dfmp2.pyscf import DFMP2
    mf = scf.RHF(gto.M(atom="O 0 0 0.12; H 0 0.76 -0.47; H 0 -0.76 -0.47", basis="cc-pvdz")).density_fit().run()
    e_corr = DFMP2(mf).kernel()

The molecule, PySCF's own orbital and auxiliary basis sets (written as .gbs files) and the SCF's
orbitals go to the dfmp2 executable through a temporary directory that is always removed; the
SCF is not run again. dfmp2's error line becomes a DFMP2Error. Works for RHF and UHF objects,
density-fitted or not; gradients (``nuc_grad_method()``, also as a scanner for
``pyscf.geomopt.geometric_solver.optimize``) for density-fitted ones."""
import json
import os
import subprocess
import tempfile

import h5py
import numpy as np
from pyscf import df, dft, gto, lib, scf
from pyscf.data import elements
from pyscf.grad.rhf import GradientsBase

from .executable import find_executable

__all__ = ["DFMP2", "DFMP2Error", "Gradients"]

_SHELL_LETTERS = "SPDFGHIK"


class DFMP2Error(RuntimeError):
    """A run dfmp2 refused or could not finish: the message is dfmp2's error line."""


def _double_factorial(n):
    return 1 if n <= 0 else n * _double_factorial(n - 2)


def _cartesian_norms(l):
    """The squared norm of each Cartesian function of angular momentum l in libint2's convention
    (every component normalised like x^l), in libint2's (and PySCF's) order xx, xy, xz, yy, …"""
    norms = []
    for a in range(l, -1, -1):
        for b in range(l - a, -1, -1):
            c = l - a - b
            norms.append(_double_factorial(2 * a - 1) * _double_factorial(2 * b - 1) * _double_factorial(2 * c - 1)
                         / _double_factorial(2 * l - 1))
    return norms


def _libint2_scaling(mol):
    """λ per AO with PySCF's AO = λ × libint2's (same order: PySCF's shells are written in its
    order, p as x y z, spherical m = −l … l, Cartesian alphabetical): C_libint2 = λ C_PySCF.
    Spherical functions are normalised in both (λ = 1); PySCF's Cartesian ones are measured
    against libint2's x^l convention. dfmp2 checks the result orthonormal in its own overlap."""
    expected = []
    for shell in range(mol.nbas):
        l = mol.bas_angular(shell)
        norms = _cartesian_norms(l) if mol.cart else [1.0] * (2 * l + 1)
        expected.extend(norms * mol.bas_nctr(shell))
    diagonal = mol.intor_symmetric("int1e_ovlp").diagonal()
    return np.sqrt(diagonal / np.array(expected))


def _element(mol, atom):
    """The atom's element symbol, also for a ghost atom ("GHOST-O", "X-O": O)."""
    return elements._std_symbol_without_ghost(mol.atom_symbol(atom))


def _shells_of_atom(mol, atom):
    """The atom's shells as (l, exponents, coefficients of normalised primitives), one per
    contraction (a general contraction becomes shells that share exponents, in PySCF's AO order)."""
    shells = []
    for shell in mol.atom_shell_ids(atom):
        l, exponents = mol.bas_angular(shell), mol.bas_exp(shell)
        for column in mol.bas_ctr_coeff(shell).T:
            shells.append((l, tuple(map(float, exponents)), tuple(map(float, column))))
    return shells


def _gbs_text(mol, name):
    """The basis set of `mol` (an orbital or auxiliary Mole) as a .gbs file in Psi4's G94 dialect.
    Every atom of an element must carry the same shells: a .gbs file has one set per element."""
    elements = {}
    for atom in range(mol.natm):
        element = _element(mol, atom)
        shells = _shells_of_atom(mol, atom)
        if elements.setdefault(element, shells) != shells:
            raise DFMP2Error(f"dfmp2 takes one {name} basis per element, but the {element} atoms differ in theirs")
    lines = ["cartesian" if mol.cart else "spherical", "****"]
    for element, shells in elements.items():
        lines.append(f"{element} 0")
        for l, exponents, coefficients in shells:
            lines.append(f"{_SHELL_LETTERS[l]} {len(exponents)} 1.00")
            lines += [f"{e!r} {c!r}" for e, c in zip(exponents, coefficients)]
        lines.append("****")
    return "\n".join(lines) + "\n"


def _spin_sets(mf):
    """[(C, ε, nocc)] of the SCF: one set for RHF, α and β for UHF. Refuses what dfmp2 cannot take."""
    if isinstance(mf, dft.rks.KohnShamDFT):
        raise DFMP2Error("dfmp2 computes MP2 from Hartree-Fock orbitals, not Kohn-Sham ones")
    if isinstance(mf, scf.uhf.UHF):
        return [(mf.mo_coeff[s], mf.mo_energy[s], _occupied(mf.mo_occ[s], 1.0)) for s in (0, 1)]
    if isinstance(mf, scf.rohf.ROHF) or not isinstance(mf, scf.hf.RHF):
        raise DFMP2Error(f"dfmp2 takes RHF or UHF objects, not {type(mf).__name__}")
    return [(mf.mo_coeff, mf.mo_energy, _occupied(mf.mo_occ, 2.0))]


def _occupied(mo_occ, full):
    """How many orbitals are occupied, when they are the lowest ones and fully occupied."""
    nocc = int(np.count_nonzero(mo_occ))
    if not (np.all(mo_occ[:nocc] == full) and np.all(mo_occ[nocc:] == 0)):
        raise DFMP2Error(f"dfmp2 needs the lowest orbitals occupied by {full:g} electrons each and the rest empty "
                         f"(aufbau, integer occupations); mo_occ is {mo_occ.tolist()}")
    return nocc


def _frozen_count(frozen, nocc_min):
    """PySCF's `frozen` (None, an int, a list of orbitals, or for UHF a list per spin) as the number
    of lowest orbitals frozen in each spin, which is what dfmp2 freezes."""
    if frozen is None:
        return 0
    if isinstance(frozen, (int, np.integer)):
        count = int(frozen)
    else:
        lists = [list(f) for f in frozen] if len(frozen) and not np.isscalar(frozen[0]) else [list(frozen)]
        count = len(lists[0])
        if any(sorted(int(i) for i in f) != list(range(count)) for f in lists):
            raise DFMP2Error(f"dfmp2 freezes the lowest orbitals only, the same number of each spin: frozen={frozen!r}")
    if not 0 <= count < nocc_min:
        raise DFMP2Error(f"frozen={frozen!r} must leave an active occupied orbital of each spin (at most {nocc_min - 1})")
    return count


def _jk_auxmol(mf):
    """The JK fitting set the DF-SCF used: the gradient's Z-vector equations take it."""
    if getattr(mf, "with_df", None) is None:
        raise DFMP2Error("the DF-MP2 gradient needs a density-fitted SCF (mf.density_fit()): its Z-vector "
                         "equations take the SCF's JK fitting set")
    return df.addons.make_auxmol(mf.mol, mf.with_df.auxbasis)


def _write_input(path, mol, spin_sets, scaling, e_scf=None):
    """dfmp2's HDF5 input: the molecule (bohr) and the SCF's orbitals in libint2's AO convention;
    with e_scf (PySCF's E_SCF) dfmp2 builds no Fock matrix for its own."""
    if mol.has_ecp():
        raise DFMP2Error("dfmp2 has no effective core potentials: the molecule's basis uses one")
    numbers = np.array([elements.charge(_element(mol, a)) for a in range(mol.natm)], dtype="i4")
    ghosts = mol.atom_charges() == 0  # their element's functions, no charge, no electrons
    if np.any((mol.atom_charges() != numbers) & ~ghosts):
        raise DFMP2Error("dfmp2 takes nuclear charges of the elements (or 0 for ghost atoms) only")
    with h5py.File(path, "w") as f:
        molecule = f.create_group("molecule")
        molecule["atomic_numbers"] = numbers
        molecule["ghost"] = ghosts.astype("i4")
        molecule["coordinates"] = mol.atom_coords(unit="Bohr")
        molecule.attrs["charge"] = np.int32(mol.charge)
        molecule.attrs["multiplicity"] = np.int32(mol.spin + 1)
        orbitals = f.create_group("scf")
        for (C, eps, nocc), suffix in zip(spin_sets, ("", "_beta")):
            orbitals["mo_coefficients" + suffix] = np.ascontiguousarray(C * scaling[:, None])
            orbitals["mo_energies" + suffix] = np.asarray(eps, dtype=float)
            orbitals.attrs["nocc" + suffix] = np.int32(nocc)
        if e_scf is not None:
            orbitals.attrs["e_scf"] = float(e_scf)


def _error_line(stderr, returncode):
    lines = [line for line in stderr.splitlines() if line.startswith("dfmp2: error:")]
    return lines[-1] if lines else f"dfmp2 stopped (exit status {returncode}): {stderr.strip()[-500:]}"


def run_dfmp2(mf, auxmol, frozen=None, gradient=False):
    """Runs dfmp2 on the converged SCF `mf` with the MP2 fitting set of `auxmol`; returns its JSON
    results (energies; `gradient` with gradient=True). Raises DFMP2Error with dfmp2's message."""
    mol = mf.mol
    spin_sets = _spin_sets(mf)
    nfrozen = _frozen_count(frozen, min(nocc for _, _, nocc in spin_sets))
    with tempfile.TemporaryDirectory(prefix="dfmp2-pyscf-") as tmp:
        path = {k: os.path.join(tmp, k) for k in ("input.h5", "basis.gbs", "ri.gbs", "jk.gbs", "out.json")}
        # An energy run takes PySCF's E_SCF; a gradient run builds dfmp2's Fock operator in the JK set.
        _write_input(path["input.h5"], mol, spin_sets, _libint2_scaling(mol), None if gradient else mf.e_tot)
        sets = [("basis.gbs", mol, "orbital"), ("ri.gbs", auxmol, "auxiliary")]
        if gradient:
            sets.append(("jk.gbs", _jk_auxmol(mf), "JK fitting"))
        for key, basis_mol, name in sets:
            with open(path[key], "w") as f:
                f.write(_gbs_text(basis_mol, name))
        command = [find_executable(), path["input.h5"], "--basis", path["basis.gbs"], "--df-basis", path["ri.gbs"],
                   "--reference", "uhf" if len(spin_sets) == 2 else "rhf", "--frozen-orbitals", str(nfrozen),
                   "--threads", str(lib.num_threads()), "--memory", str(int(mf.max_memory * 1e6)),
                   "--scratch", tmp, "--quiet", "--json", path["out.json"]]
        if gradient:
            command += ["--jk-basis", path["jk.gbs"], "--gradient"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise DFMP2Error(_error_line(done.stderr, done.returncode))
        with open(path["out.json"]) as f:
            return json.load(f)


class DFMP2(lib.StreamObject):
    """DF-MP2 of a converged PySCF RHF or UHF object (density-fitted or not), computed by dfmp2.

    ``auxbasis``: the MP2 fitting set, anything PySCF's ``df.make_auxmol`` takes; None picks
    PySCF's MP2 fitting set for the basis, ``df.make_auxbasis(mol, mp2fit=True)`` (PySCF's own
    DFMP2 does so for an SCF without density fitting; for a DF-SCF it reuses the JK set).
    ``frozen``: as PySCF's, an int or a list of the lowest orbitals. The memory budget is
    ``mf.max_memory`` (MB, 10^6 bytes, as PySCF counts), the threads ``pyscf.lib.num_threads()``."""

    def __init__(self, mf, auxbasis=None, frozen=None):
        self._scf = mf
        self.mol = mf.mol
        self.verbose, self.stdout = mf.verbose, mf.stdout
        self.max_memory = mf.max_memory
        self.auxbasis = auxbasis
        self.frozen = frozen
        self.e_corr = self.e_corr_os = self.e_corr_ss = None
        self.results = None  # dfmp2's JSON results of the last run (timings, memory, sizes)

    @property
    def e_tot(self):
        return self._scf.e_tot + self.e_corr

    @property
    def converged(self):
        return self._scf.converged

    def auxmol(self):
        auxbasis = self.auxbasis if self.auxbasis is not None else df.make_auxbasis(self.mol, mp2fit=True)
        return df.addons.make_auxmol(self.mol, auxbasis)

    def _run(self, gradient=False):
        result = self.results = run_dfmp2(self._scf, self.auxmol(), self.frozen, gradient)
        self.e_corr_os, self.e_corr_ss, self.e_corr = result["e_os"], result["e_ss"], result["e_corr"]
        return result

    def kernel(self):
        """E_corr (also sets e_corr, e_corr_os, e_corr_ss; e_tot is mf.e_tot + e_corr)."""
        self._run()
        lib.logger.note(self, "E(dfmp2 DF-MP2) = %.15g  E_corr = %.15g", self.e_tot, self.e_corr)
        return self.e_corr

    run = kernel

    def nuc_grad_method(self):
        return Gradients(self)

    Gradients = nuc_grad_method


class Gradients(GradientsBase):
    """The DF-MP2 gradient (Eh/bohr, natm × 3) from dfmp2's --gradient, for a density-fitted SCF:
    dfmp2's Z-vector equations take the same JK fitting set, mf.with_df's, and check that the
    orbitals are its SCF solution."""

    def kernel(self):
        result = self.base._run(gradient=True)
        self.de = np.array(result["gradient"])
        if self.atmlst is not None:
            self.de = self.de[self.atmlst]
        return self.de

    grad = kernel

    def as_scanner(self):
        return GradScanner(self)


class GradScanner(Gradients, lib.GradScanner):
    """``scanner(mol)`` → (E_tot, gradient) at mol's geometry: the SCF scanner (started from its
    last density) then one dfmp2 gradient run. What PySCF's geomeTRIC driver calls."""

    def __init__(self, gradients):
        self.__dict__.update(gradients.__dict__)
        self._scf_scanner = gradients.base._scf.as_scanner()

    def __call__(self, mol_or_geom, **kwargs):
        mol = mol_or_geom if isinstance(mol_or_geom, gto.MoleBase) else self.mol.set_geom_(mol_or_geom, inplace=False)
        self._scf_scanner(mol)
        self.mol = mol
        self.base = DFMP2(self._scf_scanner, self.base.auxbasis, self.base.frozen)
        gradient = self.kernel()
        return self.base.e_tot, gradient
