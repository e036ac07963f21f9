"""dfmp2 against PySCF 2.14, side by side on the same cores (issue 46): end to end (integrals + SCF +
DF-MP2) of each program, and the MP2 step from the same orbitals (PySCF's mf): PySCF's
mp.dfmp2.DFMP2 against dfmp2 through its PySCF bridge, the data passing included. cc-pVDZ with
cc-pVDZ-JKFIT (SCF) and cc-pVDZ-RI (MP2) for both; PySCF's SCF at conv_tol 1e-10, conv_tol_grad
1e-8, dfmp2's at --d-convergence 1e-8 (its default) unless --d-convergence says otherwise.
Run with the PySCF venv's Python (the test suite's, or any with PySCF 2.14):

    build/pyscf-venv/bin/python bench/vs_pyscf.py --out results/vs_pyscf --threads 2

Each program runs in a process of its own (peak RSS is the process's: getrusage's ru_maxrss, and
dfmp2's own report; the bridge's is PySCF's process plus dfmp2's). Writes --out/vs_pyscf.json and
--out/vs_pyscf.md (the folder is created). Records both programs' BLAS libraries and OpenBLAS
kernels, the threads, each stage's seconds and the energies' differences."""
import argparse
import ctypes
import glob
import json
import os
import pathlib
import resource
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parent.parent
MOLECULES = {"naphthalene-dimer": "inputs/naphthalene-dimer.xyz", "tetracene-dimer": "inputs/series/tetracene-dimer.xyz",
             "water20": "inputs/scale/water20.xyz", "water": "inputs/water.xyz"}


def numpy_openblas():
    """numpy's OpenBLAS (which PySCF's numpy and scipy calls go to) and the kernels it chose."""
    import numpy
    libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*.so*"))
    for path in libs:
        library = ctypes.CDLL(path)
        for prefix in ("scipy_", ""):
            for suffix in ("64_", ""):
                function = getattr(library, f"{prefix}openblas_get_corename{suffix}", None)
                if function is not None:
                    function.restype = ctypes.c_char_p
                    return {"library": os.path.basename(path), "kernels": function().decode()}
    return {"library": "not found beside numpy", "kernels": "unknown"}


def pyscf_child(args):
    """In a process of its own: PySCF's DF-SCF and DF-MP2, then the bridge's MP2 from the same mf."""
    from pyscf import df, gto, lib, mp, scf
    from dfmp2.pyscf import DFMP2
    lib.num_threads(args.threads)
    mol = gto.M(atom=str(REPO / MOLECULES[args.molecule]), basis="cc-pvdz", verbose=0, max_memory=args.memory_mb)
    times = {}
    start = time.perf_counter()
    mf = scf.RHF(mol).density_fit(auxbasis="cc-pvdz-jkfit")
    mf.conv_tol, mf.conv_tol_grad = 1e-10, 1e-8
    mf.kernel()
    times["pyscf_scf"] = time.perf_counter() - start
    start = time.perf_counter()
    pt = mp.dfmp2.DFMP2(mf)
    pt.with_df = df.DF(mol, auxbasis="cc-pvdz-ri")
    pt.kernel(with_t2=False)  # the default keeps the amplitudes: 27 GiB for the tetracene dimer
    times["pyscf_mp2"] = time.perf_counter() - start
    pyscf_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    bridge = DFMP2(mf, auxbasis="cc-pvdz-ri")
    bridge.kernel()
    times["bridge_mp2"] = time.perf_counter() - start
    return {"times": times, "scf_iterations": mf.cycles, "e_scf": mf.e_tot, "pyscf_e_corr": pt.e_corr,
            "bridge_e_corr": bridge.e_corr, "nbf": mol.nao_nr(), "pyscf_peak_rss_bytes": pyscf_rss,
            "bridge_dfmp2_peak_rss_bytes": bridge.results["resources"]["peak_rss_bytes"], "pyscf_blas": numpy_openblas(),
            "bridge_dfmp2_blas_kernels": bridge.results["blas_kernels"], "converged": bool(mf.converged)}


