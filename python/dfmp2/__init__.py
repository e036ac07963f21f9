"""dfmp2 from Python: density-fitted MP2 energies through QCSchema.

* QCEngine: importing this package registers a harness, so that
  ``qcengine.compute(atomic_input, "dfmp2")`` runs dfmp2 (when QCEngine is installed).
* ASE: ``dfmp2.ase.DFMP2``, a calculator (energies).
* ``dfmp2.run_qcschema(atomic_input)``: one AtomicInput (a dict) in, its AtomicResult (a dict) out.

Each runs the dfmp2 executable's ``qcschema`` command: the one from ``$DFMP2_EXE``, else a
``dfmp2`` beside this package's files (where ``cmake --install`` links it), else the one on
``PATH``.
"""
from importlib.util import find_spec

from .executable import find_executable, run_qcschema

__all__ = ["find_executable", "run_qcschema"]

if find_spec("qcengine") is not None:  # without QCEngine the ASE calculator and run_qcschema still work
    from . import qcengine_harness

    qcengine_harness.register()
