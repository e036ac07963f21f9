#!/usr/bin/python3
"""Molecules beyond RAM: whole dfmp2 runs at the default memory budget from 300 to 1450+ basis
functions (water clusters and linear alkanes of inputs/scale/, cc-pVDZ), each stage's wall time
beside its floor, peak RSS, the memory plan's disk bytes, scratch I/O and SCF iterations; then
per stage the cost exponent b of t ∝ nbf^b fitted on each family, and a plot of time and memory
against functions. --psi4 NAMES runs Psi4 1.3 right after dfmp2 on those molecules, with the same
settings (bench/amdahl.py's), and reports the ratio and the energy differences.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/scale.py --psi4 water40

Writes <out>/scale.json (every run; rerunning skips the molecules already in it unless --again)
and scale.md, scale.png. One run per molecule: the largest take an hour.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: Psi4 runner, machine description)

REPO = amdahl.REPO
STAGES = ["integrals", "scf", "df_transform", "energy"]
DEFAULT_MOLECULES = "water15,c20h42,water25,water40,c40h82,water50,c60h122"
FAMILIES = {"water clusters": "water", "linear alkanes (frozen core)": "c"}


def family_of(name):
    return next(f for f, prefix in FAMILIES.items() if name.startswith(prefix))


def run_dfmp2(binary, name, args, work):
    """One dfmp2 run at the default budget (unless --memory); alkanes with --frozen-core."""
    out = Path(work) / f"{name}.json"
    cmd = [str(binary), str(REPO / "inputs" / "scale" / f"{name}.xyz"), "--basis", args.basis,
           "--threads", str(args.threads), "--json", str(out), "--quiet"]
    if args.memory:
        cmd += ["--memory", args.memory]
    if args.precision != "fp64":
        cmd += ["--precision", args.precision]
    if family_of(name).endswith("(frozen core)"):
        cmd.append("--frozen-core")
    wall, usage = amdahl.run_child(cmd, amdahl.basis_environment(args.basis), "scale.py")
    result = json.loads(out.read_text())
    plan = result["memory"]["plan"]
    return {"molecule": name, "family": family_of(name), "command": " ".join(cmd[1:]), "wall_s": wall,
            "frozen_core": "--frozen-core" in cmd,
            **{k: result[k] for k in ("natom", "nbf", "naux", "naux_jk", "nocc", "nvir", "nfrozen", "backend",
                                      "precision", "blas_kernels", "gemm_gflops", "e_scf", "e_corr", "e_total")},
            "timings": {s: result["timings"].get(s, 0.0) for s in ["setup", *STAGES, "total"]},
            "floors": {s: result["floors"].get(s) for s in STAGES},
            "scf_iterations": result["scf_iterations"],
            "energy_gemm_probe": result.get("energy_gemm_probe"),
            "peak_rss_bytes": usage.ru_maxrss * 1024, "major_page_faults": usage.ru_majflt,
            "memory_limit_bytes": result["memory"]["limit_bytes"],
            "plan": [{"stage": p["stage"], "ram_bytes": p["ram_bytes"], "disk_bytes": p["disk_bytes"],
                      "drawn_peak_bytes": p["drawn_peak_bytes"], "read_bytes": p.get("read_bytes"),
                      "read_per": p.get("read_per"), "note": p.get("note"), "blocks": p.get("blocks")}
                     for p in plan],
            "scratch": result["memory"].get("scratch")}


def run_psi4(name, args):
    print(f"scale.py: Psi4 on {name}", file=sys.stderr, flush=True)
    settings = argparse.Namespace(basis=args.basis, df_basis=f"{args.basis}-ri", jk_basis=f"{args.basis}-jkfit",
                                  threads=args.threads, memory=args.psi4_memory)
    return amdahl.run_psi4(REPO / "inputs" / "scale" / f"{name}.xyz", settings)


def fit_exponent(points):
    """Least-squares slope of log t against log nbf: t ∝ nbf^b."""
    points = [(n, t) for n, t in points if t and t > 0]
    if len(points) < 2:
        return None
    xs, ys = [math.log(n) for n, _ in points], [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else None


def exponents(runs):
    table = {}
    for family in FAMILIES:
        members = sorted((r for r in runs if r["family"] == family), key=lambda r: r["nbf"])
        table[family] = {"nbf": [r["nbf"] for r in members],
                         **{s: fit_exponent([(r["nbf"], r["timings"][s]) for r in members])
                            for s in [*STAGES, "total"]},
                         "peak_rss": fit_exponent([(r["nbf"], r["peak_rss_bytes"]) for r in members])}
    return table


def gib(x):
    return f"{x / 2**30:.2f}"


def block_bytes(run, stage, what):
    """The bytes of the plan's blocks of `stage` whose name starts with `what`, in RAM and on disk."""
    entry = next(p for p in run["plan"] if p["stage"] == stage)
    return sum(b["bytes"] for b in entry.get("blocks") or [] if b["what"].startswith(what))


