#!/usr/bin/python3
"""Check that the UHF references of psi4_uhf_reference.py sit on the intended electronic state.

    /usr/bin/python3 tests/reference/psi4_uhf_check_states.py [--only NAME ...] [--scratch DIR]

For every case of psi4_uhf_reference.py (same settings) this runs, in a scratch directory:
  1. the same c1 UHF with `stability_analysis check` (Psi4's UHF->UHF orbital Hessian): a
     negative lowest eigenvalue would mean a saddle point, not a UHF minimum;
  2. the same UHF in the molecule's own point group (no `symmetry c1`; frame unchanged), which
     prints the occupation per irrep (DOCC/SOCC), i.e. which state it is.
and prints one line per case: c1 and symmetric SCF energies, the lowest stability eigenvalue and
the occupation. Nothing in the repository is written. Used once to vet the references; see
tests/reference/README.md.
"""
import argparse
import os
import re
import sys
import tempfile

sys.path.insert(0, "/usr/lib/x86_64-linux-gnu")
import psi4  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import psi4_common as common  # noqa: E402
import psi4_uhf_reference as ref  # noqa: E402


def scf(c, out, symmetric, stability):
    mol = common.start(c, out, 2, c["multiplicity"], symmetric)
    options = {"reference": "uhf", "guess": "sad", "basis": c["basis"], "scf_type": c["scf_type"],
               "e_convergence": 1e-10, "d_convergence": 1e-10}
    if c["jk_basis"]:
        options["df_basis_scf"] = c["jk_basis"]
    if stability:
        options["stability_analysis"] = "check"
    psi4.set_options(options)
    e, wfn = psi4.energy("scf", molecule=mol, return_wfn=True)
    psi4.core.close_outfile()
    return e, wfn, mol.schoenflies_symbol()


def lowest_stability(out):
    """Lowest eigenvalue of the 'Lowest UHF->UHF stability eigenvalues' block."""
    text = open(out).read()
    m = re.search(r"Lowest UHF->UHF stability eigenvalues:(.*?)\n\s*\n", text, re.S)
    if not m:
        return None
    values = [float(v) for v in re.findall(r"[-+]?\d+\.\d+(?:[Ee][-+]?\d+)?", m.group(1))]
    return min(values) if values else None


def occupation(out):
    text = open(out).read()
    m = re.findall(r"Final Occupation by Irrep:\s*\n(.*?)\n(.*?)\n(.*?)\n", text)
    return " | ".join(" ".join(line.split()) for line in m[-1]) if m else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--scratch", default=None)
    args = parser.parse_args()
    scratch = args.scratch or tempfile.mkdtemp(prefix="uhf-states-")
    os.makedirs(scratch, exist_ok=True)
    for c in ref.cases():
        if c["freeze_core"] or (args.only and c["name"] not in args.only):
            continue  # the frozen-core cases share their SCF with the -ae ones
        out1 = os.path.join(scratch, c["name"] + "-c1-stability.out")
        e1, wfn, _ = scf(c, out1, symmetric=False, stability=True)
        s2 = ref.spin_squared(wfn)
        out2 = os.path.join(scratch, c["name"] + "-symmetric.out")
        e2, _, pg = scf(c, out2, symmetric=True, stability=False)
        print(f"{c['name']}: E(c1) {e1:.10f}  <S^2> {s2:.6f}  lowest UHF->UHF stability eigenvalue "
              f"{lowest_stability(out1)}  E({pg}) {e2:.10f} (diff {e2 - e1:+.1e})  {occupation(out2)}",
              flush=True)
    print(f"outputs in {scratch}", file=sys.stderr)


if __name__ == "__main__":
    main()
