#!/usr/bin/python3
"""dfmp2 against the Psi4 1.3.2 (and PySCF 2.14) references in tests/reference/: the largest
difference per set.

    /usr/bin/python3 bench/accuracy.py [--exe build/src/dfmp2] [--out results] [--threads 2]

Runs the command-line program on every case of the reference files it can reach, with the
settings the tests use (each case's basis sets, SCF type, frozen core, charge, multiplicity;
dfmp2's default convergence for energies, d_convergence 1e-10 for gradients, as Psi4's
references everywhere): the RHF energies (psi4_energies.json), the UHF energies and ⟨S²⟩
(psi4_uhf_energies.json), the counterpoise runs and interaction energies
(psi4_counterpoise_energies.json) and the DF-MP2 gradients, relaxed dipoles and total energies
(psi4_mp2_gradients.json), and the molecules with effective core potentials against Psi4
(psi4_ecp_energies.json) and PySCF 2.14 (pyscf_ecp_energies.json). The SCF-only gradients
(psi4_gradients.json) have no command-line path: their comparisons are the test cases of
tests/src/test_gradient.cpp that make them, run with Catch2's -s (every assertion reported),
their "max |Δ|" read from the report.
Writes <out>/accuracy.json (every case, every quantity) and <out>/accuracy.md (per set and
quantity the largest |dfmp2 − reference| and the case it occurs in).
"""
import argparse
import json
import re
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import amdahl  # noqa: E402  (same folder: the machine description)

REPO = Path(__file__).resolve().parent.parent
REFERENCES = REPO / "tests" / "reference"
ENERGIES = ["e_nuc", "e_scf", "e_ss", "e_os", "e_corr", "e_scs_corr", "e_total"]
UHF_PARTS = {"e_aa": "numpy_e_aa", "e_bb": "numpy_e_bb", "e_ab": "numpy_e_ab", "s2": "s2"}
CP_RUNS = {"dimer": "dimer", "a_in_dimer_basis": "a_in_dimer_basis", "b_in_dimer_basis": "b_in_dimer_basis",
           "a": "a_alone", "b": "b_alone"}


def case_arguments(ref):
    """The command-line options that give a reference case's settings."""
    args = [str(REPO / ref["xyz"]), "--basis", ref["basis"], "--df-basis", ref["df_basis"],
            "--charge", str(ref["charge"]), "--multiplicity", str(ref.get("multiplicity", 1))]
    if ref.get("scf_type", "df") == "df":
        args += ["--jk-basis", ref["jk_basis"]]
    else:
        args += ["--scf", "exact"]
    if ref.get("reference") == "uhf":
        args += ["--reference", "uhf"]
    return args + (["--frozen-core"] if ref["freeze_core"] else [])


