#!/usr/bin/python3
"""Reference energies from Psi4 1.3 (Debian package `psi4`) for molecules with effective core
potentials (def2 sets, Rb–Rn), for dfmp2's tests.

    /usr/bin/python3 tests/reference/psi4_ecp_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_ecp_energies.json: closed-shell cases as psi4_reference.py records
them, open-shell ones as psi4_uhf_reference.py does (its numpy αα/ββ split included). Psi4 reads
the same def2 files dfmp2 ships (basis/ is a copy of Psi4's, see scripts/import_basis_sets.sh).
Geometries: tests/reference/molecules/. Frozen core only where Psi4 1.3.2's count is the one
dfmp2 uses (Rb–Ba with 28- and 46-electron ECPs; for Hf–Rn Psi4 1.3.2 freezes −3 orbitals an
atom, see src/molecule/molecule.cpp).
"""
import os

import psi4_common as common
import psi4_reference
import psi4_uhf_reference
from psi4_common import REPO

OUT = os.path.join(REPO, "tests", "reference", "psi4_ecp_energies.json")


def closed(name, xyz, basis, scf_type="df", freeze_core=False, jk_basis=None):
    return psi4_reference.case(name, f"tests/reference/molecules/{xyz}.xyz", basis, scf_type, freeze_core,
                               jk_basis=jk_basis)


def open_shell(name, xyz, basis, multiplicity, charge=0, freeze_core=False):
    c = psi4_uhf_reference.case(name, xyz, basis, multiplicity, charge, freeze_core=freeze_core)
    return dict(c, xyz=f"tests/reference/molecules/{xyz}.xyz")


def cases():
    return [
        closed("hydrogen-iodide-def2-svp-df-ae", "hydrogen-iodide", "def2-svp"),
        closed("hydrogen-iodide-def2-svp-df-fc", "hydrogen-iodide", "def2-svp", freeze_core=True),
        closed("hydrogen-iodide-def2-svp-pk-ae", "hydrogen-iodide", "def2-svp", scf_type="pk"),
        open_shell("hydrogen-iodide-cation-def2-svp-df-ae", "hydrogen-iodide", "def2-svp", 2, charge=1),
        open_shell("hydrogen-iodide-cation-def2-svp-df-fc", "hydrogen-iodide", "def2-svp", 2, charge=1,
                   freeze_core=True),
        closed("silver-hydride-def2-svp-df-fc", "silver-hydride", "def2-svp", freeze_core=True),
        closed("silver-hydride-def2-tzvp-df-ae", "silver-hydride", "def2-tzvp"),
        # Psi4's def2-svp-jkfit stops at Ba: the universal set, by name (dfmp2's def2-svp-jkfit
        # holds the same Au blocks).
        closed("gold-hydride-def2-svp-df-ae", "gold-hydride", "def2-svp", jk_basis="def2-universal-jkfit"),
        closed("hydrogen-iodide-dimer-def2-svp-df-ae", "hydrogen-iodide-dimer", "def2-svp"),
    ]


# Psi4 1.3.2's file of the same set (basis/def2-universal-jkfit.gbs is a copy of it).
PSI4_FILES = {"def2-universal-jkfit": "def2-qzvpp-jkfit"}


def run(c, threads):
    psi4_case = dict(c, jk_basis=PSI4_FILES.get(c["jk_basis"], c["jk_basis"]))
    record = (psi4_uhf_reference.run if "multiplicity" in c else psi4_reference.run)(psi4_case, threads)
    return dict(record, jk_basis=c["jk_basis"])


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
