#!/usr/bin/python3
"""Amdahl benchmark of the MP2 energy backends across molecule sizes, beside Psi4.

For each molecule of a series (water up to > 600 basis functions, one basis family), runs
dfmp2_amdahl (one SCF and DF transform, then every energy backend x precision on the same B),
optionally Psi4's DF-MP2 with the same settings, and writes to --out (default results/):

  amdahl.json, amdahl.csv     raw timings, energies and the Amdahl analysis per backend
  amdahl.md                   the same as Markdown tables (for docs/benchmarks.md)
  amdahl_speedup.png          measured vs predicted speedups (and dfmp2 over Psi4) vs nbf
  amdahl_stages.png           wall time per stage per molecule
  amdahl_floors.png           every stage's wall time over its floor, and what reaching it would
                              give the whole run (Amdahl)
  amdahl_gflops.png           energy-step GFLOP/s beside the machine's DGEMM/SGEMM rate
  psi4_series.json            Psi4 results, reused by later runs (--rerun-psi4 to redo)

Run with Debian's /usr/bin/python3 (it has matplotlib). Builds nothing: expects a build
directory with bench/amdahl/dfmp2_amdahl (--build-dir, or --binary for the file itself).
"""
import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Closed-shell molecules of growing size; cc-pVDZ nbf: 24, 114, 180, 246, 312, 378, 444, 624.
SERIES = ["water", "benzene", "naphthalene", "anthracene", "tetracene", "pentacene", "hexacene",
          "tetracene-dimer"]
QUICK_SERIES = SERIES[:3]
BACKENDS = ["reference", "loop", "fused"]
PRECISIONS = ["fp64", "fp32"]
STAGES = ["setup", "integrals", "scf", "df_transform"]
FLOORED = ["integrals", "scf", "df_transform", "energy"]  # stages whose work has a floor
TOLERANCE = 0.10      # predicted vs measured speedup: flagged beyond this relative difference
PSI4_ENERGY_TOL = 1e-6  # Eh


def find_xyz(name):
    for folder in (REPO / "inputs" / "series", REPO / "inputs"):
        path = folder / f"{name}.xyz"
        if path.exists():
            return path
    sys.exit(f"amdahl.py: no geometry for '{name}' in inputs/series/ or inputs/")


def read_xyz(path):
    lines = Path(path).read_text().splitlines()
    natom = int(lines[0].split()[0])
    return [line.split()[:4] for line in lines[2:2 + natom]]


def electrons(atoms):
    charges = {"H": 1, "He": 2, "Li": 3, "Be": 4, "B": 5, "C": 6, "N": 7, "O": 8, "F": 9, "Ne": 10,
               "Na": 11, "Mg": 12, "Al": 13, "Si": 14, "P": 15, "S": 16, "Cl": 17, "Ar": 18}
    return sum(charges[a[0].capitalize()] for a in atoms)


def machine_info():
    # A virtual machine's model name ("AMD EPYC") can hide the generation; family and model tell it.
    fields = {}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    model = fields.get("Model name", "unknown")
    if "CPU family" in fields and "Model" in fields:
        model += f" (family {fields['CPU family']}, model {fields['Model']})"
    blas = "OpenBLAS (version unknown)"
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libopenblas0-openmp"],
                             capture_output=True, text=True)
        if out.returncode == 0:
            blas = f"OpenBLAS {out.stdout.split('+')[0]} (OpenMP build, libopenblas0-openmp)"
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "blas": blas}


def basis_environment(basis):
    """dfmp2 reads basis/ (or $DFMP2_BASIS_PATH); fall back to Psi4's copy of the same files."""
    env = dict(os.environ)
    psi4_basis = Path("/usr/share/psi4/basis")
    if (not env.get("DFMP2_BASIS_PATH") and not (REPO / "basis" / f"{basis}.gbs").exists()
            and (psi4_basis / f"{basis}.gbs").exists()):
        env["DFMP2_BASIS_PATH"] = str(psi4_basis)
    return env


