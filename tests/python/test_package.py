"""The dfmp2 Python package itself: where it finds the executable (the one it carries in its bin/,
then $DFMP2_EXE, then PATH), and that `cmake --install` installs a package that imports and runs."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import dfmp2
from support import EXE, psi4_qcengine_reference, psi4_reference

PYTHON_DIR = os.path.dirname(os.path.abspath(dfmp2.__file__))

# The runs below are HF/STO-3G water, whose JK set is dfmp2's default for STO-3G, def2-SVP-JKFIT:
# Psi4 1.3.2's DF-SCF energy of that input (tests/reference/psi4_energies.json). Measured: 2.5e-11
# Eh apart; 1e-9 Eh, as in test_qcengine_harness.py, stays above dfmp2's run-to-run spread.
STO3G_WATER_SCF = psi4_reference("psi4_energies.json", "water-sto-3g-df-ae")["e_scf"]
STO3G_WATER_TOLERANCE = 1e-9  # Eh


def run_python(code, pythonpath, env_changes):
    """`code` in a fresh /usr/bin/python3 with this PYTHONPATH; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("DFMP2_EXE", "PYTHONPATH")}
    env.update(env_changes, PYTHONPATH=pythonpath)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return done.stdout.strip()


# In a child Python: where the package finds the executable under an environment ("- why" for
# nowhere).
FIND = """
import os, dfmp2
def find(env):
    os.environ.pop("DFMP2_EXE", None)
    os.environ.update(env)
    try:
        return dfmp2.find_executable()
    except FileNotFoundError as error:
        return "- " + str(error)
"""


class ExecutableTest(unittest.TestCase):
    def test_lookup_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            site, bin_dir = os.path.join(tmp, "site"), os.path.join(tmp, "bin")
            shutil.copytree(PYTHON_DIR, os.path.join(site, "dfmp2"), ignore=shutil.ignore_patterns("__pycache__"))
            os.mkdir(bin_dir)
            os.symlink(EXE, os.path.join(bin_dir, "dfmp2"))
            carried = os.path.join(site, "dfmp2", "bin", "dfmp2")
            no_path, with_path = {"PATH": "/usr/bin:/bin"}, {"PATH": bin_dir + ":/usr/bin:/bin"}
            given, wrong = {**with_path, "DFMP2_EXE": EXE}, {**with_path, "DFMP2_EXE": "/nonexistent"}
            code = FIND + "".join(f"print(find({env!r}))\n" for env in (no_path, with_path, given, wrong))
            code += f"os.mkdir({os.path.dirname(carried)!r}); os.symlink({EXE!r}, {carried!r})\n"  # now one carried
            code += "".join(f"print(find({env!r}))\n" for env in (no_path, with_path, given, wrong))
            found = run_python(code, site, {}).splitlines()
            self.assertTrue(found[0].startswith("- the dfmp2 executable was not found: none carried"), found[0])
            self.assertEqual(found[1:3], [os.path.join(bin_dir, "dfmp2"), EXE])
            self.assertEqual(found[3], "- DFMP2_EXE is '/nonexistent', which is not an executable file")
            self.assertEqual(found[4:], [carried] * 4)  # the carried one wins over DFMP2_EXE and PATH

    def test_run_qcschema_returns_the_result_or_the_failure(self):
        atomic_input = dict(psi4_qcengine_reference("water-hf-cc-pvdz")["input"])
        atomic_input["model"] = {"method": "hf", "basis": "sto-3g"}
        atomic_input["keywords"] = {}
        result = dfmp2.run_qcschema(atomic_input, memory="1GB", threads=1)
        self.assertTrue(result["success"])
        self.assertAlmostEqual(result["return_result"], STO3G_WATER_SCF, delta=STO3G_WATER_TOLERANCE)
        atomic_input["driver"] = "gradient"
        failed = dfmp2.run_qcschema(atomic_input)
        self.assertFalse(failed["success"])
        self.assertEqual(failed["error"]["error_type"], "input_error")
        self.assertIn("dfmp2: error: driver gradient needs model.method mp2", failed["stderr"])


class InstallTest(unittest.TestCase):
    def test_cmake_install_gives_a_package_that_finds_its_executable(self):
        with tempfile.TemporaryDirectory() as prefix:
            subprocess.run([os.environ["CMAKE_COMMAND"], "--install", os.environ["DFMP2_BUILD_DIR"], "--prefix", prefix],
                           check=True, stdout=subprocess.DEVNULL)
            site = os.path.join(prefix, "lib", "python%d.%d" % sys.version_info[:2], "dist-packages")
            carried = os.path.join(site, "dfmp2", "bin", "dfmp2")
            self.assertEqual(os.path.realpath(carried), os.path.realpath(os.path.join(prefix, "bin", "dfmp2")))
            self.assertTrue(os.path.isfile(os.path.join(prefix, "share", "dfmp2", "basis", "cc-pvdz.gbs")))
            code = ("import json, dfmp2, qcengine\n"
                    f"inp = json.loads({json.dumps(json.dumps(self.sto3g_water()))})\n"
                    "r = qcengine.compute(inp, 'dfmp2', task_config={'ncores': 1})\n"
                    "print(dfmp2.find_executable(), r.success, r.return_result)")
            found, success, energy = run_python(code, site, {"PATH": "/usr/bin:/bin"}).split()
            self.assertEqual(found, carried)
            self.assertEqual(success, "True")
            self.assertAlmostEqual(float(energy), STO3G_WATER_SCF, delta=STO3G_WATER_TOLERANCE)

    @staticmethod
    def sto3g_water():
        atomic_input = dict(psi4_qcengine_reference("water-hf-cc-pvdz")["input"])
        atomic_input.update(model={"method": "hf", "basis": "sto-3g"}, keywords={})
        return atomic_input


if __name__ == "__main__":
    unittest.main()