def run_pyscf(args, molecule):
    command = [sys.executable, __file__, "--pyscf-child", molecule, "--threads", str(args.threads),
               "--memory-mb", str(args.memory_mb)]
    # The bridge from this source tree (it runs $DFMP2_EXE, the dfmp2 measured end to end).
    python_path = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": python_path}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def run_dfmp2(args, molecule, out):
    """dfmp2 end to end on the command line, its JSON results."""
    json_path = out / f"dfmp2-{molecule}.json"
    command = [args.dfmp2, str(REPO / MOLECULES[molecule]), "--basis", "cc-pvdz", "--threads", str(args.threads),
               "--memory", f"{args.memory_mb}MB", "--d-convergence", args.d_convergence, "--quiet",
               "--json", str(json_path)]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    with open(json_path) as f:
        result = json.load(f)
    return {"wall": wall, "timings": result["timings"], "e_corr": result["e_corr"], "e_scf": result["e_scf"],
            "scf_iterations": result["scf_iterations"], "peak_rss_bytes": result["resources"]["peak_rss_bytes"],
            "blas_kernels": result["blas_kernels"], "threads": result["threads"]}


def header(records):
    """The machine, threads and both programs' OpenBLAS kernels, above the table."""
    fields = {}
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    cpu = f"{fields.get('Model name', 'unknown CPU')} (family {fields.get('CPU family', '?')}, model {fields.get('Model', '?')})"
    first = records[0]
    pyscf_blas = first["pyscf"]["pyscf_blas"]
    return (f"# dfmp2 against PySCF 2.14 (`bench/vs_pyscf.py`)\n\n{cpu}, {os.cpu_count()} cores; "
            f"{first['threads']} threads for both; OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'unset')}; "
            f"dfmp2's OpenBLAS kernels {first['dfmp2']['blas_kernels']}, PySCF's (numpy's {pyscf_blas['library']}) "
            f"{pyscf_blas['kernels']}; cc-pVDZ, cc-pVDZ-JKFIT (SCF) and cc-pVDZ-RI (MP2); one run per molecule. "
            "End to end: dfmp2's wall time against PySCF's DF-SCF plus `mp.dfmp2.DFMP2`; MP2 step: the bridge "
            "from PySCF's `mf` (data passing included) against PySCF's `DFMP2(mf).kernel(with_t2=False)`. "
            "Every number: `vs_pyscf.json`.\n\n")


def table(records):
    rows = ["| molecule | nbf | end to end dfmp2 / PySCF (s) | ratio | MP2 step bridge / PySCF (s) | ratio | "
            "peak RSS dfmp2 / PySCF (GB) | ΔE_corr dfmp2 − PySCF (Eh) | bridge − PySCF (Eh) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in records:
        d, p = r["dfmp2"], r["pyscf"]
        pyscf_total = p["times"]["pyscf_scf"] + p["times"]["pyscf_mp2"]
        rows.append(f"| {r['molecule']} | {p['nbf']} | {d['wall']:.1f} / {pyscf_total:.1f} | {pyscf_total / d['wall']:.2f}× | "
                    f"{p['times']['bridge_mp2']:.1f} / {p['times']['pyscf_mp2']:.1f} | "
                    f"{p['times']['pyscf_mp2'] / p['times']['bridge_mp2']:.2f}× | "
                    f"{d['peak_rss_bytes'] / 1e9:.2f} / {p['pyscf_peak_rss_bytes'] / 1e9:.2f} | "
                    f"{d['e_corr'] - p['pyscf_e_corr']:.1e} | {p['bridge_e_corr'] - p['pyscf_e_corr']:.1e} |")
    return "\n".join(rows) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--molecules", default="naphthalene-dimer,tetracene-dimer,water20")
    parser.add_argument("--memory-mb", type=int, default=16000)
    parser.add_argument("--d-convergence", default="1e-8")
    parser.add_argument("--dfmp2", default=str(REPO / "build" / "src" / "dfmp2"))
    parser.add_argument("--pyscf-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pyscf_child:
        args.molecule = args.pyscf_child
        print(json.dumps(pyscf_child(args)))
        return
    if args.out is None:
        parser.error("--out DIR is required")
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DFMP2_EXE", args.dfmp2)  # the bridge's executable, unless the package carries one
    records = []
    for molecule in args.molecules.split(","):
        records.append({"molecule": molecule, "threads": args.threads, "dfmp2": run_dfmp2(args, molecule, args.out),
                        "pyscf": run_pyscf(args, molecule)})
        (args.out / "vs_pyscf.json").write_text(json.dumps(records, indent=1) + "\n")
    (args.out / "vs_pyscf.md").write_text(header(records) + table(records))
    print(table(records))


if __name__ == "__main__":
    main()
