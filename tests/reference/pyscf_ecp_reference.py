#!/usr/bin/env python3
"""Reference energies from PySCF 2.14 for the molecules of psi4_ecp_reference.py, with the very
basis data dfmp2 ships (basis/*.gbs, read here), for dfmp2's tests.

    python3 -m venv /tmp/pyscf-venv && /tmp/pyscf-venv/bin/pip install pyscf==2.14.0
    /tmp/pyscf-venv/bin/python tests/reference/pyscf_ecp_reference.py

Writes tests/reference/pyscf_ecp_energies.json: per case of psi4_ecp_energies.json (same name,
molecule, sets, charge, multiplicity, frozen core) PySCF's DF-RHF/DF-UHF (or exact RHF for pk)
and DF-MP2 energies; and tests/reference/pyscf_ecp_gradients.json: the DF-RHF gradient (the
auxiliary set's response included, ECP derivatives PySCF's own) of HI tilted off the axes; and
tests/reference/pyscf_ecp_matrices.json: PySCF's ECP matrix ⟨μ|U|ν⟩ (ECPscalar) and overlap of
tilted HI and of AuH (def2-SVP), element by element in PySCF's function order (the same as
libint2's for these sets: p as x, y, z, higher l as m = −l…l). Geometry in bohr with Psi4's (CODATA 2014) Å→bohr factor, so that the
nuclear repulsion is the same. PySCF computes its ECP integrals itself (libcgto), independently
of libecpint (dfmp2) and of Psi4 1.3.2's own ECP code.
"""
import json
import os
import re

from pyscf import gto, mp, scf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOHR_PER_ANGSTROM = 1.0 / 0.52917721067
LETTERS = "spdfghik"


def read_gbs(path, symbols):
    """PySCF basis and ECP dictionaries of `symbols` from a Psi4 .gbs file (G94 dialect)."""
    # Psi4's def2-svp-ri has a lone "*" after "Sr 0": skipped, as both readers do.
    lines = [l.strip() for l in open(path) if l.strip() and not l.strip().startswith("!") and l.strip() != "*"]
    basis, ecp, i = {}, {}, 1  # line 0: spherical / cartesian
    while i < len(lines):
        words = lines[i].split()
        header = re.match(r"^([A-Za-z]+)-ECP$", words[0])
        if header:
            symbol, lmax, ncore = header.group(1).capitalize(), int(words[1]), int(words[2])
            i += 1
            channels = []
            for c in range(lmax + 1):  # the local channel (l = lmax) first: PySCF's l = -1
                l = -1 if c == 0 else LETTERS.index(lines[i].split()[0][0].lower())
                n = int(lines[i + 1])
                by_power = [[] for _ in range(5)]
                for term in lines[i + 2:i + 2 + n]:
                    power, exponent, coefficient = term.split()
                    by_power[int(power)].append([float(exponent), float(coefficient)])
                channels.append([l, by_power])
                i += 2 + n
            if symbol in symbols:
                ecp[symbol] = [ncore, channels]
        elif len(words) == 2 and words[1] == "0":
            symbol = words[0].capitalize()
            i += 1
            if lines[i].upper().startswith(symbol.upper() + "-ECP"):
                continue  # the ECP section names the element before its potential
            shells = []
            while i < len(lines) and not lines[i].startswith("****"):
                kind, n = lines[i].split()[0], int(lines[i].split()[1])
                primitives = [[float(x.replace("D", "E")) for x in p.split()] for p in lines[i + 1:i + 1 + n]]
                shells += [[LETTERS.index(letter.lower())] + [[p[0], p[1 + k]] for p in primitives]
                           for k, letter in enumerate(kind)]
                i += 1 + n
            if symbol in symbols:
                basis[symbol] = shells
        else:
            i += 1
    return basis, ecp


def molecule(c):
    with open(os.path.join(REPO, c["xyz"])) as f:
        rows = [l.split() for l in f.read().splitlines()[2:] if l.strip()]
    symbols = {r[0].capitalize() for r in rows}
    def sets(name):
        return read_gbs(os.path.join(REPO, "basis", name + ".gbs"), symbols)
    basis, ecp = sets(c["basis"])
    mol = gto.M(atom=[(r[0], [float(x) * BOHR_PER_ANGSTROM for x in r[1:4]]) for r in rows], unit="Bohr",
                basis=basis, ecp=ecp, charge=c["charge"], spin=c.get("multiplicity", 1) - 1, verbose=0)
    return mol, sets(c["df_basis"])[0], sets(c["jk_basis"])[0] if c["scf_type"] == "df" else None


