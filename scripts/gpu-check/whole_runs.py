#!/usr/bin/env python3
"""Whole runs of dfmp2 on the GPU machine, each stage timed from the run's JSON: every molecule with
every device and thread count given, end to end (setup, integrals, SCF, DF transform and energy all
run again each time). Used for the GPU's whole-run speedup and for the CPU path's thread scaling;
with --gradient, the DF-MP2 gradient's runs (integrals, SCF, gradient and its phases), its SCF's
J/K, amplitude loop and Z-vector on the GPU with --device gpu.
Writes the runs into one JSON file (rewritten after each run: a run cut short keeps the rest) and
prints one table row per run.

    whole_runs.py DFMP2 OUT.json --devices cpu,gpu --threads 16 [--gradient] MOLECULE...
    (MOLECULE: water15, ... of inputs/scale, or a path to an .xyz file; NAME:CHARGE:MULTIPLICITY
    runs it charged or open-shell, e.g. water15:1:2 the UHF doublet cation)
"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time

STAGES = ("setup", "integrals", "scf", "scf_jk", "df_transform", "energy", "gradient", "total")
# The gradient stage's phases (parts of its time): which of them the GPU moves (ampl, zvector).
GRADIENT_PHASES = tuple("gradient_" + p for p in ("ri_b", "ampl", "ri_lag", "zvector", "jk_set", "ri_set"))


def molecule_arguments(molecule):
    """The input file and the --charge/--multiplicity a MOLECULE argument names."""
    name, *state = molecule.split(":")
    if len(state) not in (0, 2):
        raise SystemExit(f"whole_runs.py: {molecule}: NAME or NAME:CHARGE:MULTIPLICITY")
    path = name if name.endswith(".xyz") else f"inputs/scale/{name}.xyz"
    return [path] + (["--charge", state[0], "--multiplicity", state[1]] if state else [])


def run(exe, molecule, device, threads, gradient):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        started = time.monotonic()
        subprocess.run([exe] + molecule_arguments(molecule) + ["--basis", "cc-pvdz", "--device", device,
                       "--threads", str(threads), "--json", f.name, "--quiet"] + (["--gradient"] if gradient else []),
                       check=True)
        r = json.load(open(f.name))
        r["wall_seconds"] = time.monotonic() - started
        r["molecule_name"] = molecule
        return r


def jk_builds(r):
    """The SCF's first J/K build (on the GPU: with the tensor's copy) and the median of the others."""
    seconds = r.get("scf_jk_seconds", [])
    rest = f"{statistics.median(seconds[1:]):.3f}" if len(seconds) > 1 else "—"
    return (f"{seconds[0]:.3f}" if seconds else "—") + " | " + rest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("exe")
    parser.add_argument("out")
    parser.add_argument("molecules", nargs="+")
    parser.add_argument("--devices", default="cpu,gpu")
    parser.add_argument("--threads", default="16")
    parser.add_argument("--gradient", action="store_true")
    args = parser.parse_args()
    runs = []
    columns = STAGES + (GRADIENT_PHASES if args.gradient else ())
    print("| molecule | nbf | device | threads | " + " | ".join(columns) +
          " | J/K build 1 | J/K median of the rest | wall | E_corr |", flush=True)
    for molecule in args.molecules:
        for device in args.devices.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                r = run(args.exe, molecule, device, threads, args.gradient)
                runs.append(r)
                with open(args.out, "w") as f:
                    json.dump(runs, f, indent=1)
                t = r["timings"]
                print(f"| {molecule} | {r['nbf']} | {device} | {threads} | " +
                      " | ".join(f"{t.get(s, 0.0):.2f}" for s in columns) + " | " + jk_builds(r) +
                      f" | {r['wall_seconds']:.2f} | {r['e_corr']:.12f} |", flush=True)


if __name__ == "__main__":
    main()
