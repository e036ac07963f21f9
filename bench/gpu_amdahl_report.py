#!/usr/bin/env python3
"""The Amdahl table and plot of whole runs whose energy step ran on the CPU threads and on the GPU
(the JSON list scripts/gpu-check/amdahl_runs.py wrote on the GPU machine).

    /usr/bin/python3 bench/gpu_amdahl_report.py results/gpu/amdahl_h200.json

Writes <name>.md (each stage, its floor, the energy step on both devices, the whole run on both,
the bound the CPU stages set) and <name>.png (stacked stage times, CPU run beside GPU run).
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAGES = ("setup", "integrals", "scf", "df_transform")


def rows(results):
    for r in results:
        by_device = {run["device"]: run for run in r["runs"]}
        before = sum(r["stages"][s] for s in STAGES)
        cpu, gpu = by_device["cpu"], by_device["gpu"]
        yield r, before, cpu, gpu


def table(results, gpu_name):
    lines = [f"Energy step on the CPU threads ({results[0]['threads']}, OpenBLAS {results[0]['blas_kernels']}) and on "
             f"the GPU ({gpu_name}); the stages before it on the CPU threads in both, run once (dfmp2_amdahl "
             "--devices cpu,gpu, backend auto, fp64, cc-pVDZ). Seconds; floors in brackets (each stage's "
             "work at the GEMM rate probed at start-up, plus libint2's time; the GPU's at cuBLAS's probed rate).",
             "",
             "| molecule | nbf | integrals | SCF | DF transform | energy CPU | energy GPU | energy × | whole CPU | "
             "whole GPU | whole × | bound (energy → 0) | ΔE_corr / Eh |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r, before, cpu, gpu in rows(results):
        f = r["floors"]
        total_cpu, total_gpu = before + cpu["energy_seconds"], before + gpu["energy_seconds"]
        lines.append(
            f"| {r['molecule']} | {r['nbf']} | {r['stages']['integrals']:.1f} ({f['integrals']:.1f}) | "
            f"{r['stages']['scf']:.1f} ({f['scf']:.1f}) | {r['stages']['df_transform']:.1f} ({f['df_transform']:.1f}) | "
            f"{cpu['energy_seconds']:.2f} ({cpu['energy_floor_seconds']:.2f}) | "
            f"{gpu['energy_seconds']:.2f} ({gpu['energy_floor_seconds']:.2f}) | "
            f"{cpu['energy_seconds'] / gpu['energy_seconds']:.1f} | {total_cpu:.1f} | {total_gpu:.1f} | "
            f"{total_cpu / total_gpu:.2f} | {total_cpu / before:.2f} | {abs(cpu['e_corr'] - gpu['e_corr']):.1e} |")
    return "\n".join(lines) + "\n"


def plot(results, path, gpu_name):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    labels, x = [], 0
    colors = {"integrals": "#8da0cb", "scf": "#66c2a5", "df_transform": "#a6d854", "energy": "#fc8d62"}
    for r, before, cpu, gpu in rows(results):
        for device, run in (("CPU", cpu), ("GPU", gpu)):
            bottom = r["stages"]["setup"]
            for stage in ("integrals", "scf", "df_transform"):
                ax.bar(x, r["stages"][stage], bottom=bottom, color=colors[stage], label=stage if x == 0 else None)
                bottom += r["stages"][stage]
            ax.bar(x, run["energy_seconds"], bottom=bottom, color=colors["energy"], label="energy" if x == 0 else None)
            labels.append(f"{r['molecule']}\n{device}")
            x += 1
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("seconds")
    ax.set_title(f"Whole runs, energy step on the CPU threads or on the {gpu_name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    path = Path(sys.argv[1])
    results = sorted(json.loads(path.read_text()), key=lambda r: r["nbf"])
    gpu_name = next(run["gpu"] for run in results[0]["runs"] if run["device"] == "gpu")
    path.with_suffix(".md").write_text(f"# Amdahl: the energy step on the GPU ({gpu_name})\n\n" + table(results, gpu_name))
    plot(results, path.with_suffix(".png"), gpu_name)


if __name__ == "__main__":
    main()