def run_dfmp2(binary, xyz, args, precisions, repeat, workdir):
    out = Path(workdir) / f"{xyz.stem}.json"
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--df-basis", args.df_basis,
           "--jk-basis", args.jk_basis, "--backends", ",".join(BACKENDS),
           "--precisions", ",".join(precisions), "--repeat", str(repeat),
           "--threads", str(args.threads), "--memory", args.memory, "--json", str(out), "--quiet"]
    done = subprocess.run(cmd, env=basis_environment(args.basis), stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        return None
    return json.loads(out.read_text())


# The molecule and settings both programs run with; PSI4_INPUT adds what Psi4 computes.
PSI4_SETTINGS = """memory {memory}
molecule {{
0 1
{atoms}
symmetry c1
no_reorient
no_com
units angstrom
}}
set {{
  basis {basis}
  df_basis_scf {jk_basis}
  df_basis_mp2 {df_basis}
  scf_type {scf_type}
  mp2_type df
  e_convergence 1e-10
  d_convergence 1e-8
  freeze_core false
}}
"""
PSI4_INPUT = PSI4_SETTINGS + """energy('mp2')
import json
with open('psi4_energies.json', 'w') as f:
    json.dump({{'e_scf': variable('SCF TOTAL ENERGY'),
               'e_corr': variable('MP2 CORRELATION ENERGY'),
               'e_total': variable('MP2 TOTAL ENERGY')}}, f)
"""


def run_psi4(xyz, args, scf_type="df"):
    """Psi4 DF-MP2 with dfmp2's settings (scf_type df, or pk for exact integrals): wall time
    (process and Psi4's own), SCF iterations and energies."""
    atoms = "\n".join(" ".join(a) for a in read_xyz(xyz))
    memory = args.memory.lower().replace("gb", " gb").replace("mb", " mb")
    with tempfile.TemporaryDirectory(prefix="amdahl_psi4_") as tmp:
        (Path(tmp) / "in.dat").write_text(PSI4_INPUT.format(
            memory=memory, atoms=atoms, basis=args.basis, jk_basis=args.jk_basis,
            df_basis=args.df_basis, scf_type=scf_type))
        env = dict(os.environ, PSI_SCRATCH=tmp)
        start = time.perf_counter()
        subprocess.run(["psi4", "-n", str(args.threads), "in.dat", "out.dat"], cwd=tmp, env=env,
                       check=True, stdout=subprocess.DEVNULL)
        process_seconds = time.perf_counter() - start
        energies = json.loads((Path(tmp) / "psi4_energies.json").read_text())
        text = (Path(tmp) / "out.dat").read_text()
    m = re.search(r"Psi4 wall time for execution: (\d+):(\d+):([\d.]+)", text)
    wall = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else None
    # "@DF-RHF iter SAD:" is the guess's Fock build, as dfmp2's iteration 1 is.
    iterations = len(re.findall(r"@(?:DF-)?RHF iter", text))
    return {"threads": args.threads, "memory": args.memory, "openblas_coretype": openblas_coretype(),
            "scf_type": scf_type, "wall_seconds": wall, "process_seconds": process_seconds,
            "scf_iterations": iterations, **energies}


def run_child(cmd, env, who):
    """Runs cmd (stdout discarded): its wall seconds and the kernel's rusage of it; exits the
    script, naming `who`, when it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{who}: {' '.join(map(str, cmd))} failed (status {status})")
    return wall, usage


def openblas_coretype():
    """The OpenBLAS kernel set forced on both programs (they load the same libopenblas), or None."""
    return os.environ.get("OPENBLAS_CORETYPE")


def stage_seconds(mol, stage):
    """A stage's wall time (runs before the setup stage existed have none)."""
    return mol["stages"].get(stage, 0.0)


def floor_rows(mol):
    """Every floored stage of the default run (fused fp64 energy step): its wall time, its floor,
    and what the whole run would gain if that stage alone ran at its floor (Amdahl)."""
    fused = next((r for r in mol["runs"] if (r["backend"], r["precision"]) == ("fused", "fp64")), None)
    if fused is None or "floors" not in mol:
        return []
    wall = {s: stage_seconds(mol, s) for s in STAGES}
    wall["energy"] = fused["energy_seconds"]
    floor = dict(mol["floors"], energy=fused.get("energy_floor_seconds", 0.0))
    whole = sum(wall.values())
    rows = []
    for stage in FLOORED:
        if floor.get(stage, 0.0) > 0.0:
            rows.append({"molecule": mol["name"], "nbf": mol["nbf"], "stage": stage, "wall_s": wall[stage],
                         "floor_s": floor[stage], "ratio": wall[stage] / floor[stage],
                         "share": wall[stage] / whole,
                         "whole_if_floor": whole / (whole - wall[stage] + floor[stage])})
    return rows


def speedup(f, s):
    return 1.0 if f == 0.0 else 1.0 / ((1.0 - f) + f / s)


def analyse(mol, psi4):
    """One row per backend x precision: Amdahl f, s, predicted and measured speedups."""
    stages = sum(stage_seconds(mol, s) for s in STAGES)
    runs = {(r["backend"], r["precision"]): r for r in mol["runs"]}
    gemm_rate = {"fp64": mol["machine_gemm"]["dgemm_gflops"], "fp32": mol["machine_gemm"]["sgemm_gflops"]}
    rows = []
    for (backend, precision), run in runs.items():
        ref = runs.get(("reference", precision))
        row = {"molecule": mol["name"], "natom": mol["natom"], "nbf": mol["nbf"], "naux": mol["naux"],
               "nocc": mol["nocc"], "nvir": mol["nvir"], "backend": backend, "precision": precision,
               **{f"{s}_s": stage_seconds(mol, s) for s in STAGES},
               "energy_s": run["energy_seconds"], "gemm_s": run["gemm_seconds"],
               "reduction_s": run["reduction_seconds"], "whole_s": stages + run["energy_seconds"],
               "gflops": run["gflops"], "machine_gemm_gflops": gemm_rate[precision],
               "e_scf": run["e_scf"], "e_corr": run["e_corr"], "e_ss": run["e_ss"], "e_os": run["e_os"],
               "e_total": run["e_total"]}
        notes = []
        if ref is not None and backend != "reference":
            t_ref, t = ref["energy_seconds"], run["energy_seconds"]
            whole_ref = stages + t_ref
            ref_gemm, ref_red = ref["gemm_seconds"], ref["reduction_seconds"]
            if run["reduction_seconds"] and run["gemm_seconds"] is not None:
                f = ref_red / t_ref
                s = ref_red / run["reduction_seconds"] if ref_red > 0 else None
                if s is None:
                    notes.append("reference GEMM time >= its energy step: no reduction left to speed up")
                row["gemm_ratio"] = ref_gemm / run["gemm_seconds"]
                row["accelerated"] = "reduction"
                row["ref_gemm_s"], row["ref_reduction_s"] = ref_gemm, ref_red
            else:  # no split reported (fused): the whole energy step is the accelerated part
                f, s = 1.0, t_ref / t
                row["accelerated"] = "energy step"
            row["f"], row["s"] = f, s
            row["predicted_energy"], row["measured_energy"] = speedup(f, s), t_ref / t
            f_whole = f * t_ref / whole_ref
            row["f_whole"] = f_whole
            row["predicted_whole"], row["measured_whole"] = speedup(f_whole, s), whole_ref / row["whole_s"]
            for part in ("energy", "whole"):
                p, m = row[f"predicted_{part}"], row[f"measured_{part}"]
                if abs(p / m - 1.0) > TOLERANCE:
                    notes.append(f"{part}: predicted {p:.2f}x vs measured {m:.2f}x ({100 * (p / m - 1):+.0f}%)")
        if psi4:
            row["psi4_s"] = psi4["wall_seconds"]
            row["speedup_vs_psi4"] = psi4["wall_seconds"] / row["whole_s"]
            row["de_scf"] = run["e_scf"] - psi4["e_scf"]
            row["de_corr"] = run["e_corr"] - psi4["e_corr"]
            worst = max(abs(row["de_scf"]), abs(row["de_corr"]))
            if worst > PSI4_ENERGY_TOL:
                notes.append(f"|dE| vs Psi4 = {worst:.1e} Eh > {PSI4_ENERGY_TOL:.0e}")
        row["note"] = "; ".join(notes)
        rows.append(row)
    return rows


def energy_spread(mol):
    """Largest relative difference of E_corr between backends, per precision."""
    spread = {}
    for precision in {r["precision"] for r in mol["runs"]}:
        e = [r["e_corr"] for r in mol["runs"] if r["precision"] == precision]
        spread[precision] = (max(e) - min(e)) / abs(min(e, key=abs))
    return spread


CSV_COLUMNS = ["molecule", "natom", "nbf", "naux", "nocc", "nvir", "backend", "precision",
               "integrals_s", "scf_s", "df_transform_s", "energy_s", "gemm_s", "reduction_s", "whole_s",
               "gflops", "machine_gemm_gflops", "ref_gemm_s", "ref_reduction_s", "accelerated", "f", "s", "gemm_ratio", "predicted_energy",
               "measured_energy", "f_whole", "predicted_whole", "measured_whole", "psi4_s",
               "speedup_vs_psi4", "e_scf", "e_corr", "e_ss", "e_os", "e_total", "de_scf", "de_corr", "note"]


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, CSV_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k, "")) for k in CSV_COLUMNS})


