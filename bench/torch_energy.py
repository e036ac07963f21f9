#!/usr/bin/env python3
"""The original design's "torch path" for the DF-MP2 energy step on a GPU, beside which
bench_energy_gpu's loop and fused backends are judged: for each occupied i one batched matmul
T_ij = B_i B_jᵀ over j ≤ i (cuBLAS through PyTorch), then elementwise
E += Σ w_ij T_ij,ab (2 T_ij,ab − T_ij,ba) / Δ_ij,ab in fp64.

    python3 bench/torch_energy.py [--shapes small,medium,large] [--precisions fp64,fp32] [--reps 5]
                                  [--out results/gpu/torch_energy.json]

Shapes are the synthetic ones of bench/synthetic_shapes.cpp (nbasis, nocc, naux); B is random
(0.1·N(0,1)) on the GPU: the step's time does not depend on the values. Times: median of --reps
after a warm-up, with CUDA events.
"""
import argparse
import json
import statistics

import torch

SHAPES = {"small": (128, 16, 384), "medium": (512, 64, 1536), "large": (768, 96, 2304)}


def energy(B, eps_occ, eps_vir):
    """E_OS + E_SS of RHF DF-MP2, the i ≥ j pairs counted twice off the diagonal (fp64 sums)."""
    nocc = B.shape[0]
    total = torch.zeros((), dtype=torch.float64, device=B.device)
    e_ab = eps_vir[:, None] + eps_vir[None, :]
    for i in range(nocc):
        T = torch.matmul(B[i].unsqueeze(0), B[: i + 1].transpose(1, 2)).double()  # (i+1, nvir, nvir)
        delta = (eps_occ[i] + eps_occ[: i + 1])[:, None, None] - e_ab[None]
        pair = (T * (2 * T - T.transpose(1, 2)) / delta).sum(dim=(1, 2))
        weight = torch.full((i + 1,), 2.0, dtype=torch.float64, device=B.device)
        weight[i] = 1.0
        total += (weight * pair).sum()
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="small,medium,large")
    parser.add_argument("--precisions", default="fp64,fp32")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default="results/gpu/torch_energy.json")
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 stays fp32, as in dfmp2
    generator = torch.Generator(device="cuda").manual_seed(20240611)
    runs = []
    for name in args.shapes.split(","):
        nbasis, nocc, naux = SHAPES[name]
        nvir = nbasis - nocc
        for precision in args.precisions.split(","):
            dtype = torch.float64 if precision == "fp64" else torch.float32
            B = (0.1 * torch.randn(nocc, nvir, naux, generator=generator, device="cuda", dtype=torch.float64)).to(dtype)
            eps_occ = -1.5 + torch.rand(nocc, generator=generator, device="cuda", dtype=torch.float64)
            eps_vir = 0.1 + torch.rand(nvir, generator=generator, device="cuda", dtype=torch.float64)
            energy(B, eps_occ, eps_vir)  # warm-up: kernels loaded, cuBLAS handle made
            times = []
            for _ in range(args.reps):
                start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                e = energy(B, eps_occ, eps_vir)
                stop.record()
                torch.cuda.synchronize()
                times.append(start.elapsed_time(stop) / 1000.0)
            seconds = statistics.median(times)
            flops = 2.0 * nocc * (nocc + 1) / 2 * nvir * nvir * naux
            runs.append({"shape": name, "precision": precision, "nocc": nocc, "nvir": nvir, "naux": naux,
                         "median_seconds": seconds, "gflops_needed": flops / seconds * 1e-9, "energy": float(e)})
            print(f"torch path {name} {precision}: {seconds:.4f} s, {flops / seconds * 1e-9:.1f} GFLOP/s")
    with open(args.out, "w") as f:
        json.dump({"generator": "bench/torch_energy.py", "gpu": torch.cuda.get_device_name(),
                   "torch": torch.__version__, "cuda": torch.version.cuda, "runs": runs}, f, indent=2)


if __name__ == "__main__":
    main()
