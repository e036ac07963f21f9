#!/usr/bin/python3
"""Counterpoise-corrected DF-MP2 interaction energies of S22 dimers from Psi4 1.3 (Debian package
`psi4`), for dfmp2's `--counterpoise` tests.

    /usr/bin/python3 tests/reference/psi4_counterpoise_reference.py [--only NAME ...] [--threads 2]

For each dimer five DF-MP2 runs, each in its own clean Psi4: the dimer; monomer A with B's atoms
as ghosts (`@X`: basis functions, no charge, no electrons) and B with A's as ghosts, i.e. each
monomer in the dimer basis; and A and B alone in their own basis. From them the interaction
energies (Eh): counterpoise-corrected `scf_cp`, `mp2_cp`, `scs_mp2_cp` (dimer minus the monomers
in the dimer basis) and uncorrected `scf`, `mp2`, `scs_mp2` (minus the monomers alone). As a
cross-check, Psi4's own n-body driver on the same dimer (`energy('mp2', bsse_type=['cp',
'nocp'])`, fragments split after monomer A): `nbody_mp2_cp`, `nbody_mp2_nocp`.

Writes tests/reference/psi4_counterpoise_energies.json and, per run, Psi4's output
tests/reference/outputs/<name>-<fragment>.out (kept when < 200 kB). Settings as in
psi4_reference.py: symmetry c1, no_reorient, no_com, units angstrom, scf_type df, mp2_type df,
aux sets explicit, e_convergence 1e-10, d_convergence 1e-10, 2 threads.
"""
import os
import time

import psi4_common as common
from psi4_common import OUTPUTS, REPO, psi4, read_xyz, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_counterpoise_energies.json")
FRAGMENTS = ("dimer", "a_in_dimer_basis", "b_in_dimer_basis", "a", "b")


def case(name, xyz, natom_a, basis, freeze_core):
    return {"name": name, "xyz": f"inputs/s22/{xyz}.xyz", "natom_a": natom_a, "charge": 0, "basis": basis,
            "df_basis": f"{basis}-ri", "jk_basis": f"{basis}-jkfit", "freeze_core": freeze_core}


def cases():
    return [
        case("s22-ammonia-dimer-cc-pvdz-df-ae", "ammonia-dimer", 4, "cc-pvdz", False),
        case("s22-water-dimer-aug-cc-pvdz-df-fc", "water-dimer", 3, "aug-cc-pvdz", True),
    ]


def fragment_atoms(lines, natom_a, fragment):
    """The atom lines of one run: every atom real (dimer), the other monomer's as ghosts, or only
    the monomer's."""
    a, b = lines[:natom_a], lines[natom_a:]
    ghost = ["@" + line.lstrip() for line in lines]
    return {"dimer": lines, "a_in_dimer_basis": a + ghost[natom_a:], "b_in_dimer_basis": ghost[:natom_a] + b,
            "a": a, "b": b}[fragment]


def set_options(c):
    psi4.set_options({"basis": c["basis"], "df_basis_scf": c["jk_basis"], "df_basis_mp2": c["df_basis"],
                      "scf_type": "df", "mp2_type": "df", "freeze_core": c["freeze_core"],
                      "e_convergence": 1e-10, "d_convergence": 1e-10})


def run_fragment(c, fragment, threads):
    out = os.path.join(OUTPUTS, f"{c['name']}-{fragment}.out")
    lines = read_xyz(c["xyz"]).splitlines()
    mol = common.start(c, out, threads, atoms="\n".join(fragment_atoms(lines, c["natom_a"], fragment)))
    set_options(c)
    _, wfn = psi4.energy("mp2", molecule=mol, return_wfn=True)
    record = dict(nbf=wfn.basisset().nbf(), nfrozen=int(sum(wfn.frzcpi().to_tuple())), nalpha=wfn.nalpha(),
                  e_nuc=mol.nuclear_repulsion_energy(), e_scf=variable("SCF TOTAL ENERGY"),
                  e_ss=variable("MP2 SAME-SPIN CORRELATION ENERGY"),
                  e_os=variable("MP2 OPPOSITE-SPIN CORRELATION ENERGY"),
                  e_corr=variable("MP2 CORRELATION ENERGY"), e_scs_corr=variable("SCS-MP2 CORRELATION ENERGY"),
                  e_total=variable("MP2 TOTAL ENERGY"))
    psi4.core.close_outfile()
    if os.path.getsize(out) > 200_000:
        os.remove(out)
    return record


def nbody(c, threads):
    """Psi4's n-body driver on the dimer split after monomer A: MP2 interaction energies, CP and not."""
    out = os.path.join(OUTPUTS, f"{c['name']}-nbody.out")
    lines = read_xyz(c["xyz"]).splitlines()
    atoms = "\n".join(lines[:c["natom_a"]] + ["--", "0 1"] + lines[c["natom_a"]:])
    mol = common.start(c, out, threads, atoms=atoms)
    set_options(c)
    psi4.energy("mp2", molecule=mol, bsse_type=["cp", "nocp"])
    result = {"nbody_mp2_cp": variable("CP-CORRECTED 2-BODY INTERACTION ENERGY"),
              "nbody_mp2_nocp": variable("NOCP-CORRECTED 2-BODY INTERACTION ENERGY")}
    psi4.core.close_outfile()
    if os.path.getsize(out) > 200_000:
        os.remove(out)
    return result


def interaction(runs):
    def delta(key, a, b):
        return runs["dimer"][key] - runs[a][key] - runs[b][key]

    def scs(run):
        return run["e_scf"] + run["e_scs_corr"]

    return {"scf_cp": delta("e_scf", "a_in_dimer_basis", "b_in_dimer_basis"),
            "mp2_cp": delta("e_total", "a_in_dimer_basis", "b_in_dimer_basis"),
            "scs_mp2_cp": scs(runs["dimer"]) - scs(runs["a_in_dimer_basis"]) - scs(runs["b_in_dimer_basis"]),
            "scf": delta("e_scf", "a", "b"), "mp2": delta("e_total", "a", "b"),
            "scs_mp2": scs(runs["dimer"]) - scs(runs["a"]) - scs(runs["b"])}


def run(c, threads):
    start = time.time()
    runs = {fragment: run_fragment(c, fragment, threads) for fragment in FRAGMENTS}
    wall = time.time() - start
    record = dict(c, runs=runs, interaction_energy=interaction(runs), psi4_wall_seconds=wall)
    record.update(nbody(c, threads))
    record.update(psi4_version=psi4.__version__, psi4_threads=threads)
    return record


if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
