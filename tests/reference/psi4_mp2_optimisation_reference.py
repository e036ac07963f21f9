#!/usr/bin/python3
"""Reference DF-MP2 minimum geometries from Psi4 1.3 (Debian package `psi4`) and its optimiser
optking, for dfmp2's geometry optimisation check.

    /usr/bin/python3 tests/reference/psi4_mp2_optimisation_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_mp2_minima.json: one record per case with the settings, the
optimised geometry (Å, Psi4's frame), its bond lengths (Å, the pairs `bonds` names) and angles
(degrees), and the DF-MP2 energy there. Settings as psi4_mp2_gradient_reference.py (`scf_type df`
with `<basis>-jkfit`, `mp2_type df` with `<basis>-ri`, e_convergence and d_convergence 1e-10, the
CPHF solver to 1e-10), optking converged to `g_convergence gau_verytight` (max force 2e-6
Eh/bohr) from the geometry in inputs/.
"""
import os

import numpy as np

import psi4_common as common
from psi4_common import REPO, psi4, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_mp2_minima.json")
BOHR = 0.52917721067  # Å, CODATA 2014 as Psi4 1.3


def case(name, xyz, basis, bonds, angles):
    """bonds: pairs of atom indices (from 0); angles: triples (i, vertex, k)."""
    return {"name": name, "xyz": f"inputs/{xyz}.xyz", "charge": 0, "basis": basis, "df_basis": f"{basis}-ri",
            "jk_basis": f"{basis}-jkfit", "bonds": bonds, "angles": angles}


def cases():
    return [
        case("water-cc-pvdz-mp2-opt", "water", "cc-pvdz", bonds=[[0, 1], [0, 2]], angles=[[1, 0, 2]]),
        case("formaldehyde-cc-pvdz-mp2-opt", "formaldehyde", "cc-pvdz", bonds=[[0, 1], [0, 2], [0, 3]],
             angles=[[1, 0, 2], [2, 0, 3]]),
    ]


def angle(x, i, j, k):
    a, b = x[i] - x[j], x[k] - x[j]
    return float(np.degrees(np.arccos(a @ b / np.linalg.norm(a) / np.linalg.norm(b))))


def run(c, threads):
    out = os.path.join(common.OUTPUTS, c["name"] + ".out")
    mol = common.start(c, out, threads, symmetric=True)
    psi4.set_options({"reference": "rhf", "basis": c["basis"], "df_basis_scf": c["jk_basis"],
                      "df_basis_mp2": c["df_basis"], "scf_type": "df", "mp2_type": "df", "e_convergence": 1e-10,
                      "d_convergence": 1e-10, "solver_convergence": 1e-10, "g_convergence": "gau_verytight"})
    energy = psi4.optimize("mp2", molecule=mol)
    x = np.asarray(mol.geometry().np) * BOHR
    psi4.core.close_outfile()
    if os.path.getsize(out) > 200_000:
        os.remove(out)
    return dict(c, geometry=x.tolist(), bond_lengths=[float(np.linalg.norm(x[i] - x[j])) for i, j in c["bonds"]],
                bond_angles=[angle(x, *t) for t in c["angles"]], e_total=energy,
                e_scf=variable("SCF TOTAL ENERGY"), psi4_version=psi4.__version__, psi4_threads=threads)


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
