#!/usr/bin/python3
"""Strong scaling of dfmp2 under MPI on this machine: 1..N ranks, one thread each.

    bench/scaling.py [--molecule inputs/naphthalene-dimer.xyz] [--basis cc-pvdz] [--ranks 1,2,3,4]

Runs `mpirun -np N build/src/dfmp2 ... --threads 1 --json`, and writes results/scaling.json and
results/scaling.md: wall time per stage, speedup, rank 0's time inside MPI calls, bytes each
rank sent, its peak RSS and the largest share of B_ia^P it held. Ranks beyond the core count are oversubscribed (and say so).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(ranks, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        command = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", str(ranks),
                   os.path.join(args.build_dir, "src", "dfmp2"), args.molecule, "--basis", args.basis,
                   "--threads", "1", "--backend", args.backend, "--quiet", "--json", out]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--molecule", default=os.path.join(ROOT, "inputs", "naphthalene-dimer.xyz"))
    parser.add_argument("--basis", default="cc-pvdz")
    parser.add_argument("--backend", default="fused")
    parser.add_argument("--ranks", default="1,2,3,4")
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "results"))
    args = parser.parse_args()

    cores = os.cpu_count()
    runs = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        print(f"{ranks} rank(s)…", file=sys.stderr)
        result = run(ranks, args)
        runs.append({"ranks": ranks, "oversubscribed": ranks > cores, "result": result})

    base = runs[0]["result"]
    stages = ["integrals", "scf", "df_transform", "energy", "total"]
    lines = [
        f"# Strong scaling: {base['molecule']} {args.basis} (nbf {base['nbf']}, naux {base['naux']}, "
        f"naux_jk {base['naux_jk']}, nocc {base['nocc']}, nvir {base['nvir']}), backend {args.backend}, "
        f"1 thread per rank, {cores} cores",
        "",
        "| ranks | " + " | ".join(f"{s} / s" for s in stages) +
        " | speedup | rank 0 in MPI / s | max sent / MiB | max peak RSS / MiB | max B held / MiB | "
        "ΔE_corr vs 1 rank / Eh |",
        "|" + "---|" * (len(stages) + 7),
    ]
    for run_ in runs:
        r = run_["result"]
        stats = r["rank_stats"]
        mib = 1024.0 ** 2
        lines.append(
            f"| {run_['ranks']}{' (oversubscribed)' if run_['oversubscribed'] else ''} | " +
            " | ".join(f"{r['timings'][s]:.2f}" for s in stages) +
            f" | {base['timings']['total'] / r['timings']['total']:.2f}"
            f" | {sum(r['timings'].get(s + '_mpi', 0.0) for s in stages[:-1]):.2f}"
            f" | {max(s['bytes_sent'] for s in stats) / mib:.1f}"
            f" | {max(s['peak_rss_bytes'] for s in stats) / mib:.0f}"
            f" | {max(s['peak_b_bytes'] for s in stats) / mib:.1f}"
            f" | {r['e_corr'] - base['e_corr']:.1e} |")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scaling.json"), "w") as f:
        json.dump({"molecule": args.molecule, "basis": args.basis, "backend": args.backend,
                   "cores": cores, "runs": runs}, f, indent=1)
    with open(os.path.join(args.out, "scaling.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
