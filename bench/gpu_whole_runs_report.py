#!/usr/bin/env python3
"""Markdown tables from the device check's whole runs (scripts/gpu-check/whole_runs.py): each run's
stages, and for every molecule run on both devices with the same threads the speedup per stage and
of the whole run, with |ΔE_corr| between the devices.

    bench/gpu_whole_runs_report.py OUT.md TITLE RUNS.json...
"""
import json
import os
import sys

STAGES = ("setup", "integrals", "scf", "df_transform", "energy", "total")


def stage_table(runs):
    lines = ["| file | molecule | nbf | device | threads | " + " | ".join(STAGES) + " | E_corr |",
             "| --- | --- | ---: | --- | ---: |" + " ---: |" * len(STAGES) + " ---: |"]
    for r in runs:
        t = r["timings"]
        lines.append(f"| {r['file']} | {r['molecule_name']} | {r['nbf']} | {r['device']} | {r['threads']} | " +
                     " | ".join(f"{t.get(s, 0.0):.2f}" for s in STAGES) + f" | {r['e_corr']:.10f} |")
    return lines


def speedup_table(runs):
    by_key = {(r["file"], r["molecule_name"], r["threads"], r["device"]): r for r in runs}
    lines = ["| file | molecule | threads | " + " | ".join(f"{s} ×" for s in STAGES) + " | abs ΔE_corr (Eh) |",
             "| --- | --- | ---: |" + " ---: |" * len(STAGES) + " ---: |"]
    for (file, molecule, threads, device), cpu in by_key.items():
        gpu = by_key.get((file, molecule, threads, "gpu"))
        if device != "cpu" or gpu is None:
            continue
        ratios = [cpu["timings"].get(s, 0.0) / max(gpu["timings"].get(s, 0.0), 1e-9) for s in STAGES]
        lines.append(f"| {file} | {molecule} | {threads} | " + " | ".join(f"{x:.2f}" for x in ratios) +
                     f" | {abs(cpu['e_corr'] - gpu['e_corr']):.1e} |")
    return lines


def main():
    out, title, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    runs = [dict(r, file=os.path.basename(f)) for f in files for r in json.load(open(f))]
    gpu = next((r["gpu"] for r in runs if r.get("gpu")), {})
    lines = [f"# {title}", "",
             f"Produced by `bench/gpu_whole_runs_report.py` from {', '.join(f'`{f}`' for f in files)} "
             f"(`scripts/gpu-check/whole_runs.py`: each run end to end, cc-pVDZ, backend auto, fp64; "
             f"GPU: {gpu.get('name', 'none')}). Seconds per stage from each run's JSON.", ""]
    lines += stage_table(runs) + [""]
    speedups = speedup_table(runs)
    if len(speedups) > 2:
        lines += ["CPU threads over GPU, same molecule and threads:", ""] + speedups + [""]
    open(out, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
