#!/usr/bin/python3
"""Model of dfmp2's time and memory per MPI rank, calibrated on results/scaling.json.

    bench/scaling_model.py [--scaling results/scaling.json] [--nbf 3000] [--bandwidth 12.5]

Each stage's time is split into work that the ranks share (divided by N) and work every rank
repeats (the metric factorisations, the SCF's diagonalisations), plus communication at the
volumes of docs/scaling.md over a link of --bandwidth GB/s per rank. The per-rank rates come
from the 1-rank run; the model is then checked against the measured 2..N-rank runs on this
machine (where ranks beyond the cores share them) and used for 8–512 ranks on a molecule with
--nbf functions of the same make-up as the measured one (naux/nbf, nocc/nbf kept).
Writes results/scaling_model.md and prints it.
"""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sizes(result):
    return dict(n=result["nbf"], X=result["naux_jk"], Q=result["naux"], o=result["nocc"],
                v=result["nvir"], iters=result["scf_iterations"])


def work(s):
    """Flop-like counts of each stage: shared across ranks, and repeated on every rank."""
    n, X, Q, o, v, it = s["n"], s["X"], s["Q"], s["o"], s["v"], s["iters"]
    return {
        # Fitting the SCF tensor (a triangular solve, X² n²) outgrows evaluating it (X n²).
        "integrals": dict(shared=X * X * n * n, repeated=9.0 * X ** 3),
        "scf": dict(shared=it * 4.0 * X * n * n * o, repeated=it * 10.0 * n ** 3),
        "df_transform": dict(shared=2 * Q * n * n * o + 2 * Q * n * o * v + Q * Q * o * v,
                             repeated=9.0 * Q ** 3),
        "energy": dict(shared=2.0 * o * (o + 1) / 2 * v * v * Q, repeated=0.0),
    }


def comm_bytes(s, N, elem=8):
    n, X, Q, o, v, it = s["n"], s["X"], s["Q"], s["o"], s["v"], s["iters"]
    if N == 1:
        return 0.0
    return (8.0 * X * n * n * (N - 1) / N ** 2 + it * 8.0 * n * n + 8.0 * Q * o * v * (N - 1) / N ** 2
            + elem * Q * o * v * (N - 1) / (2.0 * N))


DIIS_VECTORS = 8


def memory_bytes(s, N):
    """Peak bytes per rank: the largest stage's distributed arrays plus what every rank repeats
    (metric and its factor; S, H, F, D, C, X and the DIIS Fock and error vectors)."""
    n, X, Q, o, v = s["n"], s["X"], s["Q"], s["o"], s["v"]
    scf_matrices = (2 * DIIS_VECTORS + 8) * n * n
    stages = {"scf": 2.0 * X * n * n / N + 2 * X * X + scf_matrices,
              "df_transform": 3.0 * Q * o * v / N + 2 * Q * Q + n * n,
              "energy": Q * o * v * (1 / N + 1 / (8 * N)) + n * n}
    return {stage: 8.0 * d for stage, d in stages.items()}


def replicated_bytes(s):
    n, X, Q = s["n"], s["X"], s["Q"]
    return 8.0 * max(2 * X * X + (2 * DIIS_VECTORS + 8) * n * n, 2 * Q * Q + n * n)


def calibrate(run1):
    """Seconds per unit of work, one rate per stage, from the 1-rank run."""
    s = sizes(run1)
    w = work(s)
    return {stage: run1["timings"][stage] / (w[stage]["shared"] + w[stage]["repeated"]) for stage in w}


def predict(rates, s, N, cores, bandwidth_bytes):
    w = work(s)
    share = min(N, cores) if cores else N  # ranks beyond the cores share them
    t = {}
    for stage, parts in w.items():
        t[stage] = rates[stage] * (parts["shared"] / share + parts["repeated"] * (N / share if cores else 1))
    t["communication"] = comm_bytes(s, N) / bandwidth_bytes
    t["total"] = sum(t.values())
    return t


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scaling", default=os.path.join(ROOT, "results", "scaling.json"))
    parser.add_argument("--nbf", type=int, default=3000)
    parser.add_argument("--bandwidth", type=float, default=12.5, help="GB/s per rank (100 Gb/s link)")
    parser.add_argument("--shm-bandwidth", type=float, default=5.0, help="GB/s between ranks on this machine")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "scaling_model.md"))
    args = parser.parse_args()
    with open(args.scaling) as f:
        data = json.load(f)
    runs = {r["ranks"]: r["result"] for r in data["runs"]}
    base = runs[min(runs)]
    rates = calibrate(base)
    s = sizes(base)
    lines = ["## Model checked against the measured runs (this machine, "
             f"{data['cores']} cores, {args.shm_bandwidth} GB/s between ranks assumed)", "",
             "| ranks | measured total / s | model total / s | model − measured |", "|---|---|---|---|"]
    for N, r in sorted(runs.items()):
        model = predict(rates, s, N, data["cores"], args.shm_bandwidth * 1e9)["total"]
        measured = r["timings"]["total"]
        lines.append(f"| {N} | {measured:.1f} | {model:.1f} | {100 * (model - measured) / measured:+.0f}% |")

    scale = args.nbf / s["n"]
    big = {k: (round(v * scale) if k != "iters" else v) for k, v in s.items()}
    lines += ["", f"## Model for nbf = {big['n']} (naux_jk {big['X']}, naux {big['Q']}, nocc {big['o']}, "
              f"nvir {big['v']}, {big['iters']} SCF iterations), one core per rank at this machine's "
              f"per-core rates, {args.bandwidth} GB/s per rank", "",
              "| ranks | integrals / s | SCF / s | DF transform / s | energy / s | communication / s | "
              "total / h | parallel efficiency | peak memory per rank / GiB (stage) | "
              "of which every rank repeats / GiB | sent per rank / GiB |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    t1 = predict(rates, big, 1, 0, args.bandwidth * 1e9)["total"]
    for N in (1, 8, 16, 32, 64, 128, 256, 512):
        t = predict(rates, big, N, 0, args.bandwidth * 1e9)
        stage, peak = max(memory_bytes(big, N).items(), key=lambda item: item[1])
        lines.append(
            f"| {N} | {t['integrals']:.0f} | {t['scf']:.0f} | {t['df_transform']:.0f} | {t['energy']:.0f} | "
            f"{t['communication']:.0f} | {t['total'] / 3600:.2f} | {t1 / (N * t['total']):.2f} | "
            f"{peak / 2 ** 30:.1f} ({stage}) | {replicated_bytes(big) / 2 ** 30:.1f} | "
            f"{comm_bytes(big, N) / 2 ** 30:.1f} |")
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
