#!/usr/bin/python3
"""Reference SCF gradients from Psi4 1.3 (Debian package `psi4`) for dfmp2's gradient tests.

    /usr/bin/python3 tests/reference/psi4_gradient_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_gradients.json: one record per case with the settings, Psi4's SCF
energy and its analytic nuclear gradient (Eh/bohr, natom rows of x y z, the input frame), both in
full precision. Settings as psi4_reference.py (symmetry c1, no_reorient, no_com, e_convergence and
d_convergence 1e-10) with `gradient('scf')`; `scf_type pk` (exact integrals) or `df` (DF-JK with
the jkfit set); `reference rhf` or `uhf` (`guess sad`).
Each case's Psi4 output goes to tests/reference/outputs/<name>.out (kept only when < 200 kB).
"""
import os

import psi4_common as common
from psi4_common import REPO

OUT = os.path.join(REPO, "tests", "reference", "psi4_gradients.json")


def case(name, xyz, basis, scf_type, charge=0, multiplicity=1):
    return {"name": name, "xyz": f"inputs/{xyz}.xyz", "charge": charge, "multiplicity": multiplicity,
            "reference": "rhf" if multiplicity == 1 else "uhf", "basis": basis,
            "jk_basis": f"{basis}-jkfit" if scf_type == "df" else None, "scf_type": scf_type}


def cases():
    return [
        case("water-cc-pvdz-pk-grad", "water", "cc-pvdz", "pk"),
        case("water-6-31gs-pk-grad", "water", "6-31g*", "pk"),  # Cartesian d shells
        case("ammonium-cc-pvdz-pk-grad", "ammonium", "cc-pvdz", "pk", charge=1),
        case("hydroxyl-cc-pvdz-pk-grad", "open-shell/hydroxyl", "cc-pvdz", "pk", multiplicity=2),
        case("methyl-cc-pvdz-pk-grad", "open-shell/methyl", "cc-pvdz", "pk", multiplicity=2),
        # DF-SCF gradients, for the DF gradient's tests
        case("water-cc-pvdz-df-grad", "water", "cc-pvdz", "df"),
        case("methyl-cc-pvdz-df-grad", "open-shell/methyl", "cc-pvdz", "df", multiplicity=2),
        case("ammonium-cc-pvdz-df-grad", "ammonium", "cc-pvdz", "df", charge=1),
        case("water-aug-cc-pvdz-df-grad", "water", "aug-cc-pvdz", "df"),  # diffuse functions
    ]


def run(c, threads):
    options = {"reference": c["reference"], "guess": "sad", "basis": c["basis"], "scf_type": c["scf_type"],
               "e_convergence": 1e-10, "d_convergence": 1e-10}
    if c["jk_basis"]:
        options["df_basis_scf"] = c["jk_basis"]
    return common.gradient_record(c, threads, "scf", options, c["multiplicity"])


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
