#!/usr/bin/env python3
"""Set-up time before and after (issue 43): runs dfmp2_setup_time builds (e.g. one of the commit
before the change and one of after) over molecules, alternating the builds, and prints a Markdown
table of each build's best shell-pair screening and whole set-up (checks, basis sets, pairs,
memory plan) times.

Usage: bench/setup_time.py --build before=OLD/dfmp2_setup_time --build after=NEW/dfmp2_setup_time
       [--basis cc-pvdz] [--repeat 5] molecule.xyz ..."""
import argparse
import json
import subprocess


def measure(driver, xyz, basis, repeat):
    out = subprocess.run([driver, xyz, "--basis", basis, "--repeat", str(repeat)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", action="append", required=True, help="NAME=path of a dfmp2_setup_time")
    parser.add_argument("--basis", default="cc-pvdz")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("molecules", nargs="+")
    args = parser.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    names = [name for name, _ in builds]
    print("| molecule | natom | nbf | significant pairs | " +
          " | ".join(f"screening {n} / s" for n in names) + " | " +
          " | ".join(f"set-up {n} / s" for n in names) + " |")
    print("| --- " * (4 + 2 * len(names)) + "|")
    for xyz in args.molecules:
        runs = {name: measure(driver, xyz, args.basis, args.repeat) for name, driver in builds}
        first = runs[names[0]]
        if any(r["significant_pairs"] != first["significant_pairs"] for r in runs.values()):
            raise SystemExit(f"{xyz}: the builds keep different numbers of pairs")
        print(f"| {xyz.rsplit('/', 1)[-1]} | {first['natom']} | {first['nbf']} | {first['significant_pairs']} | " +
              " | ".join(f"{runs[n]['screening_seconds']:.3f}" for n in names) + " | " +
              " | ".join(f"{runs[n]['setup_seconds']:.3f}" for n in names) + " |")


if __name__ == "__main__":
    main()
