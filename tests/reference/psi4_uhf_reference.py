#!/usr/bin/python3
"""Open-shell (UHF) reference energies from Psi4 1.3 (Debian package `psi4`) for dfmp2's tests.

    /usr/bin/python3 tests/reference/psi4_uhf_reference.py [--only NAME ...] [--threads 2]

Writes tests/reference/psi4_uhf_energies.json: one record per case with the settings, Psi4's sizes
(nbf, naux of the RI set, frozen orbitals, nalpha, nbeta), the UHF determinant's <S^2> and the
DF-UMP2 energies (full precision). Each case's Psi4 output goes to tests/reference/outputs/<name>.out
(kept only when < 200 kB). Psi4 settings as in psi4_reference.py (symmetry c1, no_reorient, no_com,
e/d_convergence 1e-10, aux sets explicit) plus reference uhf and guess sad. Geometries:
inputs/open-shell/ (see its README).

Psi4 1.3's DF-UMP2 prints and stores only the same-spin sum (alpha-alpha + beta-beta) and the
opposite-spin part. The script also recomputes the DF-UMP2 pieces with numpy from Psi4's own
orbitals, orbital energies and 3-index integrals (numpy_e_aa, numpy_e_bb, numpy_e_ab): a split
Psi4 does not report, checked against Psi4's e_ss / e_os in the same record.
"""
import os
import re
import time

import numpy as np

import psi4_common as common
from psi4_common import OUTPUTS, REPO, psi4, variable

OUT = os.path.join(REPO, "tests", "reference", "psi4_uhf_energies.json")


def case(name, xyz, basis, multiplicity, charge=0, scf_type="df", freeze_core=False):
    return {"name": name, "xyz": f"inputs/open-shell/{xyz}.xyz", "charge": charge,
            "multiplicity": multiplicity, "reference": "uhf", "guess": "sad", "basis": basis,
            "df_basis": f"{basis}-ri", "jk_basis": f"{basis}-jkfit" if scf_type == "df" else None,
            "scf_type": scf_type, "freeze_core": freeze_core}


def cases():
    return [
        case("hydroxyl-cc-pvdz-df-ae", "hydroxyl", "cc-pvdz", 2),
        case("amidogen-cc-pvdz-df-ae", "amidogen", "cc-pvdz", 2),
        case("methyl-aug-cc-pvdz-df-ae", "methyl", "aug-cc-pvdz", 2),
        case("dioxygen-cc-pvdz-df-ae", "dioxygen", "cc-pvdz", 3),
        case("methylene-def2-svp-df-ae", "methylene", "def2-svp", 3),
        case("nitric-oxide-def2-tzvp-df-ae", "nitric-oxide", "def2-tzvp", 2),
        # charged open shells
        case("water-cation-cc-pvdz-df-ae", "water-cation", "cc-pvdz", 2, charge=1),
        case("ammonia-cation-def2-svp-df-ae", "ammonia-cation", "def2-svp", 2, charge=1),
        # frozen core
        case("dioxygen-cc-pvdz-df-fc", "dioxygen", "cc-pvdz", 3, freeze_core=True),
        case("hydroxyl-cc-pvdz-df-fc", "hydroxyl", "cc-pvdz", 2, freeze_core=True),
        # exact-integral UHF (scf_type pk), DF-MP2
        case("hydroxyl-cc-pvdz-pk-ae", "hydroxyl", "cc-pvdz", 2, scf_type="pk"),
        case("dioxygen-cc-pvdz-pk-ae", "dioxygen", "cc-pvdz", 3, scf_type="pk"),
        # larger, for timing / backend tests
        case("allyl-cc-pvdz-df-ae", "allyl", "cc-pvdz", 2),
    ]




def spin_squared(wfn):
    """<S^2> of the UHF determinant: Sz(Sz+1) + nbeta - sum_ij |<i alpha|j beta>|^2 (c1: SO = AO)."""
    na, nb = wfn.nalpha(), wfn.nbeta()
    S = wfn.S().np
    overlap = wfn.Ca().np[:, :na].T @ S @ wfn.Cb().np[:, :nb]
    sz = 0.5 * (na - nb)
    return sz * (sz + 1.0) + nb - float(np.sum(overlap * overlap))


def printed(out, label):
    """Last value printed after `label` in the Psi4 output (None if absent)."""
    value = None
    with open(out) as f:
        for line in f:
            m = re.search(re.escape(label) + r"\s*([-+0-9.Ee]+)", line)
            if m:
                value = float(m.group(1))
    return value


