#!/usr/bin/python3
"""Reference energies from Psi4 1.3 (Debian package `psi4`) for dfmp2's tests.

    /usr/bin/python3 tests/reference/psi4_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_energies.json: one record per case with the settings, Psi4's sizes
(nbf, naux of the RI set, frozen orbitals) and energies (full precision). dfmp2 never runs Psi4:
this script is how the numbers in the tests were made. Each case's Psi4 output goes to
tests/reference/outputs/<name>.out (kept only when < 200 kB). Psi4 settings: symmetry c1, no_reorient,
no_com (dfmp2 keeps the input frame), scf_type df (DF-JK with the jkfit set) or pk (exact),
mp2_type df, e_convergence 1e-10, d_convergence 1e-10.
"""
import os
import time

import psi4_common as common
from psi4_common import OUTPUTS, REPO, psi4, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_energies.json")


def case(name, xyz, basis, scf_type="df", freeze_core=False, charge=0, df_basis=None, jk_basis=None):
    """xyz: a name in inputs/, or a path (…/name.xyz) from the repository's root."""
    return {"name": name, "xyz": xyz if xyz.endswith(".xyz") else f"inputs/{xyz}.xyz", "charge": charge, "basis": basis,
            "df_basis": df_basis or f"{basis}-ri", "jk_basis": jk_basis or f"{basis}-jkfit",
            "scf_type": scf_type, "freeze_core": freeze_core}


def cases():
    out = []
    for mol in ("water", "ammonia", "methane"):  # the test suite's core set
        for scf in ("df", "pk"):
            for fc in (False, True):
                out.append(case(f"{mol}-cc-pvdz-{scf}-{'fc' if fc else 'ae'}", mol, "cc-pvdz", scf, fc))
    out += [
        case("water-aug-cc-pvdz-df-ae", "water", "aug-cc-pvdz"),
        case("ammonia-def2-svp-df-ae", "ammonia", "def2-svp"),
        case("water-6-31gs-df-ae", "water", "6-31g*", df_basis="cc-pvdz-ri", jk_basis="cc-pvdz-jkfit"),
        case("water-sto-3g-df-ae", "water", "sto-3g", df_basis="def2-svp-ri", jk_basis="def2-svp-jkfit"),
        # Beyond the tests' set: other elements, ions, def2 and augmented sets, frozen core.
        case("hydrogen-fluoride-aug-cc-pvdz-df-fc", "hydrogen-fluoride", "aug-cc-pvdz", freeze_core=True),
        case("hydrogen-sulfide-cc-pvdz-df-fc", "hydrogen-sulfide", "cc-pvdz", freeze_core=True),
        case("hydroxide-aug-cc-pvdz-df-ae", "hydroxide", "aug-cc-pvdz", charge=-1),
        case("ammonium-cc-pvdz-df-ae", "ammonium", "cc-pvdz", charge=1),
        case("silane-def2-tzvp-df-fc", "silane", "def2-tzvp", freeze_core=True),
        case("formaldehyde-def2-svp-df-ae", "formaldehyde", "def2-svp"),
        case("ethylene-cc-pvtz-df-fc", "ethylene", "cc-pvtz", freeze_core=True),
        case("benzene-cc-pvdz-df-ae", "benzene", "cc-pvdz"),
        case("naphthalene-dimer-cc-pvdz-df-ae", "naphthalene-dimer", "cc-pvdz"),
        # K–Kr (fourth-period cores, 3d shells): not sample inputs, so beside this script.
        case("hydrogen-bromide-cc-pvdz-df-fc", "tests/reference/molecules/hydrogen-bromide.xyz", "cc-pvdz",
             freeze_core=True),
        case("hydrogen-bromide-def2-svp-df-ae", "tests/reference/molecules/hydrogen-bromide.xyz", "def2-svp"),
        case("zinc-hydride-def2-svp-df-fc", "tests/reference/molecules/zinc-hydride.xyz", "def2-svp", freeze_core=True),
    ]
    return out




def run(c, threads):
    out = os.path.join(OUTPUTS, c["name"] + ".out")
    mol = common.start(c, out, threads)
    psi4.set_options({"basis": c["basis"], "df_basis_scf": c["jk_basis"], "df_basis_mp2": c["df_basis"],
                      "scf_type": c["scf_type"], "mp2_type": "df", "freeze_core": c["freeze_core"],
                      "e_convergence": 1e-10, "d_convergence": 1e-10})
    start = time.time()
    _, wfn = psi4.energy("mp2", molecule=mol, return_wfn=True)
    wall = time.time() - start
    # The sets exactly as Psi4 used them: DF-SCF builds the JK set with the orbital basis' puream,
    # DF-MP2 builds the RI set with the puream of the RI file's own header.
    ri = wfn.get_basisset("DF_BASIS_MP2")
    jk = wfn.get_basisset("DF_BASIS_SCF") if c["scf_type"] == "df" else None
    e_os = variable("MP2 OPPOSITE-SPIN CORRELATION ENERGY")
    e_ss = variable("MP2 SAME-SPIN CORRELATION ENERGY")
    psi4.core.close_outfile()
    if os.path.getsize(out) > 200_000:  # keep only small outputs in the repository
        os.remove(out)
    return dict(c, nbf=wfn.basisset().nbf(), naux=ri.nbf(), njk=jk.nbf() if jk else None,
                nfrozen=int(sum(wfn.frzcpi().to_tuple())),
                puream=bool(wfn.basisset().has_puream()), puream_ri=bool(ri.has_puream()),
                puream_jk=bool(jk.has_puream()) if jk else None, e_nuc=mol.nuclear_repulsion_energy(),
                e_scf=variable("SCF TOTAL ENERGY"), e_ss=e_ss, e_os=e_os,
                e_corr=variable("MP2 CORRELATION ENERGY"),
                e_scs_corr=variable("SCS-MP2 CORRELATION ENERGY"),  # = 6/5 e_os + 1/3 e_ss
                e_total=variable("MP2 TOTAL ENERGY"), psi4_version=psi4.__version__,
                psi4_threads=threads, psi4_wall_seconds=wall)



if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
