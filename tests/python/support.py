"""What the Python tests share: the paths CTest gives them (DFMP2_EXE, DFMP2_SOURCE_DIR, …), Psi4's
reference records and the command line's own energy for a molecule."""
import json
import os
import subprocess
import tempfile

SOURCE_DIR = os.environ["DFMP2_SOURCE_DIR"]
EXE = os.environ["DFMP2_EXE"]
BOHR_IN_ANGSTROM = 0.52917721067  # CODATA 2014, as dfmp2's XYZ reader, ASE 3.22 and QCElemental


def psi4_reference(file, name):
    """The record `name` of tests/reference/`file`, made by the reference scripts there."""
    with open(os.path.join(SOURCE_DIR, "tests", "reference", file)) as f:
        return next(r for r in json.load(f) if r["name"] == name)


def psi4_qcengine_reference(name):
    """A record of tests/reference/psi4_qcengine_energies.json: the AtomicInput QCEngine gave
    Psi4 and Psi4's results."""
    return psi4_reference("psi4_qcengine_energies.json", name)


def cli_json(symbols, geometry_bohr, args):
    """The --json results of `dfmp2 molecule.xyz ARGS --threads 1` on this molecule, written as XYZ
    in Å at full precision. One thread: with more, two runs of one input differ by up to ~3e-12 Eh
    (the order of threaded sums), so a comparison to 1e-12 runs both sides on one."""
    with tempfile.TemporaryDirectory() as tmp:
        xyz = os.path.join(tmp, "molecule.xyz")
        with open(xyz, "w") as f:
            f.write(f"{len(symbols)}\n\n")
            for k, symbol in enumerate(symbols):
                x, y, z = (c * BOHR_IN_ANGSTROM for c in geometry_bohr[3 * k:3 * k + 3])
                f.write(f"{symbol} {x!r} {y!r} {z!r}\n")
        out = os.path.join(tmp, "out.json")
        subprocess.run([EXE, xyz, *args, "--threads", "1", "--quiet", "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)
