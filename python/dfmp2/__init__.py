"""dfmp2 from Python: density-fitted MP2 energies through QCSchema.

* QCEngine: importing this package registers a harness, so that
  ``qcengine.compute(atomic_input, "dfmp2")`` runs dfmp2 (when QCEngine is installed).
* ASE: ``dfmp2.ase.DFMP2``, a calculator (energies).
* ``dfmp2.run_qcschema(atomic_input)``: one AtomicInput (a dict) in, its AtomicResult (a dict) out.

* PySCF: ``dfmp2.pyscf.DFMP2(mf)``, DF-MP2 energies and gradients from a converged RHF or UHF
  object, without running the SCF again.

Each runs the dfmp2 executable: the one this package carries (``bin/dfmp2``, which ``pip install``
puts there and ``cmake --install`` links), else the one from ``$DFMP2_EXE``, else the one on
``PATH``.
"""
from importlib.util import find_spec

from .executable import find_executable, run_qcschema

__all__ = ["find_executable", "run_qcschema"]

if find_spec("qcengine") is not None:  # without QCEngine the ASE calculator and run_qcschema still work
    from . import qcengine_harness

    qcengine_harness.register()