def io_rates(run):
    """What a stage would have to read from disk per second to keep pace with its floor, were its
    tensor streamed from the scratch disk (GB/s): the DF-SCF tensor once per SCF iteration; (Q|ia)
    written and read once and B written once in the DF transform; B read once per block row in the
    energy step, with blocks of a quarter of the budget."""
    floors, iterations = run["floors"], run["scf_iterations"]
    tensor = block_bytes(run, "scf", "the DF-SCF tensor")
    b = 8.0 * (run["nocc"] - run["nfrozen"]) * run["nvir"] * run["naux"]
    block_orbitals = max(1.0, (run["memory_limit_bytes"] / 4) / (8.0 * run["nvir"] * run["naux"]))
    rows = max(1.0, (run["nocc"] - run["nfrozen"]) / block_orbitals)
    return {"scf_tensor_bytes": tensor, "b_bytes": b,
            "scf": tensor / (floors["scf"] / iterations) / 1e9 if floors.get("scf") else None,
            "df_transform": 3 * b / floors["df_transform"] / 1e9 if floors.get("df_transform") else None,
            "energy": rows * b / 2 / floors["energy"] / 1e9 if floors.get("energy") else None}


def markdown(runs, fits, machine, args):
    def cell(value, spec):
        return "–" if value is None else format(value, spec)

    first = runs[0]
    # Rows of one series can come from sessions on different CPUs: say which ran where.
    cpus = {}
    for r in runs:
        cpus.setdefault(r.get("cpu", "CPU not recorded"), []).append(r["molecule"])
    cpu = machine["cpu"] if len(cpus) == 1 else "; ".join(f"{c} ({', '.join(m)})" for c, m in cpus.items())
    lines = [f"# Molecules beyond RAM: the scale series ({args.basis})", "",
             f"`bench/scale.py`; {cpu}, {machine['cores']} cores, {machine['blas']}, kernels "
             f"{first['blas_kernels']} (OPENBLAS_CORETYPE {amdahl.openblas_coretype() or 'unset'}); "
             f"{args.threads} threads; B and the energy step in {args.precision}; memory budget {gib(first['memory_limit_bytes'])} GiB "
             f"({'--memory ' + args.memory if args.memory else 'the default, half the RAM'}); one run per molecule, "
             "in the order of the table; water clusters all electrons, alkanes `--frozen-core`.", "",
             "| molecule | nbf | naux | naux_jk | nocc (active) | nvir | integrals s (floor) | SCF s (floor) | iterations "
             "| DF transform s (floor) | energy s (floor) | total s | peak RSS GiB | disk planned GiB "
             "| scratch written / read GiB | DF-SCF tensor stored |", "|---" * 16 + "|"]
    for r in runs:
        t, f = r["timings"], r["floors"]
        disk = max(p["disk_bytes"] for p in r["plan"])
        scratch = r["scratch"] or {}
        stored = next((p["note"] for p in r["plan"] if p["note"] and "stores" in p["note"]), "")
        stored = stored.split("stores ")[-1].split(" of")[0] if stored else "–"
        lines.append(
            f"| {r['molecule']} | {r['nbf']} | {r['naux']} | {r['naux_jk']} | {r['nocc']} | {r['nvir']} | "
            + " | ".join(f"{t[s]:.1f} ({cell(f[s], '.1f')})" + (f" | {r['scf_iterations']}" if s == "scf" else "")
                         for s in STAGES)
            + f" | {t['total']:.1f} | {gib(r['peak_rss_bytes'])} | {gib(disk)} | "
            f"{gib(scratch.get('written_bytes', 0))} / {gib(scratch.get('read_bytes', 0))} | {stored} |")
    lines += ["", "Cost exponents b (t ∝ nbf^b, least squares over each family):", "",
              "| family | nbf | " + " | ".join(STAGES) + " | total | peak RSS |", "|---" * (len(STAGES) + 4) + "|"]
    for family, fit in fits.items():
        if not fit["nbf"]:
            continue
        lines.append(f"| {family} | {', '.join(map(str, fit['nbf']))} | "
                     + " | ".join(cell(fit[s], ".2f") for s in [*STAGES, "total", "peak_rss"]) + " |")
    lines += ["", "The energy step against DGEMM probed at its own shape (nvir × nvir × naux) at start-up, and the "
              "disk rate each stage would need, were its tensor streamed from the scratch disk, to keep pace with "
              "its floor: the DF-SCF tensor once per SCF iteration; (Q|ia) written and read and B written once in "
              "the transform; B read once per block row in the energy step, blocks a quarter of the budget "
              "(GB/s):", "",
              "| molecule | energy step GFLOP/s | DGEMM at its shape | % | DF-SCF tensor GiB | B GiB "
              "| SCF GB/s | DF transform GB/s | energy GB/s |", "|---" * 9 + "|"]
    for r in runs:
        probe, rates = r.get("energy_gemm_probe") or {}, io_rates(r)
        lines.append(f"| {r['molecule']} | {cell(probe.get('energy_gflops'), '.1f')} | "
                     f"{cell(probe.get('fp64_gflops'), '.1f')} | "
                     f"{cell(100 * probe['fraction'] if 'fraction' in probe else None, '.1f')} | "
                     f"{gib(rates['scf_tensor_bytes'])} | {gib(rates['b_bytes'])} | {cell(rates['scf'], '.2f')} | "
                     f"{cell(rates['df_transform'], '.3f')} | {cell(rates['energy'], '.4f')} |")
    psi4 = [r for r in runs if r.get("psi4")]
    if psi4:
        lines += ["", "Beside Psi4 1.3.2 (same settings; run right after dfmp2, "
                  f"Psi4 `memory {args.psi4_memory}`):", "",
                  "| molecule | dfmp2 s | Psi4 s | Psi4 / dfmp2 | SCF iterations dfmp2 / Psi4 | ΔE_SCF Eh | ΔE_corr Eh |",
                  "|---" * 7 + "|"]
        for r in psi4:
            p = r["psi4"]
            lines.append(f"| {r['molecule']} | {r['wall_s']:.1f} | {p['wall_seconds']:.1f} | "
                         f"{p['wall_seconds'] / r['wall_s']:.2f} | {r['scf_iterations']} / {p['scf_iterations']} | "
                         f"{r['e_scf'] - p['e_scf']:.1e} | {r['e_corr'] - p['e_corr']:.1e} |")
    return "\n".join(lines) + "\n"


