#!/usr/bin/python3
"""What effective core potentials cost: dfmp2's DF-MP2 energy and --gradient runs of a molecule
with ECP atoms, the share of each run its ECP integrals and their derivatives take (the timings'
integrals_ecp and gradient_ecp, parts of the integrals and gradient stages), and Psi4 1.3's
energy('mp2') and gradient('mp2') of the same molecule end to end beside them; the four runs
alternate --repeat times (medians).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/ecp_cost.py \\
        iodobenzene-dimer --repeat 3

MOLECULE is a name in inputs/ (inputs/series/) or a path to an XYZ file. Same settings for both
programs: def2-SVP with its ECPs, def2-SVP-RI (MP2) and def2-SVP-JKFIT (SCF), all electrons, SCF
to d_convergence 1e-8 (dfmp2's default). Psi4 1.3.2 has no ECP gradient of its own: a failed
Psi4 gradient is recorded as such (its last error line), and a gradient it does return is
compared with dfmp2's. Writes <out>/ecp_cost.json (every run) and ecp_cost.md.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: geometries, machine description, Psi4's settings)
import gradient_cost  # noqa: E402  (its command line and gradient comparison)

PSI4_RESULTS = """
import json
with open('psi4_result.json', 'w') as f:
    json.dump({'e_total': variable('MP2 TOTAL ENERGY'), 'gradient': g.to_array().tolist() if g is not None else None}, f)
