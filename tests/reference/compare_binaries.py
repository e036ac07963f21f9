#!/usr/bin/python3
"""Runs two dfmp2 binaries on every case of psi4_energies.json and reports the largest energy
differences between them (Eh): the check that a change left the energies where they were.

    /usr/bin/python3 tests/reference/compare_binaries.py OLD_DFMP2 NEW_DFMP2 [--only NAME ...]
        [--args "--d-convergence 1e-10"] [--new-args "--fp32-until 0"]

Both binaries run with the case's settings (basis sets, SCF type, frozen core, charge) and the
default backend and precision, plus --args (both) and --new-args (the new one only). Exit
status 1 when any difference exceeds --tolerance (1e-10 Eh).
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
KEYS = ["e_scf", "e_ss", "e_os", "e_corr", "e_total"]


def run(binary, case, out, extra):
    cmd = [binary, str(REPO / case["xyz"]), "--basis", case["basis"], "--df-basis", case["df_basis"],
           "--charge", str(case["charge"]), "--scf", "df" if case["scf_type"] == "df" else "exact",
           "--quiet", "--json", out]
    if case["scf_type"] == "df":
        cmd += ["--jk-basis", case["jk_basis"]]
    if case["freeze_core"]:
        cmd.append("--frozen-core")
    cmd += extra.split()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(Path(out).read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--tolerance", type=float, default=1e-10)
    parser.add_argument("--args", default="", help="extra arguments for both binaries")
    parser.add_argument("--new-args", default="", help="extra arguments for the new binary")
    args = parser.parse_args()
    cases = json.loads((REPO / "tests/reference/psi4_energies.json").read_text())
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            if args.only and case["name"] not in args.only:
                continue
            old = run(args.old, case, f"{tmp}/old.json", args.args)
            new = run(args.new, case, f"{tmp}/new.json", args.args + " " + args.new_args)
            diffs = {k: new[k] - old[k] for k in KEYS}
            largest = max(abs(d) for d in diffs.values())
            worst = max(worst, largest)
            print(f"{case['name']:40s} " + " ".join(f"{k} {d:+.1e}" for k, d in diffs.items())
                  + f"  iterations {old.get('scf_iterations')} → {new.get('scf_iterations')}", flush=True)
    print(f"largest |difference| {worst:.2e} Eh (tolerance {args.tolerance:.0e})")
    return 1 if worst > args.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
