"""Finding the dfmp2 executable and running its ``qcschema`` command."""
import json
import os
import shutil
import subprocess

__all__ = ["find_executable", "run_qcschema"]


def _is_executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_executable():
    """The dfmp2 executable: the one this package carries (``bin/dfmp2`` beside this file, as
    ``pip install`` and ``cmake --install`` put it), else ``$DFMP2_EXE``, else ``dfmp2`` on ``PATH``.

    Raises FileNotFoundError saying where it looked."""
    carried = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "dfmp2")
    if _is_executable(carried):
        return carried
    given = os.environ.get("DFMP2_EXE")
    if given:
        if not _is_executable(given):
            raise FileNotFoundError(f"DFMP2_EXE is {given!r}, which is not an executable file")
        return given
    on_path = shutil.which("dfmp2")
    if on_path:
        return on_path
    raise FileNotFoundError(f"the dfmp2 executable was not found: none carried by the package ({carried}), "
                            "so set DFMP2_EXE or put dfmp2 on PATH")


def run_qcschema(atomic_input, memory=None, threads=None):
    """Runs one QCSchema AtomicInput (a dict, as JSON would hold it) and returns the AtomicResult
    dict that dfmp2 wrote: ``success`` true with the energies, or false with ``error``
    (``error_type``, ``error_message``) for an input dfmp2 cannot run. ``memory`` (e.g. "4GiB")
    and ``threads`` apply unless the input's keywords say otherwise. dfmp2's stderr (progress,
    the error line) is returned as the result's ``stderr``. Raises RuntimeError when dfmp2 gives
    no result at all (it crashed or was killed)."""
    command = [find_executable(), "qcschema", "-"]
    if memory is not None:
        command += ["--memory", str(memory)]
    if threads is not None:
        command += ["--threads", str(int(threads))]
    done = subprocess.run(command, input=json.dumps(atomic_input), capture_output=True, text=True, check=False)
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"dfmp2 gave no QCSchema result (exit status {done.returncode}): "
                           f"{done.stderr.strip()}") from None
    result["stderr"] = done.stderr
    return result
