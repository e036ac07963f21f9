#!/usr/bin/env python3
"""Writes the scale series' molecules (inputs/scale/): water clusters on a cubic grid (O-O 2.9 Å,
orientations from a fixed seed, no two molecules' atoms closer than 1.8 Å) and all-trans linear alkanes C_nH_2n+2 (C-C 1.54 Å, C-H 1.09 Å,
tetrahedral angles). Deterministic: the same files on every run."""
import math
import pathlib
import random

OUT = pathlib.Path(__file__).resolve().parent.parent / "inputs" / "scale"


def rotation(rng):
    # A uniformly random rotation from a random unit quaternion.
    u1, u2, u3 = rng.random(), rng.random(), rng.random()
    a, b = math.sqrt(1 - u1), math.sqrt(u1)
    w, x, y, z = a * math.sin(2 * math.pi * u2), a * math.cos(2 * math.pi * u2), \
        b * math.sin(2 * math.pi * u3), b * math.cos(2 * math.pi * u3)
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]


def water_cluster(n, spacing=2.9, seed=1):
    rng = random.Random(seed)
    side = math.ceil(n ** (1 / 3))
    half = math.radians(104.5) / 2
    local = [("O", (0.0, 0.0, 0.0)), ("H", (0.9572 * math.sin(half), 0.0, 0.9572 * math.cos(half))),
             ("H", (-0.9572 * math.sin(half), 0.0, 0.9572 * math.cos(half)))]
    atoms = []
    for k in range(n):
        origin = (spacing * (k % side), spacing * (k // side % side), spacing * (k // side // side))
        while True:  # an orientation that keeps every atom 1.8 Å from the other molecules'
            r = rotation(rng)
            placed = [(symbol, tuple(origin[i] + sum(r[i][j] * p[j] for j in range(3)) for i in range(3)))
                      for symbol, p in local]
            if all(math.dist(a, b) >= 1.8 for _, a in placed for _, b in atoms):
                break
        atoms += placed
    return atoms


def alkane(n):
    cc, ch, theta = 1.54, 1.09, math.radians(109.47)
    dx, dy = cc * math.sin(theta / 2), cc * math.cos(theta / 2)
    atoms = [("C", (k * dx, dy / 2 if k % 2 else -dy / 2, 0.0)) for k in range(n)]
    hydrogens = []
    for k, (_, (x, y, _z)) in enumerate(atoms):
        out = 1.0 if k % 2 else -1.0  # away from the chain's axis
        # Two hydrogens above and below the carbon plane, in the plane bisecting the C-C-C angle.
        for side in (1.0, -1.0):
            hydrogens.append(("H", (x, y + out * ch * math.cos(theta / 2), side * ch * math.sin(theta / 2))))
        if k in (0, n - 1):  # the end carbons' third hydrogen continues the zigzag
            step = -1.0 if k == 0 else 1.0
            hydrogens.append(("H", (x + step * ch * math.sin(theta / 2), y - out * ch * math.cos(theta / 2), 0.0)))
    return atoms + hydrogens


def write(name, atoms):
    lines = [str(len(atoms)), name] + [f"{s:<2} {x:12.6f} {y:12.6f} {z:12.6f}" for s, (x, y, z) in atoms]
    (OUT / f"{name}.xyz").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for n in (15, 20, 25, 40, 50, 80):  # water20: bench/vs_pyscf.py; water80: the GPU device check
        write(f"water{n}", water_cluster(n))
    for n in (20, 40, 60):
        write(f"c{n}h{2 * n + 2}", alkane(n))
