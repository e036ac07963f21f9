#!/usr/bin/python3
"""Where a DF-MP2 gradient run's time goes: dfmp2 --gradient on each molecule, its stages and the
gradient stage's phases (the JSON's timings: gradient_ri_b, _ampl, _ri_lag, _zvector, _jk_set,
_ri_set), the medians of --repeat runs, and what --device gpu moves to a GPU (the SCF's J/K
builds, the amplitude loop's products, the Fock responses of the Z-vector): the time left on the
CPU threads bounds what a GPU can buy (Amdahl).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/gradient_phases.py \\
        water15 water25 naphthalene-dimer --repeat 1

MOLECULE is a name in inputs/ (inputs/scale/, inputs/series/) or a path to an XYZ file; cc-pVDZ
with cc-pVDZ-RI and cc-pVDZ-JKFIT, all electrons, SCF to dfmp2's default d_convergence (1e-8).
The SCF stage is counted as moved whole, though only its J/K builds move (an upper bound on what
moves, so a lower bound on what stays). Writes <out>/gradient_phases.json and .md.
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

PHASES = [("ri_b", "B_ia^P (first RI pass, fit)"), ("ampl", "amplitude loop"),
          ("ri_lag", "Lagrangian's RI pass"), ("zvector", "Fock responses, Z-vector, W"),
          ("jk_set", "JK-set derivative terms"), ("ri_set", "RI-set derivative terms")]
ON_GPU = ["scf", "gradient_ampl", "gradient_zvector"]  # what --gradient --device gpu runs there


def find_xyz(name):
    scale = amdahl.REPO / "inputs" / "scale" / f"{name}.xyz"
    return Path(name) if Path(name).is_file() else scale if scale.exists() else amdahl.find_xyz(name)


def run_gradient(binary, xyz, args, workdir):
    out = Path(workdir) / "run.json"
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--threads", str(args.threads), "--json", str(out),
           "--quiet", "--gradient"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    result = json.loads(out.read_text())
    return {"timings": result["timings"], "nbf": result["nbf"], "blas_kernels": result["blas_kernels"]}


def medians(runs):
    return {key: statistics.median(run["timings"][key] for run in runs) for key in runs[0]["timings"]}


def row(name, nbf, t):
    moved = sum(t.get(key, 0.0) for key in ON_GPU)
    stays = t["total"] - moved
    phases = " | ".join(f"{t.get('gradient_' + key, 0.0):.2f}" for key, _ in PHASES)
    other = t["gradient"] - sum(t.get("gradient_" + key, 0.0) for key, _ in PHASES)
    return (f"| {name} | {nbf} | {t['total']:.2f} | {t['integrals']:.2f} | {t['scf']:.2f} | {t['gradient']:.2f} | "
            f"{phases} | {other:.2f} | {100 * moved / t['total']:.0f} % | {stays:.2f} | {t['total'] / stays:.2f}× |")


def write_markdown(path, summary, args):
    machine = summary["machine"]
    lines = [
        "# Where a DF-MP2 gradient run's time goes, and what --device gpu moves",
        "",
        f"`bench/gradient_phases.py {' '.join(args.molecules)} --repeat {args.repeat}`; {machine['cpu']}, "
        f"{args.threads} threads, {machine['blas']}, kernels {summary['blas_kernels']}; {args.basis} "
        f"(-RI, -JKFIT), medians of {args.repeat} run(s); seconds.",
        "",
        "Phases of the gradient stage (the JSON's `gradient_*` timings): " +
        "; ".join(f"`{key}` {what}" for key, what in PHASES) +
        "; `other`: the rest of the stage (one-electron and SCF-like derivative terms, the relaxed "
        "densities' set-up). `--gradient --device gpu` runs the SCF's J/K builds, the amplitude loop's "
        "products and the Z-vector's Fock responses on a GPU: *moved* counts the whole SCF stage, `ampl` "
        "and `zvector` (an upper bound: the SCF's diagonalisations and the loop's division stay on the "
        "CPU); *stays* is the rest of the run, and total / stays the most a GPU of any speed can give "
        "the whole run on these threads.",
        "",
        "| molecule | nbf | total | integrals | scf | gradient | " + " | ".join(key for key, _ in PHASES) +
        " | other | moved | stays | ceiling |",
        "| --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in PHASES) +
        " | ---: | ---: | ---: | ---: |",
    ]
    for mol in summary["molecules"]:
        lines.append(row(mol["name"], mol["nbf"], mol["median"]))
    Path(path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("molecules", nargs="+")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--basis", default="cc-pvdz")
    parser.add_argument("--binary", default=str(amdahl.REPO / "build" / "src" / "dfmp2"))
    parser.add_argument("--out", default=str(amdahl.REPO / "results"))
    args = parser.parse_args()
    molecules, kernels = [], None
    with tempfile.TemporaryDirectory(prefix="gradient_phases_") as tmp:
        for name in args.molecules:
            xyz = find_xyz(name)
            runs = [run_gradient(args.binary, xyz, args, tmp) for _ in range(args.repeat)]
            kernels = runs[0]["blas_kernels"]
            molecules.append({"name": xyz.stem, "nbf": runs[0]["nbf"], "runs": [r["timings"] for r in runs],
                              "median": medians(runs)})
            print(row(xyz.stem, runs[0]["nbf"], molecules[-1]["median"]), flush=True)
    summary = {"machine": amdahl.machine_info(), "openblas_coretype": amdahl.openblas_coretype(),
               "blas_kernels": kernels, "threads": args.threads, "basis": args.basis, "molecules": molecules}
    Path(args.out, "gradient_phases.json").write_text(json.dumps(summary, indent=1) + "\n")
    write_markdown(Path(args.out, "gradient_phases.md"), summary, args)


if __name__ == "__main__":
    main()