def run_dfmp2(exe, args, threads):
    with tempfile.TemporaryDirectory(prefix="dfmp2_accuracy_") as tmp:
        out = Path(tmp) / "run.json"
        subprocess.run([str(exe)] + args + ["--threads", str(threads), "--quiet", "--json", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        return json.loads(out.read_text())


def differences(ours, psi4, keys):
    """|ours[k] − psi4[ref_k]| for each (k, ref_k) in keys."""
    return {k: abs(ours[k] - psi4[ref_k]) for k, ref_k in keys}


def energy_case(exe, ref, threads):
    ours = run_dfmp2(exe, case_arguments(ref), threads)
    keys = [(k, k) for k in ENERGIES if k in ref]
    values = {"scf_iterations": ours["scf_iterations"]}
    if ref.get("reference") == "uhf":
        keys += [(k, ref_k) for k, ref_k in UHF_PARTS.items() if ref_k in ref]
        values["s2"] = ours["s2"]
    return differences(ours, ref, keys), values


def pyscf_ecp_case(exe, ref, threads):
    """PySCF's record holds energies only: the case's settings are those of Psi4's record of that name."""
    psi4 = next(r for r in json.loads((REFERENCES / "psi4_ecp_energies.json").read_text()) if r["name"] == ref["name"])
    settings = {k: v for k, v in psi4.items() if k not in ENERGIES}
    return energy_case(exe, {**settings, **{k: ref[k] for k in ENERGIES if k in ref}}, threads)


def counterpoise_case(exe, ref, threads):
    ours = run_dfmp2(exe, case_arguments(ref) + ["--counterpoise", str(ref["natom_a"])], threads)
    diff = {f"interaction {k}": abs(ours["interaction_energy"][k] - v) for k, v in ref["interaction_energy"].items()}
    for run, our_run in CP_RUNS.items():
        for k in ["e_nuc", "e_scf", "e_ss", "e_os", "e_total"]:
            diff[f"runs {k}"] = max(diff.get(f"runs {k}", 0.0),
                                    abs(ours["counterpoise"]["runs"][our_run][k] - ref["runs"][run][k]))
    return diff, {}


def largest_element_difference(ours, psi4):
    flat = lambda rows: [x for row in rows for x in row] if isinstance(rows[0], list) else rows  # noqa: E731
    return max(abs(a - b) for a, b in zip(flat(ours), flat(psi4), strict=True))


def gradient_case(exe, ref, threads):
    # The Z-vector is solved to the SCF's d_convergence: Psi4's 1e-10 here, as the gradient tests do.
    ours = run_dfmp2(exe, case_arguments(ref) + ["--gradient", "--d-convergence", "1e-10"], threads)
    diff = {"gradient": largest_element_difference(ours["gradient"], ref["gradient"]),
            "dipole": largest_element_difference(ours["mp2_dipole_moment"], ref["dipole"]),
            "e_scf": abs(ours["e_scf"] - ref["e_scf"]), "e_total": abs(ours["e_total"] - ref["e_total"])}
    # Translational invariance: the forces on the atoms sum to zero.
    force_sum = max(abs(sum(row[k] for row in ours["gradient"])) for k in range(3))
    return diff, {"largest force sum": force_sum}


SCF_GRADIENT_TESTS = ["exact-SCF gradients match Psi4*", "DF-SCF gradients match Psi4*"]


def scf_gradient_cases(tests, threads):
    """Each Psi4 SCF-gradient case's largest element difference: the first "max |Δ|" reported
    with the case's name, which the tests compute against Psi4 before their other checks."""
    report = subprocess.run([str(tests), ",".join(SCF_GRADIENT_TESTS), "-s"], capture_output=True, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": str(threads)}, check=True).stdout
    results = {}
    for block in report.split("with messages:")[1:]:
        name = re.search(r"^  (\S+-grad)$", block, re.M)
        diff = re.search(r"^  max \|Δ\| = (\S+)$", block, re.M)
        if name and diff and name.group(1) not in results:
            results[name.group(1)] = float(diff.group(1))
    expected = {r["name"] for r in json.loads((REFERENCES / "psi4_gradients.json").read_text())}
    if set(results) != expected:
        sys.exit(f"accuracy.py: the tests reported {sorted(results)}, not every case of psi4_gradients.json")
    return [{"set": "SCF gradients", "unit": "Eh/bohr", "case": name, "nbf": None,
             "differences": {"gradient": diff}, "values": {}} for name, diff in sorted(results.items())]


SETS = [  # name, reference file, how a case runs, unit of its differences
    ("RHF energies", "psi4_energies.json", energy_case, "Eh"),
    ("UHF energies and <S^2>", "psi4_uhf_energies.json", energy_case, "Eh"),
    ("counterpoise", "psi4_counterpoise_energies.json", counterpoise_case, "Eh"),
    ("DF-MP2 gradients", "psi4_mp2_gradients.json", gradient_case, "Eh/bohr, dipole e·bohr"),
    ("ECP energies against Psi4", "psi4_ecp_energies.json", energy_case, "Eh"),
    ("ECP energies against PySCF", "pyscf_ecp_energies.json", pyscf_ecp_case, "Eh"),
]
ALL_SETS = SETS + [("SCF gradients", "psi4_gradients.json", None, "Eh/bohr")]


def measure(exe, threads):
    results = []
    for name, file, run_case, unit in SETS:
        for ref in json.loads((REFERENCES / file).read_text()):
            print(f"{name}: {ref['name']}", file=sys.stderr, flush=True)
            diff, values = run_case(exe, ref, threads)
            results.append({"set": name, "unit": unit, "case": ref["name"], "nbf": ref.get("nbf"),
                            "differences": diff, "values": values})
    return results


def largest_per_quantity(results):
    """{(set, quantity): (difference, case)} over the cases of each set."""
    largest = {}
    for r in results:
        for quantity, diff in r["differences"].items():
            key = (r["set"], quantity)
            if key not in largest or diff > largest[key][0]:
                largest[key] = (diff, r["case"])
    return largest


def case_table(name, unit, results):
    """One row per case of the set: its differences, then dfmp2's own values."""
    rows = [r for r in results if r["set"] == name]
    diffs, values = list(rows[0]["differences"]), list(rows[0]["values"])
    lines = ["", f"### {name}: |dfmp2 − reference| per case ({unit})", "",
             "| case | " + " | ".join(diffs + [f"dfmp2 {v}" for v in values]) + " |",
             "|---" * (1 + len(diffs) + len(values)) + "|"]
    for r in rows:
        cells = [f"{r['differences'][k]:.1e}" for k in diffs] + [fmt_value(r["values"][v]) for v in values]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    return lines


def fmt_value(value):
    return str(value) if isinstance(value, int) else f"{value:.6f}" if value > 1e-3 else f"{value:.1e}"


def markdown(results, machine, threads):
    lines = ["# dfmp2 against Psi4 1.3.2 and PySCF 2.14: largest differences per reference set", "",
             f"`bench/accuracy.py`; {machine['cpu']}, {machine['cores']} cores, {machine['blas']}; {threads} threads; "
             "each case with the settings of its reference (tests/reference/*.json), energies at dfmp2's default "
             "convergence (RHF d_convergence 1e-8, UHF 1e-10), gradients at d_convergence 1e-10 (the references': "
             "1e-10 everywhere). "
             "⟨S²⟩ is dimensionless; E_αα, E_ββ, E_αβ are compared with the reference script's own sums over "
             "Psi4's amplitudes (`numpy_e_*`). Gold hydride against Psi4: Psi4 1.3.2's own ECP quadrature does not "
             "converge there (its output says so), so the tests take PySCF's value for it.", "",
             "| set | quantity | largest difference | case | cases |", "|---|---|---|---|---|"]
    counts = {name: sum(r["set"] == name for r in results) for name, *_ in ALL_SETS}
    for (name, quantity), (diff, case) in largest_per_quantity(results).items():
        lines.append(f"| {name} | {quantity} | {diff:.1e} | {case} | {counts[name]} |")
    for name, _, _, unit in ALL_SETS:
        lines += case_table(name, unit, results)
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exe", type=Path, default=REPO / "build" / "src" / "dfmp2")
    p.add_argument("--tests", type=Path, default=REPO / "build" / "tests" / "src" / "test_dfmp2",
                   help="the tests of src/, whose cases compare the SCF gradients")
    p.add_argument("--out", type=Path, default=REPO / "results")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    machine = amdahl.machine_info()
    results = measure(args.exe, args.threads) + scf_gradient_cases(args.tests, args.threads)
    (args.out / "accuracy.json").write_text(json.dumps({"machine": machine, "threads": args.threads,
                                                        "cases": results}, indent=1) + "\n")
    (args.out / "accuracy.md").write_text(markdown(results, machine, args.threads))
    print((args.out / "accuracy.md").read_text())


if __name__ == "__main__":
    main()
