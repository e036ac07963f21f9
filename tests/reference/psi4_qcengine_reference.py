#!/usr/bin/python3
"""Psi4 1.3's energies through QCEngine's own `psi4` harness (Debian packages python3-qcengine
0.26, psi4 1.3.2), for the tests of dfmp2's QCEngine harness (tests/python).

    /usr/bin/python3 tests/reference/psi4_qcengine_reference.py [--only NAME ...] [--threads 2]

Each case is one QCSchema AtomicInput, run by `qcengine.compute(input, "psi4")`; the record keeps
the input exactly as QCEngine validated it (QCElemental rounds the geometry to 1e-8 bohr), so
that dfmp2's harness runs the very same molecule, and Psi4's return_energy and properties.
The keywords are Psi4's names, which dfmp2's QCSchema reader takes too: scf_type df, mp2_type df,
the auxiliary sets explicit, e_convergence 1e-10, d_convergence 1e-10. The molecule is fixed in
its input frame (fix_com, fix_orientation), as in the other reference scripts.
Writes tests/reference/psi4_qcengine_energies.json.
"""
import os

import psi4_common as common
from psi4_common import REPO

import qcelemental as qcel
import qcengine

OUT = os.path.join(REPO, "tests", "reference", "psi4_qcengine_energies.json")


def case(name, xyz, method, basis, charge=0, multiplicity=1):
    return {"name": name, "xyz": f"inputs/{xyz}.xyz", "method": method, "basis": basis, "charge": charge,
            "multiplicity": multiplicity}


def cases():
    return [
        case("water-mp2-cc-pvdz", "water", "mp2", "cc-pvdz"),
        case("water-hf-cc-pvdz", "water", "hf", "cc-pvdz"),
        case("hydroxyl-mp2-cc-pvdz", "open-shell/hydroxyl", "mp2", "cc-pvdz", multiplicity=2),
    ]


def atomic_input(c):
    molecule = qcel.models.Molecule.from_data(
        f"{c['charge']} {c['multiplicity']}\n{common.read_xyz(c['xyz'])}\nunits angstrom\nno_com\nno_reorient\n",
        dtype="psi4")
    keywords = {"scf_type": "df", "mp2_type": "df", "df_basis_scf": f"{c['basis']}-jkfit",
                "df_basis_mp2": f"{c['basis']}-ri", "e_convergence": 1e-10, "d_convergence": 1e-10}
    return qcel.models.AtomicInput(molecule=molecule, driver="energy",
                                   model={"method": c["method"], "basis": c["basis"]}, keywords=keywords)


def run(c, threads):
    model = atomic_input(c)
    result = qcengine.compute(model, "psi4", raise_error=True, task_config={"ncores": threads, "memory": 2})
    properties = {k: v for k, v in result.properties.dict(encoding="json").items() if v is not None}
    return dict(c, input=model.dict(encoding="json"), return_energy=result.return_result, properties=properties,
                psi4_version=result.provenance.version, qcengine_version=qcengine.__version__,
                psi4_threads=threads, psi4_wall_seconds=result.provenance.wall_time)


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
