#!/usr/bin/python3
"""Model of dfmp2's time and memory per MPI rank, fitted to and checked on results/scaling.json.

    bench/scaling_model.py [--scaling results/scaling.json] [--nbf 3000] [--bandwidth 12.5]

Time: each stage's compute time per rank (its wall time minus the time in MPI calls) is
t(N) = a·g(N) + b: a is work the ranks share, g(N) how one rank's share falls — 1/N, except for
the integrals, whose (P|μν) of shell pairs straddling two row blocks are evaluated by both
ranks, g = (2N − 1)/N² — and b is what every rank repeats. a and b come from the runs with a
core per rank (1 and 2 ranks here); the time in MPI is modelled as the bytes a rank sends at the
bandwidth those runs showed. The model is checked on the oversubscribed runs, where N ranks
share the cores: compute time × N/cores. For a larger molecule of the same make-up (naux/nbf,
nocc/nbf kept) a scales with the stage's shared flops and b with what each rank repeats; one
core per rank at this machine's per-core rate, and docs/scaling.md's volumes at --bandwidth.
Memory: each stage's large arrays (docs/scaling.md) plus a baseline fitted on 1 rank, checked
against the measured peak RSS. Writes results/scaling_model.md and prints it.
"""
import argparse
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STAGES = ["integrals", "scf", "df_transform", "energy"]


def source_constant(path, pattern):
    """A constant read from dfmp2's own source, so that the model follows the program."""
    match = re.search(pattern, open(os.path.join(ROOT, path)).read())
    if not match:
        raise SystemExit(f"scaling_model.py: no match for {pattern!r} in {path}")
    return int(match.group(1))


DIIS_VECTORS = source_constant("src/scf/rhf.hpp", r"int diis_vectors = (\d+);")
# One slab of an all-to-all exchange.
SLAB_BYTES = source_constant("src/common/parallel.hpp",
                             r"kRedistributeSlabBytes = std::size_t\((\d+)\) << 20;") << 20


def packed(n):
    return n * (n + 1) / 2


def sizes(result):
    return dict(n=result["nbf"], X=result["naux_jk"], Q=result["naux"], o=result["nocc"],
                v=result["nvir"], iters=result["scf_iterations"])


def shared_work(s):
    """Flops the ranks divide among themselves, per stage."""
    n, X, Q, o, v, it = s["n"], s["X"], s["Q"], s["o"], s["v"], s["iters"]
    p = packed(n)
    return {"integrals": X * X * p,                           # fitting the packed SCF tensor
            "scf": it * (3.0 * X * n * n * o + 4.0 * X * p),  # K by SYMM + SYRK, J from it
            "df_transform": 2 * Q * n * n * o + 2 * Q * n * o * v + Q * Q * o * v,
            "energy": 2.0 * o * (o + 1) / 2 * v * v * Q}


def share(stage, N):
    """One rank's share of a stage's shared work on N ranks."""
    return (2.0 * N - 1) / N ** 2 if stage == "integrals" else 1.0 / N


def repeated_size(s):
    """What each rank repeats whatever N is, per stage: b scales with this."""
    n, X, Q, o, v, it = s["n"], s["X"], s["Q"], s["o"], s["v"], s["iters"]
    return {"integrals": X ** 3,           # metric factorisation, one-electron and Schwarz
            "scf": it * n ** 3,            # diagonalisation, DIIS
            "df_transform": Q ** 3,        # metric factorisation
            "energy": Q * o * v}           # packing the visiting chunks of B


