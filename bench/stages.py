#!/usr/bin/python3
"""Every stage of whole dfmp2 runs against its floor, beside Psi4, measured side by side.

For each molecule, runs dfmp2 (its JSON gives each stage's wall time and floor — GEMM work at
the GEMM rate measured at start-up plus libint2's own time for the integrals — page faults and
peak RSS) and Psi4 1.3 with the same settings, alternating the two --repeat times, and reports
medians. --scaling NAMES adds one-thread dfmp2 runs of those molecules (each stage's speedup from
1 to --threads threads); --exact adds uracil with exact integrals (dfmp2 --scf exact beside
Psi4's PK); --baseline BINARY runs an earlier dfmp2 build once per molecule beside them (its
whole-run time, peak RSS and page faults, from the kernel's rusage of the child).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/stages.py \
        --scaling naphthalene-dimer,uracil --exact --baseline old/dfmp2

Writes <out>/stages.json (every run) and stages.md (the tables of docs/benchmarks.md).
perf-free: everything comes from the programs' own outputs.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: Psi4 runner, geometries, machine description)

REPO = amdahl.REPO
STAGES = ["setup", "integrals", "scf", "df_transform", "energy"]


def run_dfmp2(binary, xyz, args, workdir, threads, scf="df"):
    out = Path(workdir) / "run.json"
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--df-basis", args.df_basis, "--scf", scf,
           "--threads", str(threads), "--memory", args.memory, "--json", str(out), "--quiet"]
    if scf == "df":
        cmd += ["--jk-basis", args.jk_basis]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    return json.loads(out.read_text())


def run_baseline(binary, xyz, args, threads, scf):
    """An earlier build's whole run: wall time, peak RSS and page faults of the child process."""
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--df-basis", args.df_basis, "--scf", scf,
           "--threads", str(threads), "--memory", args.memory, "--quiet"]
    if scf == "df":
        cmd += ["--jk-basis", args.jk_basis]
    wall, usage = amdahl.run_child(cmd, amdahl.basis_environment(args.basis), "stages.py: baseline")
    return {"wall_seconds": wall, "peak_rss_bytes": usage.ru_maxrss * 1024,
            "minor_page_faults": usage.ru_minflt, "major_page_faults": usage.ru_majflt}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(name, runs, psi4, serial, baseline):
    """Medians over the repetitions: per stage wall, floor and ratio; whole run; Psi4."""
    stages = {}
    for stage in STAGES:
        wall = median([r["timings"].get(stage) for r in runs])
        floor = median([r["floors"].get(stage) for r in runs])
        stages[stage] = {"wall_s": wall, "floor_s": floor, "ratio": wall / floor if floor else None}
        if serial:
            one = median([r["timings"].get(stage) for r in serial])
            stages[stage]["one_thread_s"] = one
            stages[stage]["thread_speedup"] = one / wall if wall else None
    total = median([r["timings"]["total"] for r in runs])
    psi4_wall = median([p["wall_seconds"] for p in psi4])
    first = runs[0]
    return {"molecule": name, "nbf": first["nbf"], "naux": first["naux"], "naux_jk": first["naux_jk"],
            "nocc": first["nocc"], "nvir": first["nvir"], "scf_type": first["scf_type"],
            "blas_kernels": first["blas_kernels"], "stages": stages, "total_s": total,
            "dgemm_gflops": median([r["gemm_gflops"]["fp64"] for r in runs]),
            "sgemm_gflops": median([r["gemm_gflops"]["fp32"] for r in runs]),
            "peak_rss_bytes": median([r["resources"]["peak_rss_bytes"] for r in runs]),
            "minor_page_faults": median([r["resources"]["minor_page_faults"] for r in runs]),
            "scf_iterations": first["scf_iterations"], "scf_fp32_iterations": first.get("scf_fp32_iterations"),
            "psi4_s": psi4_wall, "psi4_scf_iterations": psi4[0]["scf_iterations"] if psi4 else None,
            "speedup_vs_psi4": psi4_wall / total if psi4_wall else None,
            "de_scf": first["e_scf"] - psi4[0]["e_scf"] if psi4 else None,
            "de_corr": first["e_corr"] - psi4[0]["e_corr"] if psi4 else None,
            "baseline": baseline,
            "repeat": len(runs)}


def baseline_lines(baseline, s):
    if not baseline:
        return []
    return [f"Earlier build (one run, same settings): whole run {baseline['wall_seconds']:.2f} s, peak RSS "
            f"{baseline['peak_rss_bytes'] / 2**20:.0f} MiB, {baseline['minor_page_faults']} minor page faults; "
            f"this build {baseline['wall_seconds'] / s['total_s']:.2f}× faster, "
            f"{baseline['minor_page_faults'] / s['minor_page_faults']:.1f}× fewer page faults.", ""]


