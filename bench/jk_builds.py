#!/usr/bin/python3
"""DF-SCF J/K builds of two dfmp2 binaries side by side: each binary's first SCF iterations
(--max-iterations N, which then stops with "did not converge") on molecules of inputs/scale/,
in fp64 (--fp32-until 0) and with the default fp32 start, the binaries alternating. Each build's
wall time comes from its progress line on stderr; the table gives the median of builds 2..N
(build 1 is from the SAD guess, whose factor is wider) and the last iteration's gradient RMS of
each binary (the two must agree). A build shows its progress line only when it lasts over about
half a second: the molecules must be large enough (water15's fp32 builds are not).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/jk_builds.py \\
        --before /tmp/dfmp2-before --after build/src/dfmp2 --molecules water40,c40h82

Writes <out>/jk_builds.{json,md}.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: machine description)

REPO = amdahl.REPO
BUILD = re.compile(r"SCF J/K build (\d+): 100\.0% done, ([0-9.]+) s elapsed")
LAST = re.compile(r"did not converge in \d+ iterations \(last ΔE (\S+) Eh, gradient RMS (\S+)\)")


def builds(binary, molecule, precision, args):
    cmd = [binary, str(REPO / "inputs" / "scale" / f"{molecule}.xyz"), "--basis", args.basis,
           "--max-iterations", str(args.iterations), "--threads", str(args.threads)]
    if molecule.startswith("c"):
        cmd.append("--frozen-core")
    if precision == "fp64":
        cmd += ["--fp32-until", "0"]
    err = subprocess.run(cmd, capture_output=True, text=True).stderr
    seconds = {int(k): float(t) for k, t in BUILD.findall(err)}
    last = LAST.search(err)
    if len(seconds) != args.iterations or last is None:
        sys.exit(f"jk_builds.py: {' '.join(cmd)} did not run {args.iterations} iterations:\n{err[-2000:]}")
    return {"seconds": [seconds[k] for k in sorted(seconds)], "gradient_rms": float(last.group(2))}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True)
    p.add_argument("--after", default=str(REPO / "build" / "src" / "dfmp2"))
    p.add_argument("--molecules", default="water25,water40,c20h42,c40h82")
    p.add_argument("--basis", default="cc-pvdz")
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--out", default=str(REPO / "results"))
    args = p.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)  # before the runs: a bad --out fails at once
    runs = []
    for molecule in args.molecules.split(","):
        for precision in ("fp64", "fp32"):
            run = {"molecule": molecule, "precision": precision}
            for which in ("before", "after"):
                print(f"jk_builds.py: {molecule} {precision} {which}", file=sys.stderr, flush=True)
                run[which] = builds(getattr(args, which), molecule, precision, args)
            runs.append(run)
    machine = amdahl.machine_info()
    out = Path(args.out)
    (out / "jk_builds.json").write_text(json.dumps({"machine": machine, "settings": vars(args), "runs": runs},
                                                   indent=2) + "\n")
    lines = ["# DF-SCF J/K builds, two binaries side by side", "",
             f"`bench/jk_builds.py`; {machine['cpu']}, {machine['cores']} cores, {machine['blas']}; "
             f"{args.threads} threads; {args.basis}, alkanes `--frozen-core`; before: `{args.before}`, "
             f"after: `{args.after}`; the first {args.iterations} SCF iterations of each, alternating. "
             "Seconds per J/K build: build 1 (from the SAD guess), then the median of the others.", "",
             "| molecule | precision | before: build 1, median s | after: build 1, median s | after / before "
             "| gradient RMS before / after |",
             "|---|---|---|---|---|---|"]
    for r in runs:
        b, a = r["before"]["seconds"], r["after"]["seconds"]
        mb, ma = statistics.median(b[1:]), statistics.median(a[1:])
        lines.append(f"| {r['molecule']} | {r['precision']} | {b[0]:.1f}, {mb:.2f} | {a[0]:.1f}, {ma:.2f} "
                     f"| {ma / mb:.2f} | {r['before']['gradient_rms']:.6g} / {r['after']['gradient_rms']:.6g} |")
    (out / "jk_builds.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
