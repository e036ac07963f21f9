#!/usr/bin/env python3
"""Whole runs on the GPU machine: each molecule of inputs/scale (cc-pVDZ) prepared once on the CPU
threads (integrals, SCF, DF transform), then its energy step on the CPU threads and on the GPU
(dfmp2_amdahl --devices cpu,gpu, backend auto, fp64). Writes every run's JSON into one file and
prints the Amdahl table: each stage, the energy step on both, the whole run on both.

    amdahl_runs.py DFMP2_AMDAHL OUT.json MOLECULE...      (MOLECULE: water15, c20h42, ...)
"""
import json
import subprocess
import sys
import tempfile


def run(exe, molecule):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        frozen = ["--frozen-core"] if molecule.startswith("c60") else []
        subprocess.run([exe, f"inputs/scale/{molecule}.xyz", "--basis", "cc-pvdz", *frozen, "--backends", "auto",
                        "--precisions", "fp64", "--devices", "cpu,gpu", "--json", f.name, "--quiet"], check=True)
        return json.load(open(f.name))


def main():
    exe, out, molecules = sys.argv[1], sys.argv[2], sys.argv[3:]
    results = []
    print("| molecule | nbf | setup | integrals | scf | df_transform | energy CPU | energy GPU | energy × | "
          "total CPU | total GPU | total × | dE_corr |")
    for molecule in molecules:
        r = run(exe, molecule)
        results.append(r)
        with open(out, "w") as f:  # rewritten after each molecule: a run cut short keeps the rest
            json.dump(results, f, indent=1)
        before = sum(r["stages"][s] for s in ("setup", "integrals", "scf", "df_transform"))
        by_device = {run_["device"]: run_ for run_ in r["runs"]}
        cpu, gpu = by_device["cpu"], by_device["gpu"]
        total_cpu, total_gpu = before + cpu["energy_seconds"], before + gpu["energy_seconds"]
        print(f"| {molecule} | {r['nbf']} | " + " | ".join(f"{r['stages'][s]:.1f}" for s in
                                                      ("setup", "integrals", "scf", "df_transform")) +
              f" | {cpu['energy_seconds']:.2f} | {gpu['energy_seconds']:.2f} | "
              f"{cpu['energy_seconds'] / gpu['energy_seconds']:.1f} | {total_cpu:.1f} | {total_gpu:.1f} | "
              f"{total_cpu / total_gpu:.2f} | {abs(cpu['e_corr'] - gpu['e_corr']):.1e} |", flush=True)


if __name__ == "__main__":
    main()