def plot(out, molecules, rows, machine, basis):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title = f"{basis}, {machine['cores']} threads, {machine['cpu']}"

    def label_axes(ax, ylabel, axes_title, legend_size=8):
        ax.set_xlabel("basis functions (nbf)")
        ax.set_ylabel(ylabel)
        ax.set_title(axes_title)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=legend_size)

    def save(fig, name, suptitle=title):
        fig.suptitle(suptitle, fontsize=9)
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
    styles = {("loop", "fp64"): ("tab:blue", "o"), ("fused", "fp64"): ("tab:red", "s"),
              ("loop", "fp32"): ("tab:cyan", "^"), ("fused", "fp32"): ("tab:orange", "D"),
              ("reference", "fp64"): ("tab:gray", "x"), ("reference", "fp32"): ("tab:olive", "+")}

    def series(backend, precision, key):
        pts = sorted((r["nbf"], r[key]) for r in rows
                     if r["backend"] == backend and r["precision"] == precision and r.get(key) is not None)
        return [p[0] for p in pts], [p[1] for p in pts]

    have_psi4 = any(r.get("speedup_vs_psi4") is not None for r in rows)
    fig, axes = plt.subplots(1, 3 if have_psi4 else 2, figsize=(16 if have_psi4 else 11, 4.8))
    for ax, part, label in ((axes[0], "energy", "energy step"), (axes[1], "whole", "whole run")):
        for (backend, precision), (color, marker) in styles.items():
            x, y = series(backend, precision, f"measured_{part}")
            if not x:
                continue
            ax.plot(x, y, color=color, marker=marker, label=f"{backend} {precision} measured")
            x, y = series(backend, precision, f"predicted_{part}")
            ax.plot(x, y, color=color, marker=marker, linestyle="--", fillstyle="none",
                    label=f"{backend} {precision} Amdahl")
        ax.axhline(1.0, color="black", linewidth=0.8)
        label_axes(ax, "speedup over reference (same precision)", f"Speedup of the {label}", 7)
    axes[1].get_legend().remove()
    if have_psi4:
        ax = axes[2]
        for (backend, precision), (color, marker) in styles.items():
            x, y = series(backend, precision, "speedup_vs_psi4")
            if x and (backend == "fused" or precision == "fp64"):
                ax.plot(x, y, color=color, marker=marker, label=f"{backend} {precision}",
                        linewidth=2.5 if (backend, precision) == ("fused", "fp64") else 1)
        ax.axhline(1.0, color="black", linewidth=0.8)
        label_axes(ax, "Psi4 wall time / dfmp2 wall time", "dfmp2 over Psi4 DF-MP2 (whole run)", 7)
    save(fig, "amdahl_speedup.png")

    # Stages: absolute seconds with the default backend, and shares with reference vs fused.
    mols = sorted(molecules, key=lambda m: m["nbf"])
    energy = {(m["name"], r["backend"], r["precision"]): r["energy_seconds"] for m in mols for r in m["runs"]}
    names = [f"{m['name']}\n{m['nbf']}" for m in mols]
    colors = {"setup": "tab:gray", "integrals": "tab:green", "scf": "tab:purple", "df_transform": "tab:brown",
              "energy": "tab:red"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5))
    bottom = [0.0] * len(mols)
    for stage in STAGES + ["energy"]:
        h = [stage_seconds(m, stage) if stage != "energy" else energy[(m["name"], "fused", "fp64")] for m in mols]
        ax1.bar(range(len(mols)), h, bottom=bottom, color=colors[stage],
                label=stage if stage != "energy" else "energy (fused fp64)")
        bottom = [b + v for b, v in zip(bottom, h)]
    ax1.set_xticks(range(len(mols)), names, fontsize=7)
    ax1.set_yscale("log")
    ax1.set_ylabel("wall seconds (stacked, log scale)")
    ax1.set_title("Wall time per stage, default backend (fused fp64)")
    ax1.legend(fontsize=8)
    width = 0.38
    for k, backend in enumerate(["reference", "fused"]):
        xs = [i + (k - 0.5) * width for i in range(len(mols))]
        totals = [sum(stage_seconds(m, s) for s in STAGES) + energy[(m["name"], backend, "fp64")] for m in mols]
        bottom = [0.0] * len(mols)
        for stage in STAGES + ["energy"]:
            h = [100 * (stage_seconds(m, stage) if stage != "energy" else energy[(m["name"], backend, "fp64")]) / t
                 for m, t in zip(mols, totals)]
            ax2.bar(xs, h, width, bottom=bottom, color=colors[stage], hatch="//" if backend == "reference" else None,
                    edgecolor="white")
            bottom = [b + v for b, v in zip(bottom, h)]
    ax2.set_xticks(range(len(mols)), names, fontsize=7)
    ax2.set_ylabel("share of the whole run (%)")
    ax2.set_title("Share per stage: reference (hatched, left) vs fused (right), fp64")
    save(fig, "amdahl_stages.png")

    fig, ax = plt.subplots(figsize=(8, 5))
    for (backend, precision), (color, marker) in styles.items():
        x, y = series(backend, precision, "gflops")
        if x:
            ax.plot(x, y, color=color, marker=marker, label=f"{backend} {precision}")
    for key, label, style in (("dgemm_gflops", "DGEMM (machine)", "-"), ("sgemm_gflops", "SGEMM (machine)", ":")):
        pts = sorted((m["nbf"], m["machine_gemm"][key]) for m in mols)
        if any(r["precision"] == ("fp64" if key == "dgemm_gflops" else "fp32") for r in rows):
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color="black", linestyle=style, label=label)
    label_axes(ax, "GFLOP/s (needed flops / energy-step wall time)",
               "Energy step rate vs the machine's GEMM rate (M=N=4·nvir, K=naux)")
    save(fig, "amdahl_gflops.png")

    floors = [row for m in mols for row in floor_rows(m)]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.8))
    for stage in FLOORED:
        pts = sorted((r["nbf"], r["ratio"], r["whole_if_floor"]) for r in floors if r["stage"] == stage)
        if pts:
            ax1.plot([p[0] for p in pts], [p[1] for p in pts], color=colors[stage], marker="o", label=stage)
            ax2.plot([p[0] for p in pts], [p[2] for p in pts], color=colors[stage], marker="o", label=stage)
    ax1.axhline(1.0, color="black", linewidth=0.8)
    ax1.axhline(1.5, color="black", linewidth=0.8, linestyle=":")
    label_axes(ax1, "wall time / floor", "Each stage against its floor (GEMM work at the start-up GEMM rate + libint2 time)")
    ax2.axhline(1.0, color="black", linewidth=0.8)
    label_axes(ax2, "whole-run speedup if this stage alone ran at its floor",
               "Amdahl: what each stage's distance from its floor costs the run")
    save(fig, "amdahl_floors.png", title + "; energy step: fused fp64")


