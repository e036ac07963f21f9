#!/usr/bin/python3
"""A molecule in RAM and forced out of core (--memory), side by side: wall time per stage, peak
RSS against the budget, scratch bytes written and read, and the energies' differences. Runs
alternate in-RAM and out-of-core --repeat times (medians reported); --baseline BINARY adds an
earlier build's in-RAM run in each round (is the in-RAM path as fast as before?). --gradient: the
DF-MP2 gradient runs instead, and the gradients' differences too.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/out_of_core.py \\
        tetracene-dimer --memory 1.5GB --repeat 3 --baseline old/dfmp2

Writes <out>/out_of_core.json (every run) and out_of_core.md (with --gradient:
out_of_core_gradient.json and .md).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: geometries, machine description, basis environment)

ENERGY_STAGES = ["setup", "integrals", "scf", "df_transform", "energy", "total"]
GRADIENT_STAGES = ["setup", "integrals", "scf", "gradient", "total"]
ENERGIES = ["e_scf", "e_ss", "e_os", "e_total"]


def run(binary, xyz, args, memory, json_path):
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--threads", str(args.threads), "--quiet",
           "--json", str(json_path), "--d-convergence", args.d_convergence]
    if memory:
        cmd += ["--memory", memory]
    if args.gradient:
        cmd += ["--gradient"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    result = json.loads(Path(json_path).read_text())
    return {"memory_option": memory or "default",
            "timings": {s: result["timings"].get(s) for s in stages(args.gradient)},
            "energies": {e: result[e] for e in ENERGIES}, "gradient": result.get("gradient"),
            "peak_rss_bytes": result["resources"]["peak_rss_bytes"],
            "limit_bytes": result["memory"]["limit_bytes"], "scratch": result["memory"].get("scratch"),
            "plan": result["memory"].get("plan"), "blas_kernels": result["blas_kernels"],
            "scf_iterations": result["scf_iterations"]}


def stages(gradient):
    return GRADIENT_STAGES if gradient else ENERGY_STAGES


def largest_gradient_difference(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a["gradient"], b["gradient"]) for x, y in zip(row_a, row_b))


def median(runs, key):
    return statistics.median(r["timings"][key] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("molecule")
    parser.add_argument("--memory", default="1.5GB", help="the out-of-core run's --memory")
    parser.add_argument("--basis", default="cc-pvdz")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--d-convergence", default="1e-10", help="tight, so that energies compare to 1e-10")
    parser.add_argument("--binary", default=str(amdahl.REPO / "build" / "src" / "dfmp2"))
    parser.add_argument("--baseline", help="an earlier dfmp2 build, run in RAM in each round")
    parser.add_argument("--out", default=str(amdahl.REPO / "results"))
    parser.add_argument("--gradient", action="store_true", help="DF-MP2 gradient runs")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)  # before the runs: a bad --out fails at once
    xyz = amdahl.find_xyz(args.molecule)
    runs = {"in_ram": [], "out_of_core": [], "baseline": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.repeat):
            for kind, binary, memory in (("in_ram", args.binary, None), ("out_of_core", args.binary, args.memory),
                                         ("baseline", args.baseline, None)):
                if binary is None:
                    continue
                runs[kind].append(run(binary, xyz, args, memory, Path(work) / f"{kind}{round_}.json"))
                print(f"round {round_ + 1} {kind}: {runs[kind][-1]['timings']['total']:.1f} s", file=sys.stderr)
    ram, ooc = runs["in_ram"], runs["out_of_core"]
    summary = {
        "molecule": args.molecule, "basis": args.basis, "threads": args.threads, "repeat": args.repeat,
        "out_of_core_memory": args.memory, "machine": amdahl.machine_info(), "blas_kernels": ram[0]["blas_kernels"],
        "gradient": args.gradient,
        "median_seconds": {kind: {s: median(r, s) for s in stages(args.gradient)} for kind, r in runs.items() if r},
        "out_of_core_over_in_ram": statistics.median(o["timings"]["total"] / i["timings"]["total"]
                                                     for i, o in zip(ram, ooc)),
        "max_energy_difference": max(abs(o["energies"][e] - ram[0]["energies"][e]) for o in ooc for e in ENERGIES),
        "out_of_core_peak_rss_over_budget_bytes": max(o["peak_rss_bytes"] - o["limit_bytes"] for o in ooc),
    }
    if args.gradient:
        summary["max_gradient_difference"] = max(largest_gradient_difference(o, ram[0]) for o in ooc)
    if runs["baseline"]:
        summary["in_ram_over_baseline"] = statistics.median(i["timings"]["total"] / b["timings"]["total"]
                                                            for i, b in zip(ram, runs["baseline"]))
    out, name = Path(args.out), "out_of_core_gradient" if args.gradient else "out_of_core"
    (out / f"{name}.json").write_text(json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    write_markdown(out / f"{name}.md", summary, ooc[0])
    print(json.dumps(summary, indent=1))


def write_markdown(path, s, example):
    mib = 1 << 20
    run = "`--gradient` " if s["gradient"] else ""
    lines = [f"# {s['molecule']} ({s['basis']}) {run}in RAM and out of core (`--memory {s['out_of_core_memory']}`)", "",
             f"{s['machine']['cpu']}, {s['threads']} threads, OpenBLAS kernels {s['blas_kernels']}; "
             f"medians of {s['repeat']} alternating rounds (bench/out_of_core.py).", "",
             "| stage | " + " | ".join(s["median_seconds"]) + " |", "| --- |" + " ---: |" * len(s["median_seconds"])]
    for stage in stages(s["gradient"]):
        lines.append(f"| {stage} | " + " | ".join(f"{m[stage]:.1f}" for m in s["median_seconds"].values()) + " |")
    lines += ["", f"- out of core / in RAM, whole run (median of the rounds' ratios): "
              f"{s['out_of_core_over_in_ram']:.3f}",
              f"- largest energy difference, out of core against in RAM: {s['max_energy_difference']:.1e} Eh",
              *([f"- largest gradient difference, out of core against in RAM: {s['max_gradient_difference']:.1e} "
                 "Eh/bohr"] if s["gradient"] else []),
              f"- out-of-core peak RSS minus the budget: {s['out_of_core_peak_rss_over_budget_bytes'] / mib:.0f} MiB"]
    if "in_ram_over_baseline" in s:
        lines.append(f"- in RAM / the baseline build in RAM: {s['in_ram_over_baseline']:.3f}")
    scratch = example["scratch"] or {}
    lines += [f"- scratch per out-of-core run: {scratch.get('written_bytes', 0) / mib:.0f} MiB written, "
              f"{scratch.get('read_bytes', 0) / mib:.0f} MiB read", "", "Plan of the out-of-core run:", "",
              "| stage | RAM MiB | disk MiB | read | note |", "| --- | ---: | ---: | --- | --- |"]
    for stage in example["plan"] or []:
        read = f"{stage['read_bytes'] / mib:.0f} MiB {stage['read_per']}" if stage["read_bytes"] else ""
        lines.append(f"| {stage['stage']} | {stage['ram_bytes'] / mib:.0f} | {stage['disk_bytes'] / mib:.0f} | "
                     f"{read} | {stage['note']} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
