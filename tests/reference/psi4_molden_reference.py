#!/usr/bin/python3
"""Molden files written by Psi4 1.3 (Debian package `psi4`) and the DF-MP2 energies of the same SCF.

    /usr/bin/python3 tests/reference/psi4_molden_reference.py [--only NAME ...] [--threads 2]

For each closed-shell RHF case: DF-SCF (`energy('scf', return_wfn=True)`), Psi4's own Molden file
of those orbitals (`molden(wfn, file, dovirtual=True)`: all orbitals, occupied and virtual), then
Psi4's DF-MP2 on that very SCF (`energy('mp2', ref_wfn=wfn)`, no second SCF). A case with
`"wavefunction": "mp2"` writes the Molden file from the DF-MP2 wavefunction instead (the same
orbitals; Psi4 1.3 gives such a wavefunction no occupations and writes `Occup= 0` for every
orbital). Writes
tests/reference/molden/<name>.molden, tests/reference/molden/<name>.out (Psi4's output) and
tests/reference/psi4_molden_energies.json. Settings as in psi4_reference.py: symmetry c1,
no_reorient, no_com, units angstrom, e/d_convergence 1e-10, aux sets explicit, 2 threads.
"""
import os
import re
import time

import psi4_common as common
from psi4_common import REPO, psi4, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_molden_energies.json")
MOLDEN_DIR = os.path.join(REPO, "tests", "reference", "molden")


def case(name, xyz, basis, df_basis=None, jk_basis=None, wavefunction="scf"):
    c = {"name": name, "xyz": f"inputs/{xyz}.xyz", "charge": 0, "reference": "rhf", "basis": basis,
         "df_basis": df_basis or f"{basis}-ri", "jk_basis": jk_basis or f"{basis}-jkfit",
         "scf_type": "df", "freeze_core": False, "molden": f"tests/reference/molden/{name}.molden"}
    if wavefunction != "scf":  # the SCF cases' records predate the field
        c["wavefunction"] = wavefunction
    return c


def cases():
    return [
        case("water-cc-pvdz-df-ae", "water", "cc-pvdz"),                     # spherical d
        case("formaldehyde-cc-pvtz-df-ae", "formaldehyde", "cc-pvtz"),       # spherical d, f
        case("water-6-31gs-df-ae", "water", "6-31g*", df_basis="cc-pvdz-ri",  # Cartesian d
             jk_basis="cc-pvdz-jkfit"),
        case("water-cc-pvdz-df-ae-mp2-wavefunction", "water", "cc-pvdz", wavefunction="mp2"),  # Occup= 0
    ]




def molden_summary(path):
    """Section headers ([...] lines), the flags among them, and the orbital blocks of a Molden file."""
    with open(path) as f:
        text = f.read()
    sections = re.findall(r"^\s*(\[[^\]]+\])", text, re.M)
    flags = [s for s in sections if s.upper() in ("[5D]", "[5D7F]", "[5D10F]", "[7F]", "[9G]", "[10F]", "[6D]", "[15G]")]
    spins = re.findall(r"^\s*Spin=\s*(\S+)", text, re.M)
    return {"molden_sections": sections, "molden_flags": flags, "molden_norbitals": len(spins),
            "molden_spins": sorted(set(spins)), "molden_bytes": len(text.encode())}


def run(c, threads):
    out = os.path.join(MOLDEN_DIR, c["name"] + ".out")
    mol = common.start(c, out, threads)
    psi4.set_options({"reference": c["reference"], "basis": c["basis"], "df_basis_scf": c["jk_basis"],
                      "df_basis_mp2": c["df_basis"], "scf_type": c["scf_type"], "mp2_type": "df",
                      "freeze_core": c["freeze_core"], "e_convergence": 1e-10, "d_convergence": 1e-10})
    start = time.time()
    e_scf, wfn = psi4.energy("scf", molecule=mol, return_wfn=True)
    scf_variable = variable("SCF TOTAL ENERGY")  # energy('mp2') below clears the global variables
    molden = os.path.join(REPO, c["molden"])
    if os.path.exists(molden):
        os.remove(molden)
    from_mp2 = c.get("wavefunction") == "mp2"
    if not from_mp2:
        psi4.molden(wfn, molden, dovirtual=True)
    _, mp2 = psi4.energy("mp2", molecule=mol, ref_wfn=wfn, return_wfn=True)
    if from_mp2:
        psi4.molden(mp2, molden, dovirtual=True)
    wall = time.time() - start
    ri = mp2.get_basisset("DF_BASIS_MP2")
    jk = wfn.get_basisset("DF_BASIS_SCF")
    record = dict(
        c, nbf=wfn.basisset().nbf(), nmo=wfn.nmo(), naux=ri.nbf(), njk=jk.nbf(),
        nocc=wfn.nalpha(), nfrozen=int(sum(mp2.frzcpi().to_tuple())),
        puream=bool(wfn.basisset().has_puream()), puream_ri=bool(ri.has_puream()),
        puream_jk=bool(jk.has_puream()), e_nuc=mol.nuclear_repulsion_energy(),
        e_scf=scf_variable, e_scf_returned=e_scf,
        e_ss=variable("MP2 SAME-SPIN CORRELATION ENERGY"),
        e_os=variable("MP2 OPPOSITE-SPIN CORRELATION ENERGY"),
        e_corr=variable("MP2 CORRELATION ENERGY"), e_scs_corr=variable("SCS-MP2 CORRELATION ENERGY"),
        e_total=variable("MP2 TOTAL ENERGY"))
    psi4.core.close_outfile()
    record.update(molden_summary(molden))
    record.update(psi4_version=psi4.__version__, psi4_threads=threads, psi4_wall_seconds=wall)
    return record



if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
