#!/usr/bin/python3
"""What a DF-MP2 gradient costs: dfmp2's energy run, its --gradient run and Psi4 1.3's
gradient('mp2') on one molecule, side by side, alternating the three --repeat times (medians).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/gradient_cost.py \\
        naphthalene-dimer --repeat 3

Same settings for both programs: cc-pVDZ with cc-pVDZ-RI (MP2) and cc-pVDZ-JKFIT (SCF), all
electrons, SCF to d_convergence 1e-8 (dfmp2's default); Psi4's CPHF at its default
solver_convergence (1e-6), dfmp2's Z-vector to every residual element below the SCF's
d_convergence (1e-8). Reports the whole-run wall times (dfmp2's JSON `total`, Psi4's own "wall
time for execution"), the ratios, dfmp2's gradient stage, and the largest difference between the
two programs' gradients.
Writes <out>/gradient_cost.json (every run) and gradient_cost.md.
"""
import argparse
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
import amdahl  # noqa: E402  (same folder: geometries, machine description, basis environment)

PSI4_INPUT = amdahl.PSI4_SETTINGS + """g = gradient('mp2')
import json
with open('psi4_gradient.json', 'w') as f:
    json.dump({{'e_total': variable('MP2 TOTAL ENERGY'), 'gradient': g.to_array().tolist()}}, f)
"""


def run_dfmp2(binary, xyz, args, workdir, gradient):
    out = Path(workdir) / "run.json"
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--threads", str(args.threads), "--memory", args.memory,
           "--json", str(out), "--quiet"] + (["--gradient"] if gradient else [])
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    result = json.loads(out.read_text())
    return {"total_s": result["timings"]["total"], "timings": result["timings"], "e_total": result["e_total"],
            "gradient": result.get("gradient"), "peak_rss_bytes": result["resources"]["peak_rss_bytes"],
            "blas_kernels": result["blas_kernels"], "scf_iterations": result["scf_iterations"]}


def run_psi4(xyz, args):
    atoms = "\n".join(" ".join(a) for a in amdahl.read_xyz(xyz))
    memory = args.memory.lower().replace("gb", " gb").replace("mb", " mb")
    with tempfile.TemporaryDirectory(prefix="gradient_psi4_") as tmp:
        (Path(tmp) / "in.dat").write_text(PSI4_INPUT.format(
            memory=memory, atoms=atoms, basis=args.basis, jk_basis=f"{args.basis}-jkfit", df_basis=f"{args.basis}-ri",
            scf_type="df"))
        start = time.perf_counter()
        subprocess.run(["psi4", "-n", str(args.threads), "in.dat", "out.dat"], cwd=tmp,
                       env=dict(os.environ, PSI_SCRATCH=tmp), check=True, stdout=subprocess.DEVNULL)
        process_seconds = time.perf_counter() - start
        result = json.loads((Path(tmp) / "psi4_gradient.json").read_text())
        text = (Path(tmp) / "out.dat").read_text()
    m = re.search(r"Psi4 wall time for execution: (\d+):(\d+):([\d.]+)", text)
    wall = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3)) if m else process_seconds
    return {"total_s": wall, "process_s": process_seconds, **result}


def largest_difference(a, b):
    return max(abs(x - y) for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def side_by_side_arguments(doc, molecule, basis):
    """The command line of a benchmark beside Psi4 (this one's, bench/ecp_cost.py's)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("molecule", nargs="?", default=molecule)
    parser.add_argument("--basis", default=basis)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--memory", default="8GB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--binary", default=str(amdahl.REPO / "build" / "src" / "dfmp2"))
    parser.add_argument("--out", default=str(amdahl.REPO / "results"))
    return parser.parse_args()


def main():
    args = side_by_side_arguments(__doc__, "naphthalene-dimer", "cc-pvdz")
    xyz = amdahl.find_xyz(args.molecule)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # before the runs: a folder that cannot be made fails first
    runs = {"energy": [], "gradient": [], "psi4_gradient": []}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.repeat):
            runs["energy"].append(run_dfmp2(args.binary, xyz, args, work, gradient=False))
            runs["gradient"].append(run_dfmp2(args.binary, xyz, args, work, gradient=True))
            runs["psi4_gradient"].append(run_psi4(xyz, args))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]['total_s']:.2f} s" for k, v in runs.items()),
                  file=sys.stderr)
    median = {k: statistics.median(r["total_s"] for r in v) for k, v in runs.items()}
    gradient_stage = statistics.median(r["timings"]["gradient"] for r in runs["gradient"])
    # Ratios within each round (the runs of one round ran back to back), then their medians.
    per_round = list(zip(runs["energy"], runs["gradient"], runs["psi4_gradient"]))
    over_energy = statistics.median(g["total_s"] / e["total_s"] for e, g, _ in per_round)
    psi4_over = statistics.median(p["total_s"] / g["total_s"] for _, g, p in per_round)
    dg = largest_difference(runs["gradient"][0]["gradient"], runs["psi4_gradient"][0]["gradient"])
    de = runs["gradient"][0]["e_total"] - runs["psi4_gradient"][0]["e_total"]
    summary = {"molecule": args.molecule, "basis": args.basis, "threads": args.threads, "repeat": args.repeat,
               "machine": amdahl.machine_info(), "openblas_coretype": amdahl.openblas_coretype(),
               "blas_kernels": runs["energy"][0]["blas_kernels"], "median_total_s": median,
               "median_gradient_stage_s": gradient_stage, "gradient_over_energy": over_energy,
               "psi4_gradient_over_dfmp2_gradient": psi4_over, "max_abs_gradient_difference": dg,
               "e_total_difference": de, "runs": runs}
    (out / "gradient_cost.json").write_text(json.dumps(summary, indent=1) + "\n")
    machine = summary["machine"]
    (out / "gradient_cost.md").write_text(f"""# DF-MP2 gradient cost: {args.molecule}, {args.basis}

`bench/gradient_cost.py {args.molecule} --repeat {args.repeat}`; {machine['cpu']}, {args.threads} threads,
{machine['blas']}, kernels {summary['blas_kernels']}; medians of {args.repeat} rounds, each round
the three runs back to back.

| run | wall (s) |
| --- | --- |
| dfmp2 energy | {median['energy']:.2f} |
| dfmp2 `--gradient` | {median['gradient']:.2f} (its gradient stage {gradient_stage:.2f}) |
| Psi4 1.3.2 `gradient('mp2')` | {median['psi4_gradient']:.2f} |

- dfmp2's gradient run / its energy run: **{over_energy:.2f}×** (median of the rounds' ratios)
- Psi4's gradient / dfmp2's gradient run: **{psi4_over:.2f}×**
- Largest |Δg| between the two programs: {dg:.1e} Eh/bohr; ΔE_total {de:.1e} Eh (SCF to
  d_convergence 1e-8 in both; Psi4's CPHF to its default 1e-6)
""")
    print((out / "gradient_cost.md").read_text())


if __name__ == "__main__":
    main()
