#!/usr/bin/python3
"""Reference DF-MP2 gradients from Psi4 1.3 (Debian package `psi4`) for dfmp2's MP2 gradient.

    /usr/bin/python3 tests/reference/psi4_mp2_gradient_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_mp2_gradients.json: one record per case with the settings, Psi4's SCF
and MP2 energies, its analytic DF-MP2 nuclear gradient (`gradient('mp2')`, Eh/bohr, natom rows
of x y z, the input frame) and the relaxed DF-MP2 dipole moment (e·bohr, about the origin: OEProp
on the gradient's wavefunction, whose density is then the relaxed one, as `properties('mp2')`).
RHF only (Psi4 1.3's DF-MP2 gradient has no UHF). Settings as psi4_reference.py: symmetry c1,
no_reorient, no_com, `scf_type df` with `df_basis_scf <basis>-jkfit`, `mp2_type df` with
`df_basis_mp2 <basis>-ri`, `freeze_core` as the case says, e_convergence and d_convergence 1e-10,
and the CPHF solver converged to 1e-10 (`solver_convergence`). Each case's output goes to
tests/reference/outputs/<name>.out (kept only when < 200 kB).
"""
import os

import psi4_common as common
from psi4_common import REPO, psi4, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_mp2_gradients.json")


def case(name, xyz, basis, charge=0, freeze_core=False):
    return {"name": name, "xyz": f"inputs/{xyz}.xyz", "charge": charge, "basis": basis,
            "df_basis": f"{basis}-ri", "jk_basis": f"{basis}-jkfit", "freeze_core": freeze_core}


def cases():
    return [
        case("water-cc-pvdz-mp2-grad", "water", "cc-pvdz"),
        case("water-aug-cc-pvdz-fc-mp2-grad", "water", "aug-cc-pvdz", freeze_core=True),
        case("ammonium-cc-pvdz-mp2-grad", "ammonium", "cc-pvdz", charge=1),
        case("hydroxide-aug-cc-pvdz-mp2-grad", "hydroxide", "aug-cc-pvdz", charge=-1),
        case("formaldehyde-def2-svp-mp2-grad", "formaldehyde", "def2-svp"),
        case("hydrogen-sulfide-cc-pvdz-fc-mp2-grad", "hydrogen-sulfide", "cc-pvdz", freeze_core=True),
        case("uracil-cc-pvdz-fc-mp2-grad", "uracil", "cc-pvdz", freeze_core=True),  # 132 functions
    ]


def relaxed_dipole(wfn):
    oe = psi4.core.OEProp(wfn)
    oe.set_title("MP2")
    oe.add("DIPOLE")
    oe.compute()
    return [variable(f"MP2 DIPOLE {k}") / psi4.constants.dipmom_au2debye for k in "XYZ"]  # Psi4 1.3: Debye


def run(c, threads):
    options = {"reference": "rhf", "guess": "sad", "basis": c["basis"], "df_basis_scf": c["jk_basis"],
               "df_basis_mp2": c["df_basis"], "scf_type": "df", "mp2_type": "df", "freeze_core": c["freeze_core"],
               "e_convergence": 1e-10, "d_convergence": 1e-10, "solver_convergence": 1e-10}
    return common.gradient_record(c, threads, "mp2", options, extra=lambda wfn: {
        "nfrozen": int(sum(wfn.frzcpi().to_tuple())), "e_total": variable("MP2 TOTAL ENERGY"),
        "dipole": relaxed_dipole(wfn)})


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