def run(c):
    mol, ri, jk = molecule(c)
    mf = scf.UHF(mol) if "multiplicity" in c else scf.RHF(mol)
    if jk is not None:
        mf = mf.density_fit(auxbasis=jk)
    mf.conv_tol, mf.conv_tol_grad, mf.max_cycle = 1e-12, 1e-9, 200
    e_scf = mf.kernel()
    assert mf.converged, c["name"]
    frozen = c["nfrozen"] or None
    pt = mp.dfump2.DFUMP2(mf, frozen=frozen) if "multiplicity" in c else mp.dfmp2.DFMP2(mf, frozen=frozen)
    pt.with_df.auxbasis = ri
    pt.with_df.build()
    e_corr = pt.kernel()[0]
    return {"name": c["name"], "nbf": mol.nao, "nelectron": mol.nelectron, "nfrozen": c["nfrozen"],
            "e_nuc": mol.energy_nuc(), "e_scf": e_scf, "e_corr": e_corr, "e_total": e_scf + e_corr,
            "pyscf_version": __import__("pyscf").__version__}


# HI off the axes (bohr), as tests/src/test_gradient.cpp places it.
TILTED_HI = [("I", [0.1, -0.2, 0.05]), ("H", [1.3, 1.6, 2.2])]


def gradient_record():
    basis, ecp = read_gbs(os.path.join(REPO, "basis", "def2-svp.gbs"), {"H", "I"})
    jk = read_gbs(os.path.join(REPO, "basis", "def2-svp-jkfit.gbs"), {"H", "I"})[0]
    mol = gto.M(atom=TILTED_HI, unit="Bohr", basis=basis, ecp=ecp, verbose=0)
    mf = scf.RHF(mol).density_fit(auxbasis=jk)
    mf.conv_tol, mf.conv_tol_grad = 1e-12, 1e-9
    e_scf = mf.kernel()
    gradient = mf.nuc_grad_method().kernel()
    return {"name": "tilted-hydrogen-iodide-def2-svp-df-rhf-grad", "atoms": TILTED_HI, "basis": "def2-svp",
            "jk_basis": "def2-svp-jkfit", "e_scf": e_scf, "gradient": gradient.tolist(),
            "pyscf_version": __import__("pyscf").__version__}


# Gold hydride at Psi4's reference geometry, turned off the axes as HI is (bohr).
TILTED_AUH = [("Au", [0.1, -0.2, 0.05]), ("H", [1.1, 1.0, 2.0])]


def ecp_matrix_record(name, atoms):
    symbols = {a[0] for a in atoms}
    basis, ecp = read_gbs(os.path.join(REPO, "basis", "def2-svp.gbs"), symbols)
    mol = gto.M(atom=atoms, unit="Bohr", basis=basis, ecp=ecp, spin=None, verbose=0)
    return {"name": name, "atoms": atoms, "basis": "def2-svp", "nbf": mol.nao,
            "ecp": mol.intor("ECPscalar").tolist(), "overlap": mol.intor("int1e_ovlp").tolist(),
            "pyscf_version": __import__("pyscf").__version__}


if __name__ == "__main__":
    with open(os.path.join(REPO, "tests", "reference", "psi4_ecp_energies.json")) as f:
        cases = json.load(f)
    records = [run(c) for c in cases]
    with open(os.path.join(REPO, "tests", "reference", "pyscf_ecp_energies.json"), "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    with open(os.path.join(REPO, "tests", "reference", "pyscf_ecp_gradients.json"), "w") as f:
        json.dump([gradient_record()], f, indent=1)
        f.write("\n")
    with open(os.path.join(REPO, "tests", "reference", "pyscf_ecp_matrices.json"), "w") as f:
        json.dump([ecp_matrix_record("tilted-hydrogen-iodide", TILTED_HI),
                   ecp_matrix_record("tilted-gold-hydride", TILTED_AUH)], f)
        f.write("\n")