def plot(runs, out, machine, args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = {"integrals": "tab:green", "scf": "tab:blue", "df_transform": "tab:purple", "energy": "tab:red",
              "total": "black"}
    markers = {family: m for family, m in zip(FAMILIES, "os")}
    for family in FAMILIES:
        members = sorted((r for r in runs if r["family"] == family), key=lambda r: r["nbf"])
        if not members:
            continue
        n = [r["nbf"] for r in members]
        for stage, color in colors.items():
            ax_t.plot(n, [r["timings"][stage] for r in members], color=color, marker=markers[family],
                      linestyle="-" if family.startswith("water") else "--", label=f"{stage}, {family}")
        ax_m.plot(n, [r["peak_rss_bytes"] / 2**30 for r in members], color="tab:blue", marker=markers[family],
                  label=f"peak RSS, {family}")
        ax_m.plot(n, [max(p["disk_bytes"] for p in r["plan"]) / 2**30 for r in members], color="tab:orange",
                  marker=markers[family], label=f"scratch planned, {family}")
    ax_m.axhline(runs[0]["memory_limit_bytes"] / 2**30, color="gray", linestyle=":", label="memory budget")
    for ax, ylabel, title in ((ax_t, "wall time (s)", "time per stage"), (ax_m, "GiB", "memory and disk")):
        ax.set_xscale("log")
        ax.set_yscale("log" if ax is ax_t else "linear")
        ax.set_xlabel("basis functions (nbf)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6)
    fig.suptitle(f"{args.basis}, {args.threads} threads, {machine['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "scale.png", dpi=110)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=str(REPO / "build" / "src" / "dfmp2"))
    p.add_argument("--out", default=str(REPO / "results"))
    p.add_argument("--molecules", default=DEFAULT_MOLECULES)
    p.add_argument("--basis", default="cc-pvdz")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--memory", help="dfmp2's --memory (default: its own, half the RAM)")
    p.add_argument("--precision", default="fp64", choices=["fp64", "fp32"], help="dfmp2's --precision")
    p.add_argument("--psi4", default="", help="comma-separated molecules also run with Psi4")
    p.add_argument("--psi4-memory", default="11GB")
    p.add_argument("--again", action="store_true", help="rerun molecules already in scale.json")
    args = p.parse_args()
    binary = Path(args.binary)
    if not binary.exists():
        sys.exit(f"scale.py: {binary} not found: build dfmp2 first")
    if args.psi4 and shutil.which("psi4") is None:
        sys.exit("scale.py: --psi4 needs psi4 (Debian's psi4)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "scale.json"
    previous = json.loads(store.read_text())["runs"] if store.exists() else []
    runs = {r["molecule"]: r for r in previous}
    machine = amdahl.machine_info()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="scale_") as work:
        for name in args.molecules.split(","):
            if name in runs and not args.again and (name not in args.psi4.split(",") or runs[name].get("psi4")):
                continue
            print(f"scale.py: dfmp2 on {name}", file=sys.stderr, flush=True)
            run = run_dfmp2(binary, name, args, work)
            run["commit"] = commit
            run["cpu"] = machine["cpu"]
            if name in args.psi4.split(","):
                run["psi4"] = run_psi4(name, args)
            runs[name] = run
            ordered = sorted(runs.values(), key=lambda r: (list(FAMILIES).index(r["family"]), r["nbf"]))
            fits = exponents(ordered)
            store.write_text(json.dumps({"machine": machine, "settings": vars(args), "runs": ordered,
                                         "exponents": fits}, indent=2) + "\n")
            (out / "scale.md").write_text(markdown(ordered, fits, machine, args))
            plot(ordered, out, machine, args)
    print((out / "scale.md").read_text())


if __name__ == "__main__":
    main()
