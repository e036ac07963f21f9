#!/usr/bin/python3
"""Runs bench/amdahl.py --quick --no-psi4 into a temporary directory and checks its outputs.

usage: amdahl_quick_test.py AMDAHL_PY DFMP2_AMDAHL_BINARY
"""
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REL_TOL = 1e-8


def main():
    driver, binary = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory(prefix="amdahl_test_") as out:
        subprocess.run([sys.executable, driver, "--quick", "--no-psi4", "--binary", binary, "--out", out],
                       check=True)
        out = Path(out)
        for name in ["amdahl.csv", "amdahl.json", "amdahl_speedup.png", "amdahl_stages.png", "amdahl_gflops.png",
                     "amdahl_floors.png"]:
            path = out / name
            if not path.exists() or path.stat().st_size == 0:
                failures.append(f"{name} missing or empty")
        for name in ["amdahl_speedup.png", "amdahl_stages.png", "amdahl_gflops.png", "amdahl_floors.png"]:
            if (out / name).exists() and not (out / name).read_bytes().startswith(b"\x89PNG"):
                failures.append(f"{name} is not a PNG")
        if (out / "psi4_series.json").exists():
            failures.append("--no-psi4 still wrote psi4_series.json")
        data = json.loads((out / "amdahl.json").read_text())
        molecules = data["molecules"]
        if not data["machine"].get("blas_kernels"):
            failures.append("amdahl.json does not name the OpenBLAS kernel set")
        if len(molecules) != 3:
            failures.append(f"quick mode ran {len(molecules)} molecules, expected 3")
        for mol in molecules:
            runs = mol["runs"]
            if sorted({r["backend"] for r in runs}) != ["fused", "loop", "reference"]:
                failures.append(f"{mol['name']}: backends {[r['backend'] for r in runs]}")
            if {r["precision"] for r in runs} != {"fp64"}:
                failures.append(f"{mol['name']}: quick mode must run fp64 only")
            ref = next(r for r in runs if r["backend"] == "reference")
            for r in runs:
                for key in ("e_corr", "e_ss", "e_os", "e_total"):
                    if abs(r[key] - ref[key]) > REL_TOL * abs(ref[key]):
                        failures.append(f"{mol['name']}: {r['backend']} {key} {r[key]!r} vs reference {ref[key]!r}")
                if not r["energy_seconds"] > 0:
                    failures.append(f"{mol['name']}: {r['backend']} energy step not timed")
            if not ref["e_corr"] < 0:
                failures.append(f"{mol['name']}: correlation energy {ref['e_corr']} not negative")
            for stage in ("integrals", "scf", "df_transform"):
                if not mol["floors"].get(stage, 0.0) > 0.0:
                    failures.append(f"{mol['name']}: no floor for {stage}")
        with open(out / "amdahl.csv") as f:
            rows = list(csv.DictReader(f))
        if len(rows) != 3 * len(molecules):
            failures.append(f"amdahl.csv has {len(rows)} rows, expected {3 * len(molecules)}")
        for row in rows:
            if row["backend"] != "reference" and not row["predicted_energy"]:
                failures.append(f"{row['molecule']} {row['backend']}: no Amdahl prediction")
        if "Every stage against its floor" not in (out / "amdahl.md").read_text():
            failures.append("amdahl.md has no table of the stages against their floors")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