def fmt(value, spec):
    return "" if value is None else format(value, spec)


def print_table(rows):
    print(f"{'molecule':<18}{'nbf':>5} {'backend':<10}{'prec':<5}{'E step s':>9}{'whole s':>9}"
          f"{'f':>6}{'s':>7}{'pred E':>7}{'meas E':>7}{'pred W':>7}{'meas W':>7}{'vsPsi4':>7}  note")
    for r in sorted(rows, key=lambda r: (r["nbf"], PRECISIONS.index(r["precision"]), BACKENDS.index(r["backend"]))):
        print(f"{r['molecule']:<18}{r['nbf']:>5} {r['backend']:<10}{r['precision']:<5}{r['energy_s']:>9.3f}"
              f"{r['whole_s']:>9.3f}{fmt(r.get('f'), '6.3f'):>6}{fmt(r.get('s'), '7.2f'):>7}"
              f"{fmt(r.get('predicted_energy'), '7.2f'):>7}{fmt(r.get('measured_energy'), '7.2f'):>7}"
              f"{fmt(r.get('predicted_whole'), '7.2f'):>7}{fmt(r.get('measured_whole'), '7.2f'):>7}"
              f"{fmt(r.get('speedup_vs_psi4'), '7.2f'):>7}  {r['note']}")


