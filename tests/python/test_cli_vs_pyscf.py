"""The command line against PySCF 2.14 as a second reference program beside Psi4
(tests/reference/pyscf_energies.json, made by tests/reference/pyscf_reference.py from dfmp2's own
.gbs files): DF-RHF, DF-UHF, frozen core and a Cartesian basis, whose RI set PySCF runs
Cartesian too (so dfmp2 is given it as a .gbs file saying `cartesian`)."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from support import EXE, SOURCE_DIR

# dfmp2 at --d-convergence 1e-10 and PySCF at conv_tol 1e-12, conv_tol_grad 1e-9: measured at most
# 1.3e-11 Eh apart (E_SCF, E_corr and its parts, all four cases; OH's E_corr); checked to 1e-10 Eh.
TOLERANCE = 1e-10  # Eh


def references():
    with open(os.path.join(SOURCE_DIR, "tests", "reference", "pyscf_energies.json")) as f:
        return json.load(f)


def cartesian_copy(name, directory):
    """basis/<name>.gbs with its first line saying `cartesian`."""
    with open(os.path.join(SOURCE_DIR, "basis", name + ".gbs")) as f:
        lines = f.read().splitlines(keepends=True)
    assert lines[0].strip() == "spherical", name
    path = os.path.join(directory, name + "-cartesian.gbs")
    with open(path, "w") as f:
        f.write("cartesian\n" + "".join(lines[1:]))
    return path


def run_cli(record, directory):
    df_basis = cartesian_copy(record["df_basis"], directory) if record["cartesian"] else record["df_basis"]
    out = os.path.join(directory, record["name"] + ".json")
    command = [EXE, os.path.join(SOURCE_DIR, record["xyz"]), "--basis", record["basis"], "--df-basis", df_basis,
               "--jk-basis", record["jk_basis"], "--charge", str(record["charge"]), "--multiplicity",
               str(record["multiplicity"]), "--d-convergence", "1e-10", "--threads", "1", "--quiet", "--json", out]
    if record["frozen"]:  # water's one core orbital: Psi4's freeze_core, which --frozen-core follows
        command.append("--frozen-core")
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


class CliAgainstPyscf(unittest.TestCase):
    def test_energies_match_pyscf(self):
        with tempfile.TemporaryDirectory() as tmp:
            for record in references():
                with self.subTest(record["name"]):
                    result = run_cli(record, tmp)
                    self.assertEqual(result["nbf"], record["nbf"])
                    self.assertEqual(result["naux"], record["naux"])
                    for key in ("e_scf", "e_corr", "e_os", "e_ss"):
                        self.assertAlmostEqual(result[key], record[key], delta=TOLERANCE, msg=key)


if __name__ == "__main__":
    unittest.main()