def markdown(summaries, machine, args):
    def cell(value, spec):
        return "–" if value is None else format(value, spec)

    lines = [f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['blas']}, kernel set "
             f"{summaries[0]['blas_kernels'] if summaries else '?'} (OPENBLAS_CORETYPE "
             f"{os.environ.get('OPENBLAS_CORETYPE') or 'unset'}; Psi4 loads the same library); "
             f"{args.threads} threads; basis {args.basis} / {args.df_basis} / {args.jk_basis}; medians of "
             f"{args.repeat} runs of each program, alternating.", ""]
    for s in summaries:
        lines += [f"### {s['molecule']} ({s['scf_type']} SCF; nbf {s['nbf']}, naux {s['naux']}, naux_jk "
                  f"{s['naux_jk']}, nocc {s['nocc']}, nvir {s['nvir']})", "",
                  "| stage | wall (s) | floor (s) | wall / floor | 1 thread (s) | speedup 1 → "
                  f"{args.threads} threads |", "|---" * 6 + "|"]
        for stage in STAGES:
            st = s["stages"][stage]
            lines.append(f"| {stage} | {cell(st['wall_s'], '.2f')} | {cell(st['floor_s'], '.2f')} | "
                         f"{cell(st['ratio'], '.2f')} | {cell(st.get('one_thread_s'), '.2f')} | "
                         f"{cell(st.get('thread_speedup'), '.2f')} |")
        lines += ["", f"Whole run {s['total_s']:.2f} s, Psi4 {cell(s['psi4_s'], '.2f')} s: dfmp2 "
                  f"{cell(s['speedup_vs_psi4'], '.2f')}× faster; ΔE_SCF {cell(s['de_scf'], '.1e')} Eh, ΔE_corr "
                  f"{cell(s['de_corr'], '.1e')} Eh. SCF iterations {s['scf_iterations']} (of which "
                  f"{s['scf_fp32_iterations']} with the exchange in fp32), Psi4 {s['psi4_scf_iterations']}. "
                  f"Peak RSS {s['peak_rss_bytes'] / 2**20:.0f} MiB, {s['minor_page_faults']:.0f} minor page faults. "
                  f"GEMM rate at start-up {s['dgemm_gflops']:.1f} / {s['sgemm_gflops']:.1f} GFLOP/s (fp64 / fp32).",
                  "", *baseline_lines(s["baseline"], s)]
    return "\n".join(lines)


def measure(name, xyz, scf, args, binary, work, use_psi4):
    runs, psi4, serial, baseline = [], [], [], None
    for k in range(args.repeat):
        print(f"stages.py: {name} ({scf}) run {k + 1}/{args.repeat}", file=sys.stderr, flush=True)
        runs.append(run_dfmp2(binary, xyz, args, work, args.threads, scf))
        if use_psi4:
            psi4.append(amdahl.run_psi4(xyz, args, "df" if scf == "df" else "pk"))
        if name in args.scaling.split(","):
            serial.append(run_dfmp2(binary, xyz, args, work, 1, scf))
        if args.baseline and k == 0:
            baseline = run_baseline(args.baseline, xyz, args, args.threads, scf)
    return (summarise(name, runs, psi4, serial, baseline),
            {"dfmp2": runs, "psi4": psi4, "dfmp2_one_thread": serial, "baseline": baseline})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(REPO / "build" / "src" / "dfmp2"))
    p.add_argument("--out", default=str(REPO / "results"))
    p.add_argument("--molecules", default="naphthalene-dimer,tetracene-dimer")
    p.add_argument("--basis", default="cc-pvdz")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--memory", default="12GB")
    p.add_argument("--scaling", default="", help="comma-separated molecules also run on one thread")
    p.add_argument("--baseline", help="an earlier dfmp2 binary, run once per molecule beside the others")
    p.add_argument("--exact", action="store_true", help="also uracil with exact integrals, beside Psi4's PK")
    p.add_argument("--no-psi4", action="store_true")
    args = p.parse_args()
    args.df_basis, args.jk_basis = f"{args.basis}-ri", f"{args.basis}-jkfit"
    binary = Path(args.binary)
    if not binary.exists():
        sys.exit(f"stages.py: {binary} not found: build dfmp2 first")
    use_psi4 = not args.no_psi4 and shutil.which("psi4") is not None
    cases = [(name, amdahl.find_xyz(name), "df") for name in args.molecules.split(",") if name]
    if args.exact:
        cases.append(("uracil", amdahl.find_xyz("uracil"), "exact"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summaries, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="stages_") as work:
        for name, xyz, scf in cases:
            summary, runs = measure(name, xyz, scf, args, binary, work, use_psi4)
            summaries.append(summary)
            raw[f"{name}|{scf}"] = runs
            machine = amdahl.machine_info()
            (out / "stages.json").write_text(json.dumps(
                {"machine": machine, "settings": vars(args) | {"openblas_coretype": amdahl.openblas_coretype()},
                 "summaries": summaries, "runs": raw}, indent=2) + "\n")
            (out / "stages.md").write_text(markdown(summaries, machine, args) + "\n")
    print((out / "stages.md").read_text())


if __name__ == "__main__":
    main()