def numpy_ump2(wfn, nfrozen):
    """DF-UMP2 pieces (alpha-alpha, beta-beta, alpha-beta) from Psi4's orbitals and integrals.
    Fitting metric inverted as Psi4's DFMP2 does (FittingMetric::form_eig_inverse(1e-10))."""
    orb = wfn.basisset()
    aux = wfn.get_basisset("DF_BASIS_MP2")
    zero = psi4.core.BasisSet.zero_ao_basis_set()
    mints = psi4.core.MintsHelper(orb)
    Qmn = np.asarray(mints.ao_eri(aux, zero, orb, orb)).reshape(aux.nbf(), orb.nbf(), orb.nbf())
    J = np.asarray(mints.ao_eri(aux, zero, aux, zero)).reshape(aux.nbf(), aux.nbf())
    w, U = np.linalg.eigh(J)
    keep = w / w.max() >= 1e-10
    Jm12 = (U[:, keep] / np.sqrt(w[keep])) @ U[:, keep].T

    def bQ(C, eps, nocc):
        Co, Cv = C[:, nfrozen:nocc], C[:, nocc:]
        B = np.einsum("PQ,Qmn,mi,na->iaP", Jm12, Qmn, Co, Cv, optimize=True)
        return B, eps[nfrozen:nocc], eps[nocc:]

    Ba, oa, va = bQ(wfn.Ca().np, wfn.epsilon_a().np, wfn.nalpha())
    Bb, ob, vb = bQ(wfn.Cb().np, wfn.epsilon_b().np, wfn.nbeta())

    def same(B, o, v):
        I = np.einsum("iaP,jbP->iajb", B, B, optimize=True)
        D = o[:, None, None, None] - v[None, :, None, None] + o[None, None, :, None] - v[None, None, None, :]
        return 0.5 * float(np.sum(I * (I - I.transpose(0, 3, 2, 1)) / D))

    I = np.einsum("iaP,jbP->iajb", Ba, Bb, optimize=True)
    D = oa[:, None, None, None] - va[None, :, None, None] + ob[None, None, :, None] - vb[None, None, None, :]
    return same(Ba, oa, va), same(Bb, ob, vb), float(np.sum(I * I / D))


def run(c, threads):
    out = os.path.join(OUTPUTS, c["name"] + ".out")
    mol = common.start(c, out, threads, c["multiplicity"])
    options = {"reference": c["reference"], "guess": c["guess"], "basis": c["basis"],
               "df_basis_mp2": c["df_basis"], "scf_type": c["scf_type"], "mp2_type": "df",
               "freeze_core": c["freeze_core"], "e_convergence": 1e-10, "d_convergence": 1e-10}
    if c["jk_basis"]:
        options["df_basis_scf"] = c["jk_basis"]
    psi4.set_options(options)
    start = time.time()
    _, wfn = psi4.energy("mp2", molecule=mol, return_wfn=True)
    wall = time.time() - start
    ri = wfn.get_basisset("DF_BASIS_MP2")
    jk = wfn.get_basisset("DF_BASIS_SCF") if c["scf_type"] == "df" else None
    nfrozen = int(sum(wfn.frzcpi().to_tuple()))
    e_ss = variable("MP2 SAME-SPIN CORRELATION ENERGY")
    e_os = variable("MP2 OPPOSITE-SPIN CORRELATION ENERGY")
    record = dict(
        c, nbf=wfn.basisset().nbf(), naux=ri.nbf(), njk=jk.nbf() if jk else None, nfrozen=nfrozen,
        nalpha=wfn.nalpha(), nbeta=wfn.nbeta(), puream=bool(wfn.basisset().has_puream()),
        puream_ri=bool(ri.has_puream()), puream_jk=bool(jk.has_puream()) if jk else None,
        e_nuc=mol.nuclear_repulsion_energy(), e_scf=variable("SCF TOTAL ENERGY"),
        e_singles=variable("MP2 SINGLES ENERGY"), e_ss=e_ss, e_os=e_os,
        e_corr=variable("MP2 CORRELATION ENERGY"),
        e_scs_corr=variable("SCS-MP2 CORRELATION ENERGY"),  # Psi4 sets it: 6/5 e_os + 1/3 e_ss
        e_total=variable("MP2 TOTAL ENERGY"),
        scf_iterations=int(variable("SCF ITERATIONS")))
    psi4.core.close_outfile()
    s = 0.5 * (c["multiplicity"] - 1)
    record.update(s2=spin_squared(wfn), s2_printed=printed(out, "@S^2 Observed:"), s2_exact=s * (s + 1.0))
    e_aa, e_bb, e_ab = numpy_ump2(wfn, nfrozen)
    record.update(numpy_e_aa=e_aa, numpy_e_bb=e_bb, numpy_e_ab=e_ab,
                  psi4_version=psi4.__version__, psi4_threads=threads, psi4_wall_seconds=wall)
    if os.path.getsize(out) > 200_000:  # keep only small outputs in the repository
        os.remove(out)
    return record



if __name__ == "__main__":
    common.main(__doc__, OUT, cases(), run)
