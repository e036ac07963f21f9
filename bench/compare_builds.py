#!/usr/bin/python3
"""Two dfmp2 builds side by side: the energy run and the RHF --gradient run of one molecule, and a UHF
--gradient run of a cation (doublet; --uhf-molecule, by default the same molecule's; the
naphthalene dimer's cation is a poor one: its UHF SCF crawls below |grad| 1e-9 and may stop at 100
iterations), each case run by both binaries back to back,
alternating which goes first, --repeat rounds; medians and the median of the rounds' ratios.
For a refactor that must not cost speed (issue 42: energy and RHF gradient within 3 %, UHF faster).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 bench/compare_builds.py \\
        --baseline OLD/build/src/dfmp2 --out results/compare_builds naphthalene-dimer --repeat 3

cc-pVDZ with cc-pVDZ-RI and cc-pVDZ-JKFIT, all electrons, defaults otherwise. Writes
<out>/compare_builds.json (every run) and compare_builds.md; also checks that both builds give the
same energies (to 1e-9 Eh) and gradients (to 1e-8 Eh/bohr), says where they do not in the report,
and exits non-zero then.
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

CASES = {"energy": [], "rhf_gradient": ["--gradient"], "uhf_gradient": ["--gradient", "--charge", "1", "--multiplicity", "2"]}
ENERGY_AGREEMENT = 1e-9    # Eh: the builds' sums differ by threaded-order noise (~1e-12) only
GRADIENT_AGREEMENT = 1e-8  # Eh/bohr


def run(binary, xyz, args, extra, workdir):
    out = Path(workdir) / "run.json"
    cmd = [str(binary), str(xyz), "--basis", args.basis, "--threads", str(args.threads), "--memory", args.memory,
           "--json", str(out), "--quiet", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=amdahl.basis_environment(args.basis))
    result = json.loads(out.read_text())
    return {"total_s": result["timings"]["total"], "timings": result["timings"], "e_total": result["e_total"],
            "gradient": result.get("gradient"), "peak_rss_bytes": result["resources"]["peak_rss_bytes"],
            "blas_kernels": result["blas_kernels"]}


def rounds(args, xyz, uhf_xyz):
    """Every case, --repeat times, both builds back to back (the first alternating)."""
    builds = {"baseline": args.baseline, "new": args.binary}
    runs = {case: {"baseline": [], "new": []} for case in CASES}
    with tempfile.TemporaryDirectory() as work:
        for round_ in range(args.repeat):
            order = ["baseline", "new"] if round_ % 2 == 0 else ["new", "baseline"]
            for case, extra in CASES.items():
                for build in order:
                    molecule = uhf_xyz if case == "uhf_gradient" else xyz
                    runs[case][build].append(run(builds[build], molecule, args, extra, work))
                print(f"round {round_ + 1} {case}: " + ", ".join(
                    f"{b} {runs[case][b][-1]['total_s']:.2f} s" for b in order), file=sys.stderr)
    return runs


def disagreements(runs):
    """Where the builds' results differ beyond the thresholds: a faster wrong build is no result."""
    found = []
    for case, by_build in runs.items():
        old, new = by_build["baseline"][0], by_build["new"][0]
        if abs(old["e_total"] - new["e_total"]) > ENERGY_AGREEMENT:
            found.append(f"{case}: E_total differs by {old['e_total'] - new['e_total']:.2e} Eh")
        if old["gradient"] is not None:
            dg = max(abs(x - y) for a, b in zip(old["gradient"], new["gradient"]) for x, y in zip(a, b))
            if dg > GRADIENT_AGREEMENT:
                found.append(f"{case}: gradients differ by {dg:.2e} Eh/bohr")
    return found


def summarise(runs):
    rows = {}
    for case, by_build in runs.items():
        ratios = [n["total_s"] / b["total_s"] for b, n in zip(by_build["baseline"], by_build["new"])]
        rows[case] = {build: statistics.median(r["total_s"] for r in rs) for build, rs in by_build.items()}
        rows[case]["new_over_baseline"] = statistics.median(ratios)
    return rows


def write_report(args, runs, rows, found):
    out = Path(args.out)
    machine = amdahl.machine_info()
    kernels = runs["energy"]["new"][0]["blas_kernels"]
    summary = {"molecule": args.molecule, "uhf_molecule": args.uhf_molecule or args.molecule, "basis": args.basis, "threads": args.threads, "repeat": args.repeat,
               "baseline": args.baseline, "binary": args.binary, "machine": machine, "blas_kernels": kernels,
               "openblas_coretype": amdahl.openblas_coretype(), "medians": rows, "disagreements": found, "runs": runs}
    (out / "compare_builds.json").write_text(json.dumps(summary, indent=1) + "\n")
    table = "\n".join(f"| {case} | {r['baseline']:.2f} | {r['new']:.2f} | {r['new_over_baseline']:.3f} |"
                      for case, r in rows.items())
    (out / "compare_builds.md").write_text(f"""# Two builds side by side: {args.molecule}, {args.basis}

`bench/compare_builds.py {args.molecule} --uhf-molecule {args.uhf_molecule or args.molecule} --repeat {args.repeat}`; baseline `{args.baseline}`, new
`{args.binary}`; {machine['cpu']}, {args.threads} threads, {machine['blas']}, kernels {kernels};
medians of {args.repeat} rounds (whole-run wall time, dfmp2's JSON `total`), each case run by both
builds back to back. uhf_gradient: the cation of {args.uhf_molecule or args.molecule}, doublet. The builds'
first rounds compared (energies to {ENERGY_AGREEMENT:g} Eh, gradients to {GRADIENT_AGREEMENT:g} Eh/bohr):
{"; ".join(found) if found else "they agree"}.

| case | baseline (s) | new (s) | new / baseline (median of rounds) |
| --- | --- | --- | --- |
{table}
""")
    print((out / "compare_builds.md").read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("molecule", nargs="?", default="naphthalene-dimer")
    parser.add_argument("--baseline", required=True, help="the earlier dfmp2 binary")
    parser.add_argument("--binary", default=str(amdahl.REPO / "build" / "src" / "dfmp2"))
    parser.add_argument("--uhf-molecule", help="the molecule whose cation the UHF case runs (default: MOLECULE)")
    parser.add_argument("--basis", default="cc-pvdz")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--memory", default="8GB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(amdahl.REPO / "results" / "compare_builds"))
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)  # before the runs: a bad --out fails at once
    runs = rounds(args, amdahl.find_xyz(args.molecule), amdahl.find_xyz(args.uhf_molecule or args.molecule))
    found = disagreements(runs)
    write_report(args, runs, summarise(runs), found)
    if found:
        sys.exit("compare_builds.py: the builds disagree: " + "; ".join(found))


if __name__ == "__main__":
    main()
