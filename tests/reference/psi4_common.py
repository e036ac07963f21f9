"""What the Psi4 reference scripts share: the geometry reader, Psi4's variables, the start of a
case (a clean Psi4, its output file, threads, memory and the molecule in the input frame), the
gradient scripts' record of one case and the command line that reruns some cases and keeps the
others."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, "/usr/lib/x86_64-linux-gnu")  # where Debian's psi4 package puts the module
import psi4  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTPUTS = os.path.join(REPO, "tests", "reference", "outputs")  # Psi4's output files


def read_xyz(path):
    with open(os.path.join(REPO, path)) as f:
        lines = f.read().splitlines()
    return "\n".join(lines[2:2 + int(lines[0])])


def variable(name):
    return psi4.core.variable(name) if hasattr(psi4.core, "variable") else psi4.core.get_variable(name)


def start(c, out, threads, multiplicity=1, symmetric=False, atoms=None):
    """A clean Psi4 writing to `out`, and case c's molecule (or the given atom lines) in its input
    frame (in c1 unless symmetric)."""
    psi4.core.clean()
    psi4.core.clean_options()
    psi4.core.set_output_file(out, False)
    psi4.set_num_threads(threads)
    psi4.set_memory("4 GB")
    atoms = atoms if atoms is not None else read_xyz(c["xyz"])
    return psi4.geometry(f"{c['charge']} {multiplicity}\n{atoms}\nunits angstrom\n"
                         + ("" if symmetric else "symmetry c1\n") + "no_reorient\nno_com\n")


def gradient_record(c, threads, method, options, multiplicity=1, extra=lambda wfn: {}):
    """Psi4's analytic gradient of `method` for case c under `options`: c's record with the
    sizes, the energies (SCF, and extra(wfn)'s) and the gradient (Eh/bohr, natom rows of x y z,
    the input frame); the output in outputs/<name>.out, kept only when < 200 kB."""
    out = os.path.join(OUTPUTS, c["name"] + ".out")
    mol = start(c, out, threads, multiplicity)
    psi4.set_options(options)
    begin = time.time()
    gradient, wfn = psi4.gradient(method, molecule=mol, return_wfn=True)
    wall = time.time() - begin
    record = dict(c, nbf=wfn.basisset().nbf(), puream=bool(wfn.basisset().has_puream()),
                  e_nuc=mol.nuclear_repulsion_energy(), e_scf=variable("SCF TOTAL ENERGY"), **extra(wfn),
                  gradient=[list(row) for row in gradient.np], psi4_version=psi4.__version__,
                  psi4_threads=threads, psi4_wall_seconds=wall)
    psi4.core.close_outfile()
    if os.path.getsize(out) > 200_000:  # keep only small outputs in the repository
        os.remove(out)
    return record


def main(doc, out_json, cases, run):
    """Runs run(case, threads) for every case (or --only some, keeping the others' records from
    out_json) and writes the records to out_json."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", help="case names to (re)run; others are kept from the file")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    previous = {}
    if args.only and os.path.exists(out_json):
        with open(out_json) as f:
            previous = {r["name"]: r for r in json.load(f)}
    records = []
    for c in cases:
        if args.only and c["name"] not in args.only:
            if c["name"] in previous:
                records.append(previous[c["name"]])
            continue
        print(f"{c['name']} …", file=sys.stderr, flush=True)
        records.append(run(c, args.threads))
    with open(out_json, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