def comm_bytes(s, N, elem=8):
    n, X, Q, o, v, it = s["n"], s["X"], s["Q"], s["o"], s["v"], s["iters"]
    if N == 1:
        return 0.0
    return (8.0 * X * packed(n) * (N - 1) / N ** 2 + it * 8.0 * n * n + 8.0 * Q * o * v * (N - 1) / N ** 2
            + elem * Q * o * v * (N // 2) / N)


def repeated_doubles(s):
    """What every rank holds whatever N is: the larger fitting metric with its factors
    (CoulombFitting::peak_bytes, 5 naux²) beside the SCF's matrices (scf_working_bytes)."""
    n, X, Q = s["n"], s["X"], s["Q"]
    return max(5 * X * X + (16 + 2 * DIIS_VECTORS) * n * n, 5 * Q * Q)


def memory_bytes(s, N):
    """Large arrays per rank in each stage, as dfmp2 counts them for its budget (docs/scaling.md);
    the peak is the largest. The AO three-index tensors are stored packed (μ ≥ ν); an all-to-all
    holds the old and the new layout plus one outgoing and one incoming slab
    (src/common/parallel.hpp); one thread per rank."""
    n, X, Q, o, v = s["n"], s["X"], s["Q"], s["o"], s["v"]
    p = packed(n)
    exchange = 1.0 if N == 1 else 2.0
    slabs = 0.0 if N == 1 else 2 * SLAB_BYTES / 8
    jk_workspace = 2 * (p + 3 * n * n + 1024 * n)  # kernels::packed_jk_workspace_bytes: one thread, RHF
    scf_setup = exchange * X * p / N + slabs + 5 * X * X
    stages = {"scf": max(scf_setup, X * p / N + jk_workspace) + (16 + 2 * DIIS_VECTORS) * n * n,
              "df_transform": 5 * Q * Q + Q * o * v / N + max(n * (n + o) + Q * p / N, exchange * Q * o * v / N),
              "energy": Q * o * v * (1 / N + 1 / (8 * N))}
    return {stage: 8.0 * d for stage, d in stages.items()}


def compute_seconds(result, stage):
    t = result["timings"]
    return t[stage] - t.get(stage + "_mpi", 0.0)


def fit(runs, cores):
    """a, b per stage by least squares over the runs with a core per rank; b ≥ 0."""
    own = sorted(N for N in runs if N <= cores)
    coefficients = {}
    for stage in STAGES:
        points = [(share(stage, N), compute_seconds(runs[N], stage)) for N in own]
        mx = sum(x for x, _ in points) / len(points)
        my = sum(y for _, y in points) / len(points)
        a = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
        b = my - a * mx
        if b < 0:  # no repeated part: a alone through the points
            a, b = sum(x * y for x, y in points) / sum(x * x for x, _ in points), 0.0
        coefficients[stage] = (a, b)
    return coefficients


def on_this_machine(coefficients, N, cores):
    slowdown = max(1.0, N / cores)  # oversubscribed ranks share the cores
    return {stage: (a * share(stage, N) + b) * slowdown for stage, (a, b) in coefficients.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scaling", default=os.path.join(ROOT, "results", "scaling.json"))
    parser.add_argument("--nbf", type=int, default=3000)
    parser.add_argument("--bandwidth", type=float, default=12.5, help="GB/s per rank (100 Gb/s link)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "scaling_model.md"))
    args = parser.parse_args()
    with open(args.scaling) as f:
        data = json.load(f)
    cores = data["cores"]
    runs = {r["ranks"]: r["result"] for r in data["runs"]}
    coefficients = fit(runs, cores)
    base = runs[1]
    s = sizes(base)
    mib = 2.0 ** 20
    mpi = lambda r: sum(r["timings"].get(stage + "_mpi", 0.0) for stage in STAGES)
    # Bytes per second through MPI on this machine, waiting included, from the runs with a core
    # per rank; what the stages leave of the total (set-up, output) is taken as fixed.
    own = [N for N in runs if 1 < N <= cores]
    rate = sum(runs[N]["rank_stats"][0]["bytes_sent"] for N in own) / sum(mpi(runs[N]) for N in own)
    other = base["timings"]["total"] - sum(base["timings"][stage] for stage in STAGES)

    lines = [f"## Model fitted on 1–{min(cores, max(runs))} ranks, checked on all measured runs "
             f"({cores} cores)", "",
             "Per-rank compute seconds t(N) = a·g(N) + b (g = (2N − 1)/N² for the integrals, 1/N "
             "otherwise): " +
             ", ".join(f"{p} a = {a:.2f}, b = {b:.2f}" for p, (a, b) in coefficients.items()) +
             f"; MPI at {rate / 1e9:.2f} GB/s sent per rank (waiting included).", "",
             "| ranks | " + " | ".join(f"{p} compute, measured / model (s)" for p in STAGES) +
             " | in MPI, measured / model (s) | total, measured / model (s) | model − measured | "
             "peak RSS, measured / model (MiB) |",
             "|---|" + "---|" * (len(STAGES) + 4)]
    baseline = max(r["peak_rss_bytes"] for r in base["rank_stats"]) - max(memory_bytes(s, 1).values())
    for N in sorted(runs):
        r = runs[N]
        model = on_this_machine(coefficients, N, cores)
        model_mpi = comm_bytes(s, N) / rate * max(1.0, N / cores)
        total = sum(model.values()) + model_mpi + other
        measured = r["timings"]["total"]
        measured_rss = max(x["peak_rss_bytes"] for x in r["rank_stats"])
        model_rss = baseline + max(memory_bytes(s, N).values())
        lines.append(
            f"| {N}{' (oversubscribed)' if N > cores else ''} | " +
            " | ".join(f"{compute_seconds(r, p):.1f} / {model[p]:.1f}" for p in STAGES) +
            f" | {mpi(r):.1f} / {model_mpi:.1f} | {measured:.1f} / {total:.1f} | "
            f"{100 * (total - measured) / measured:+.0f}% | {measured_rss / mib:.0f} / {model_rss / mib:.0f} |")

    scale = args.nbf / s["n"]
    big = {k: (round(v * scale) if k != "iters" else v) for k, v in s.items()}
    shared_ratio = {p: shared_work(big)[p] / shared_work(s)[p] for p in STAGES}
    repeated_ratio = {p: repeated_size(big)[p] / repeated_size(s)[p] for p in STAGES}
    big_coefficients = {p: (a * shared_ratio[p], b * repeated_ratio[p])
                        for p, (a, b) in coefficients.items()}
    lines += ["", f"## Model for nbf = {big['n']} (naux_jk {big['X']}, naux {big['Q']}, nocc {big['o']}, "
              f"nvir {big['v']}, {big['iters']} SCF iterations), one core per rank at this machine's "
              f"per-core rate, {args.bandwidth} GB/s network per rank", "",
              "| ranks | integrals / s | SCF / s | DF transform / s | energy / s | network / s | "
              "total / h | parallel efficiency | peak memory per rank / GiB (stage) | "
              "of which every rank repeats / GiB | sent per rank / GiB |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    repeated_memory = 8.0 * repeated_doubles(big)
    t1 = None
    for N in (1, 8, 16, 32, 64, 128, 256, 512):
        t = {p: a * share(p, N) + b for p, (a, b) in big_coefficients.items()}
        t["network"] = comm_bytes(big, N) / (args.bandwidth * 1e9)
        total = sum(t.values())
        t1 = t1 or total
        stage, peak = max(memory_bytes(big, N).items(), key=lambda item: item[1])
        lines.append(
            f"| {N} | {t['integrals']:.0f} | {t['scf']:.0f} | {t['df_transform']:.0f} | {t['energy']:.0f} | "
            f"{t['network']:.0f} | {total / 3600:.2f} | {t1 / (N * total):.2f} | "
            f"{peak / 2 ** 30:.1f} ({stage}) | {repeated_memory / 2 ** 30:.1f} | "
            f"{comm_bytes(big, N) / 2 ** 30:.1f} |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