"""
PSI4_DRIVERS = {"energy": "g = None\nenergy('mp2')", "gradient": "g = gradient('mp2')"}


def xyz_path(name):
    return Path(name) if Path(name).is_file() else amdahl.find_xyz(name)


def run_dfmp2(xyz, args, workdir, gradient):
    out = Path(workdir) / "run.json"
    cmd = [args.binary, str(xyz), "--basis", args.basis, "--threads", str(args.threads), "--memory", args.memory,
           "--json", str(out), "--quiet"] + (["--gradient"] if gradient else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    result = json.loads(out.read_text())
    timings = result["timings"]
    ecp_s = timings.get("integrals_ecp", 0.0) + timings.get("gradient_ecp", 0.0)
    return {"total_s": timings["total"], "ecp_s": ecp_s, "ecp_share": ecp_s / timings["total"], "timings": timings,
            "e_total": result["e_total"], "gradient": result.get("gradient"),
            "peak_rss_bytes": result["resources"]["peak_rss_bytes"], "blas_kernels": result["blas_kernels"]}


def run_psi4(xyz, args, driver):
    """Psi4's energy('mp2') or gradient('mp2'): its own wall time, energy and gradient, or the
    last error line of a run that failed."""
    atoms = "\n".join(" ".join(a) for a in amdahl.read_xyz(xyz))
    memory = args.memory.lower().replace("gb", " gb").replace("mb", " mb")
    with tempfile.TemporaryDirectory(prefix="ecp_cost_psi4_") as tmp:
        (Path(tmp) / "in.dat").write_text(amdahl.PSI4_SETTINGS.format(
            memory=memory, atoms=atoms, basis=args.basis, jk_basis=f"{args.basis}-jkfit", df_basis=f"{args.basis}-ri",
            scf_type="df") + PSI4_DRIVERS[driver] + PSI4_RESULTS)
        start = time.perf_counter()
        done = subprocess.run(["psi4", "-n", str(args.threads), "in.dat", "out.dat"], cwd=tmp,
                              env=dict(os.environ, PSI_SCRATCH=tmp), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
        process_seconds = time.perf_counter() - start
        text = (Path(tmp) / "out.dat").read_text() if (Path(tmp) / "out.dat").exists() else ""
        if done.returncode != 0:
            errors = [line.strip() for line in (done.stderr + text).splitlines() if "Error" in line]
            return {"failed": errors[-1] if errors else f"status {done.returncode}", "process_s": process_seconds}
        result = json.loads((Path(tmp) / "psi4_result.json").read_text())
    m = re.search(r"Psi4 wall time for execution: (\d+):(\d+):([\d.]+)", text)
    wall = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else process_seconds
    return {"total_s": wall, "process_s": process_seconds, **result}


def summarise(runs):
    """Medians per run kind, and what dfmp2's and Psi4's runs of one kind share."""
    summary = {}
    for kind in ("energy", "gradient"):
        ours, psi4 = runs[kind], runs["psi4_" + kind]
        row = {"dfmp2_s": statistics.median(r["total_s"] for r in ours),
               "ecp_s": statistics.median(r["ecp_s"] for r in ours),
               "ecp_share": statistics.median(r["ecp_share"] for r in ours)}
        if all("failed" not in p for p in psi4):
            row["psi4_s"] = statistics.median(p["total_s"] for p in psi4)
            row["psi4_over_dfmp2"] = statistics.median(p["total_s"] / r["total_s"] for r, p in zip(ours, psi4))
            row["e_total_difference"] = ours[0]["e_total"] - psi4[0]["e_total"]
            if kind == "gradient":
                row["max_abs_gradient_difference"] = gradient_cost.largest_difference(ours[0]["gradient"], psi4[0]["gradient"])
        else:
            row["psi4_failed"] = next(p["failed"] for p in psi4 if "failed" in p)
        summary[kind] = row
    return summary


def markdown(args, summary, machine, kernels):
    lines = [f"# ECP cost: {args.molecule}, {args.basis}", "",
             f"`bench/ecp_cost.py {args.molecule} --repeat {args.repeat}`; {machine['cpu']}, {args.threads} threads,",
             f"{machine['blas']}, kernels {kernels}; medians of {args.repeat} rounds, each round the four runs",
             "back to back.", "",
             "| run | dfmp2 wall (s) | ECP integrals (s) | ECP share | Psi4 1.3.2 wall (s) | Psi4 / dfmp2 |",
             "| --- | --- | --- | --- | --- | --- |"]
    for kind, row in summary.items():
        psi4 = (f"{row['psi4_s']:.2f} | {row['psi4_over_dfmp2']:.2f}×" if "psi4_s" in row
                else f"failed: {row['psi4_failed']} | –")
        lines.append(f"| {kind} | {row['dfmp2_s']:.2f} | {row['ecp_s']:.3f} | {100 * row['ecp_share']:.1f}% | {psi4} |")
    lines.append("")
    for kind, row in summary.items():
        if "e_total_difference" in row:
            lines.append(f"- {kind}: ΔE_total (dfmp2 − Psi4) {row['e_total_difference']:.1e} Eh")
        if "max_abs_gradient_difference" in row:
            lines.append(f"- largest |Δg| between the programs: {row['max_abs_gradient_difference']:.1e} Eh/bohr")
    lines.append("- ECP integrals: the timings' integrals_ecp (energy run), integrals_ecp + gradient_ecp (gradient run)")
    return "\n".join(lines) + "\n"


def main():
    args = gradient_cost.side_by_side_arguments(__doc__, "iodobenzene-dimer", "def2-svp")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # before the runs: a folder that cannot be made fails first
    xyz = xyz_path(args.molecule)
    runs = {"energy": [], "gradient": [], "psi4_energy": [], "psi4_gradient": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.repeat):
            runs["energy"].append(run_dfmp2(xyz, args, work, gradient=False))
            runs["gradient"].append(run_dfmp2(xyz, args, work, gradient=True))
            runs["psi4_energy"].append(run_psi4(xyz, args, "energy"))
            runs["psi4_gradient"].append(run_psi4(xyz, args, "gradient"))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1].get('total_s', float('nan')):.2f} s"
                                                      for k, v in runs.items()), file=sys.stderr)
    summary = summarise(runs)
    machine, kernels = amdahl.machine_info(), runs["energy"][0]["blas_kernels"]
    record = {"molecule": args.molecule, "basis": args.basis, "threads": args.threads, "repeat": args.repeat,
              "machine": machine, "openblas_coretype": amdahl.openblas_coretype(), "blas_kernels": kernels,
              "summary": summary, "runs": runs}
    (out / "ecp_cost.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "ecp_cost.md").write_text(markdown(args, summary, machine, kernels))
    print((out / "ecp_cost.md").read_text())


if __name__ == "__main__":
    main()