def write_markdown(path, molecules, rows, machine, settings):
    """The tables of docs/benchmarks.md, from this run's numbers."""
    def cell(value, spec):
        return "–" if value is None else format(value, spec)

    by_key = {(r["molecule"], r["backend"], r["precision"]): r for r in rows}
    kernels = machine.get("blas_kernels", "unknown")
    lines = [f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['blas']}, kernel set {kernels} "
             f"(OPENBLAS_CORETYPE {settings.get('openblas_coretype') or 'unset'}; Psi4 loads the same library); "
             f"{settings['threads']} threads; basis {settings['basis']} / {settings['df_basis']} / "
             f"{settings['jk_basis']}.", "",
             "### Sizes, stage times (s) and Psi4", "",
             "| molecule | natom | nbf | naux | nocc | nvir | integrals | SCF | DF transform | energy reference | "
             "energy fused | whole fused | Psi4 | dfmp2 / Psi4 speedup | ΔE_SCF (Eh) | ΔE_corr (Eh) | load |",
             "|---" * 17 + "|"]
    for m in molecules:
        ref, fused = by_key.get((m["name"], "reference", "fp64")), by_key.get((m["name"], "fused", "fp64"))
        if ref is None or fused is None:
            continue
        lines.append(
            f"| {m['name']} | {m['natom']} | {m['nbf']} | {m['naux']} | {m['nocc']} | {m['nvir']} | "
            f"{stage_seconds(m, 'integrals'):.3f} | {stage_seconds(m, 'scf'):.3f} | {stage_seconds(m, 'df_transform'):.3f} | "
            f"{ref['energy_s']:.3f} | {fused['energy_s']:.3f} | {fused['whole_s']:.3f} | "
            f"{cell(fused.get('psi4_s'), '.2f')} | {cell(fused.get('speedup_vs_psi4'), '.2f')} | "
            f"{cell(fused.get('de_scf'), '.1e')} | {cell(fused.get('de_corr'), '.1e')} | "
            f"{max(m['loadavg_1min']):.1f} |")
    lines += ["", "### Every stage against its floor (energy step: fused fp64)", "",
              "Floor: the stage's GEMM work at the GEMM rate measured at start-up plus libint2's own time for "
              "its integrals (a timed sample); whole-run bound: the whole run's speedup if that stage alone "
              "ran at its floor.", "",
              "| molecule | nbf | stage | wall (s) | floor (s) | wall / floor | share of run | whole-run bound |",
              "|---" * 8 + "|"]
    for m in molecules:
        for r in floor_rows(m):
            lines.append(f"| {r['molecule']} | {r['nbf']} | {r['stage']} | {r['wall_s']:.3f} | {r['floor_s']:.3f} | "
                         f"{r['ratio']:.2f} | {100 * r['share']:.0f} % | {r['whole_if_floor']:.3f}× |")
    lines += ["", "### Amdahl: each backend against reference (same precision)", "",
              "| molecule | nbf | backend | precision | energy step (s) | GEMM (s) | reduction (s) | "
              "ref GEMM (s) | ref reduction (s) | accelerated part | f | s | GEMM ratio ref/backend | "
              "predicted | measured | f whole | predicted whole | measured whole | note |",
              "|---" * 19 + "|"]
    for r in rows:
        if r["backend"] == "reference":
            continue
        lines.append(
            f"| {r['molecule']} | {r['nbf']} | {r['backend']} | {r['precision']} | {r['energy_s']:.3g} | "
            f"{cell(r['gemm_s'], '.3g')} | {cell(r['reduction_s'], '.3g')} | {cell(r.get('ref_gemm_s'), '.3g')} | "
            f"{cell(r.get('ref_reduction_s'), '.3g')} | {r.get('accelerated', '–')} | {cell(r.get('f'), '.3f')} | "
            f"{cell(r.get('s'), '.2f')} | {cell(r.get('gemm_ratio'), '.2f')} | {cell(r.get('predicted_energy'), '.2f')}× | "
            f"{cell(r.get('measured_energy'), '.2f')}× | {cell(r.get('f_whole'), '.3f')} | "
            f"{cell(r.get('predicted_whole'), '.3f')}× | {cell(r.get('measured_whole'), '.3f')}× | {r['note']} |")
    precisions = [p for p in PRECISIONS if any(r["precision"] == p for r in rows)]
    combos = [(b, p) for p in precisions for b in BACKENDS]
    lines += ["", "### Energy-step rate (GFLOP/s of needed work) beside the machine's GEMM rate", "",
              "| molecule | nbf | " + " | ".join(f"{b} {p}" for b, p in combos) + " | DGEMM | SGEMM |",
              "|---" * (len(combos) + 4) + "|"]
    for m in molecules:
        cells = [cell(by_key[(m['name'], b, p)]["gflops"], ".1f") if (m["name"], b, p) in by_key else "–"
                 for b, p in combos]
        lines.append(f"| {m['name']} | {m['nbf']} | " + " | ".join(cells) +
                     f" | {m['machine_gemm']['dgemm_gflops']:.1f} | {m['machine_gemm']['sgemm_gflops']:.1f} |")
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=str(REPO / "build"), help="build directory (default build/)")
    p.add_argument("--binary", help="dfmp2_amdahl itself (default <build-dir>/bench/amdahl/dfmp2_amdahl)")
    p.add_argument("--out", default=str(REPO / "results"), help="output directory (default results/)")
    p.add_argument("--basis", default="cc-pvdz")
    p.add_argument("--df-basis", help="default <basis>-ri")
    p.add_argument("--jk-basis", help="default <basis>-jkfit")
    p.add_argument("--molecules", help=f"comma-separated names from inputs/series/ (default {','.join(SERIES)})")
    p.add_argument("--precisions", default="fp64,fp32")
    p.add_argument("--repeat", type=int, help="energy-step repetitions, best kept (default 3/2/1 by size)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="threads for dfmp2 and Psi4")
    # 12GB: the DF-SCF of a 624-function molecule holds a 9 GiB three-index tensor.
    p.add_argument("--memory", default="12GB", help="memory for dfmp2 and Psi4 (default 12GB)")
    p.add_argument("--quick", action="store_true", help="smallest three molecules, fp64 only")
    p.add_argument("--no-psi4", action="store_true", help="do not run Psi4 (nor use its cache)")
    p.add_argument("--rerun-psi4", action="store_true", help="ignore cached Psi4 results")
    p.add_argument("--replot", action="store_true",
                   help="run nothing: redo the analysis, tables and plots from <out>/amdahl.json")
    args = p.parse_args()
    args.df_basis = args.df_basis or f"{args.basis}-ri"
    args.jk_basis = args.jk_basis or f"{args.basis}-jkfit"
    if args.replot:
        replot(Path(args.out))
        return
    binary = Path(args.binary or Path(args.build_dir) / "bench" / "amdahl" / "dfmp2_amdahl")
    if not binary.exists():
        sys.exit(f"amdahl.py: {binary} not found: build the dfmp2_amdahl target first")
    names = args.molecules.split(",") if args.molecules else (QUICK_SERIES if args.quick else SERIES)
    precisions = ["fp64"] if args.quick else args.precisions.split(",")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    use_psi4 = not args.no_psi4 and shutil.which("psi4") is not None
    cache_path = out / "psi4_series.json"
    cache = json.loads(cache_path.read_text()) if use_psi4 and cache_path.exists() else {}
    machine = machine_info()

    settings = {"basis": args.basis, "df_basis": args.df_basis, "jk_basis": args.jk_basis,
                "threads": args.threads, "memory": args.memory, "precisions": precisions,
                "psi4": use_psi4, "openblas_coretype": openblas_coretype(), "tolerance": TOLERANCE,
                "psi4_energy_tolerance": PSI4_ENERGY_TOL}
    molecules, rows, failed = [], [], []
    with tempfile.TemporaryDirectory(prefix="amdahl_") as work:
        for name, xyz in [(name, find_xyz(name)) for name in names]:  # every geometry found first
            nelec = electrons(read_xyz(xyz))
            # Small molecules are quick and noisy: more repetitions (the best is kept).
            repeat = args.repeat or (3 if nelec <= 100 else 2 if nelec <= 200 else 1)
            print(f"amdahl.py: {name} ({xyz.relative_to(REPO)}), repeat {repeat}", file=sys.stderr, flush=True)
            load_before = os.getloadavg()[0]
            mol = run_dfmp2(binary, xyz, args, precisions, repeat, work)
            if mol is None:  # reported on stderr; the other molecules still run
                failed.append(name)
                continue
            mol["name"] = name
            machine["blas_kernels"] = mol["blas_kernels"]
            # Other jobs on the machine skew timings: keep the load seen around the run.
            mol["loadavg_1min"] = [load_before, os.getloadavg()[0]]
            mol["energy_spread"] = energy_spread(mol)
            psi4 = None
            if use_psi4:
                key = f"{name}|{args.basis}|{args.df_basis}|{args.jk_basis}"
                psi4 = cache.get(key)
                if (args.rerun_psi4 or psi4 is None or psi4.get("threads") != args.threads
                        or psi4.get("openblas_coretype") != openblas_coretype()):
                    print(f"amdahl.py: {name}: Psi4", file=sys.stderr, flush=True)
                    psi4 = cache[key] = run_psi4(xyz, args)
                    cache_path.write_text(json.dumps(cache, indent=2, sort_keys=True) + "\n")
            mol["psi4"] = psi4
            molecules.append(mol)
            rows += analyse(mol, psi4)
            # After every molecule, so a long run that stops part-way still leaves its results.
            write_outputs(out, machine, settings, molecules, rows, failed, final=False)
    write_outputs(out, machine, settings, molecules, rows, failed)
    if failed:
        sys.exit(f"amdahl.py: failed: {', '.join(failed)}")


def replot(out):
    """Analysis, tables and plots again from the raw measurements of an earlier amdahl.json."""
    data = json.loads((out / "amdahl.json").read_text())
    rows = [row for mol in data["molecules"] for row in analyse(mol, mol.get("psi4"))]
    write_outputs(out, data["machine"], data["settings"], data["molecules"], rows, data.get("failed", []))


def write_outputs(out, machine, settings, molecules, rows, failed, final=True):
    molecules.sort(key=lambda m: m["nbf"])
    rows.sort(key=lambda r: (r["nbf"], PRECISIONS.index(r["precision"]), BACKENDS.index(r["backend"])))
    (out / "amdahl.json").write_text(json.dumps(
        {"machine": machine, "settings": settings, "molecules": molecules, "rows": rows, "failed": failed},
        indent=2) + "\n")
    write_csv(out / "amdahl.csv", rows)
    write_markdown(out / "amdahl.md", molecules, rows, machine, settings)
    plot(out, molecules, rows, machine, settings["basis"])
    if not final:
        return
    print_table(rows)
    for mol in molecules:
        for precision, spread in mol["energy_spread"].items():
            if precision == "fp64" and spread > 1e-8:
                print(f"amdahl.py: warning: {mol['name']} fp64 backends disagree: {spread:.1e} relative")
    print(f"amdahl.py: wrote {out}/amdahl.csv, amdahl.json, amdahl.md, amdahl_speedup.png, amdahl_stages.png, "
          f"amdahl_gflops.png, amdahl_floors.png", file=sys.stderr)


if __name__ == "__main__":
    main()
