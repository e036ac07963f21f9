#!/usr/bin/env python3
"""Markdown tables from the device check's whole runs (scripts/gpu-check/whole_runs.py): each run's
stages (for gradient runs, the gradient's phases too), and for every molecule run on both devices
with the same threads the speedup per stage and of the whole run, with |ΔE_corr| between the
devices (and the largest |Δ| of the gradient's elements).

    bench/gpu_whole_runs_report.py OUT.md TITLE RUNS.json...
"""
import json
import os
import sys

# scf_jk: the SCF's J/K builds, part of its time (— in runs from before it was timed).
ENERGY_STAGES = ("setup", "integrals", "scf", "scf_jk", "df_transform", "energy", "total")
GRADIENT_STAGES = ("setup", "integrals", "scf", "scf_jk", "gradient") + tuple(
    "gradient_" + p for p in ("ri_b", "ampl", "ri_lag", "zvector", "jk_set", "ri_set")) + ("total",)


def is_gradient(runs):
    return any(r["timings"].get("gradient", 0.0) > 0.0 for r in runs)


def gradient_difference(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a["gradient"], b["gradient"]) for x, y in zip(row_a, row_b))


def stage_table(runs, stages):
    lines = ["| file | molecule | nbf | device | threads | " + " | ".join(stages) + " | E_corr |",
             "| --- | --- | ---: | --- | ---: |" + " ---: |" * len(stages) + " ---: |"]
    for r in runs:
        t = r["timings"]
        lines.append(f"| {r['file']} | {r['molecule_name']} | {r['nbf']} | {r['device']} | {r['threads']} | " +
                     " | ".join(f"{t[s]:.2f}" if s in t else "—" for s in stages) + f" | {r['e_corr']:.10f} |")
    return lines


def speedup_table(runs, stages):
    gradient = is_gradient(runs)
    by_key = {(r["file"], r["molecule_name"], r["threads"], r["device"]): r for r in runs}
    lines = ["| file | molecule | threads | " + " | ".join(f"{s} ×" for s in stages) + " | abs ΔE_corr (Eh) |" +
             (" max abs Δgradient (Eh/bohr) |" if gradient else ""),
             "| --- | --- | ---: |" + " ---: |" * (len(stages) + 1 + gradient)]
    for (file, molecule, threads, device), cpu in by_key.items():
        gpu = by_key.get((file, molecule, threads, "gpu"))
        if device != "cpu" or gpu is None:
            continue
        ratios = [cpu["timings"][s] / max(gpu["timings"][s], 1e-9)
                  if s in cpu["timings"] and s in gpu["timings"] else None for s in stages]
        lines.append(f"| {file} | {molecule} | {threads} | " +
                     " | ".join("—" if x is None else f"{x:.2f}" for x in ratios) +
                     f" | {abs(cpu['e_corr'] - gpu['e_corr']):.1e} |" +
                     (f" {gradient_difference(cpu, gpu):.1e} |" if gradient else ""))
    return lines


def main():
    out, title, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = [dict(r, file=os.path.basename(f)) for f in files for r in json.load(open(f))]
    gpu = next((r["gpu"] for r in runs if r.get("gpu")), {})
    stages = GRADIENT_STAGES if is_gradient(runs) else ENERGY_STAGES
    lines = [f"# {title}", "",
             f"Produced by `bench/gpu_whole_runs_report.py` from {', '.join(f'`{f}`' for f in files)} "
             f"(`scripts/gpu-check/whole_runs.py`: each run end to end, cc-pVDZ, backend auto, fp64; "
             f"GPU: {gpu.get('name', 'none')}). Seconds per stage from each run's JSON.", ""]
    lines += stage_table(runs, stages) + [""]
    speedups = speedup_table(runs, stages)
    if len(speedups) > 2:
        lines += ["CPU threads over GPU, same molecule and threads:", ""] + speedups + [""]
    open(out, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
