"""QCEngine's harness for dfmp2: ``qcengine.compute(atomic_input, "dfmp2")``.

Registered by ``import dfmp2``. QCEngine's task configuration gives the threads (``ncores``) and
the memory budget (``memory``, GiB) unless the input's keywords set ``memory``."""
import json
import subprocess
from typing import Dict

import qcengine
from qcelemental.models import AtomicResult, FailedOperation
from qcengine.programs.model import ProgramHarness

from .executable import find_executable, run_qcschema


class DFMP2Harness(ProgramHarness):
    """Runs ``dfmp2 qcschema``: energies (hf, mp2, scs-mp2) and DF-MP2 gradients of a QCSchema AtomicInput."""

    _defaults = {
        "name": "dfmp2",
        "scratch": False,
        "thread_safe": True,
        "thread_parallel": True,
        "node_parallel": False,
        "managed_memory": True,
    }
    version_cache: Dict[str, str] = {}

    class Config(ProgramHarness.Config):
        pass

    @staticmethod
    def found(raise_error: bool = False) -> bool:
        try:
            find_executable()
        except FileNotFoundError as error:
            if raise_error:
                raise ModuleNotFoundError(str(error)) from error
            return False
        return True

    def get_version(self) -> str:
        executable = find_executable()
        if executable not in self.version_cache:
            done = subprocess.run([executable, "--version"], capture_output=True, text=True, check=True)
            self.version_cache[executable] = done.stdout.split()[-1]
        return self.version_cache[executable]

    def compute(self, input_model, config):
        result = run_qcschema(json.loads(input_model.json()), memory=f"{config.memory}GiB", threads=config.ncores)
        if not result["success"]:
            return FailedOperation(input_data=input_model, error=result["error"], success=False)
        result["provenance"]["memory"] = round(config.memory, 3)
        result["provenance"]["nthreads"] = config.ncores
        return AtomicResult(**result)


def register():
    """Registers the harness with QCEngine, once."""
    if "dfmp2" not in qcengine.list_all_programs():
        qcengine.register_program(DFMP2Harness())
