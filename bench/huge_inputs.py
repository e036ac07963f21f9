#!/usr/bin/env python3
"""Writes the inputs of issue 43, molecules far too large to run, which dfmp2 must refuse within
seconds: water_box.xyz, 2197 waters on a 13 × 13 × 13 grid 3 Å apart (6591 atoms, 52,728 cc-pVDZ
functions), and 100,000-atom gases of H2 and of HeH molecules in a 400 Å box (one molecule per
cell of a 37³ grid, 50,000 cells used). Orientations from a fixed seed: the same files on every
run. Usage: bench/huge_inputs.py DIR"""
import math
import pathlib
import random
import sys

from make_scale_inputs import rotation


def molecules_on_grid(local, per_side, spacing, count, seed=1):
    rng = random.Random(seed)
    atoms = []
    for k in range(count):
        origin = (spacing * (k % per_side), spacing * (k // per_side % per_side), spacing * (k // per_side // per_side))
        r = rotation(rng)
        atoms += [(symbol, tuple(origin[i] + sum(r[i][j] * p[j] for j in range(3)) for i in range(3)))
                  for symbol, p in local]
    return atoms


def write(path, name, atoms):
    lines = [str(len(atoms)), name] + [f"{s:<2} {x:12.6f} {y:12.6f} {z:12.6f}" for s, (x, y, z) in atoms]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    half = math.radians(104.5) / 2
    water = [("O", (0.0, 0.0, 0.0)), ("H", (0.9572 * math.sin(half), 0.0, 0.9572 * math.cos(half))),
             ("H", (-0.9572 * math.sin(half), 0.0, 0.9572 * math.cos(half)))]
    write(out / "water_box.xyz", "2197 waters 3 A apart", molecules_on_grid(water, 13, 3.0, 13 ** 3))
    for name, pair in (("h2_gas", ("H", "H", 0.74)), ("heh_gas", ("He", "H", 0.77))):
        local = [(pair[0], (0.0, 0.0, 0.0)), (pair[1], (0.0, 0.0, pair[2]))]
        write(out / f"{name}.xyz", f"50000 {pair[0]}{pair[1]} in a 400 A box", molecules_on_grid(local, 37, 400 / 37, 50000))
