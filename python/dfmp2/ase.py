"""An ASE calculator for dfmp2: ``atoms.calc = DFMP2(method="mp2", basis="cc-pvdz")``.

Energies for every method; forces (from dfmp2's analytic gradient) and the relaxed DF-MP2 dipole
moment (from the gradient's relaxed density) for method mp2, where dfmp2's ``--gradient`` covers
the run (RHF or UHF, density-fitted SCF)."""
import numpy as np
from ase import units
from ase.calculators.calculator import Calculator, CalculationFailed, all_changes

from .executable import run_qcschema


class DFMP2(Calculator):
    """DF-MP2 (or HF, SCS-MP2) energies of a molecule from dfmp2, and DF-MP2 forces.

    Parameters: ``method`` (hf, mp2, scs-mp2; default mp2), ``basis`` (default cc-pvdz),
    ``charge`` (0) and ``multiplicity`` (1); every other parameter is one of dfmp2's QCSchema
    keywords (docs/qcschema.md), e.g. ``freeze_core=True``, ``scf_type="pk"``,
    ``df_basis_mp2="cc-pvtz-ri"``, ``memory="4GB"``. Energies in eV, forces in eV/Å and the dipole
    in e·Å about the origin of the atoms' positions, as ASE's."""

    implemented_properties = ["energy", "free_energy", "forces", "dipole"]
    default_parameters = {"method": "mp2", "basis": "cc-pvdz", "charge": 0, "multiplicity": 1}
    _model_parameters = ("method", "basis", "charge", "multiplicity")

    def __init__(self, restart=None, label=None, atoms=None, **kwargs):
        Calculator.__init__(self, restart=restart, label=label, atoms=atoms, **kwargs)

    def atomic_input(self, atoms, driver="energy"):
        """The QCSchema AtomicInput of this calculator's run on ``atoms`` (geometry in bohr)."""
        if atoms.pbc.any():
            raise CalculationFailed("dfmp2 computes molecules: the atoms must not be periodic")
        p = self.parameters
        molecule = {"symbols": atoms.get_chemical_symbols(),
                    "geometry": (atoms.get_positions() / units.Bohr).ravel().tolist(),
                    "molecular_charge": p["charge"], "molecular_multiplicity": p["multiplicity"],
                    "fix_com": True, "fix_orientation": True}
        keywords = {k: v for k, v in p.items() if k not in self._model_parameters}
        return {"schema_name": "qcschema_input", "schema_version": 1, "molecule": molecule, "driver": driver,
                "model": {"method": p["method"], "basis": p["basis"]}, "keywords": keywords,
                "protocols": {"stdout": False}}

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        Calculator.calculate(self, atoms, properties, system_changes)
        # The gradient run gives both the forces and the relaxed dipole.
        gradient_run = "forces" in properties or "dipole" in properties
        result = run_qcschema(self.atomic_input(self.atoms, "gradient" if gradient_run else "energy"))
        if not result["success"]:
            raise CalculationFailed(f"dfmp2: {result['error']['error_message']}")
        self.results["energy"] = self.results["free_energy"] = result["properties"]["return_energy"] * units.Hartree
        if gradient_run:
            gradient = np.reshape(result["return_result"], (len(self.atoms), 3))
            self.results["forces"] = -gradient * (units.Hartree / units.Bohr)
            self.results["dipole"] = np.array(result["properties"]["mp2_dipole_moment"]) * units.Bohr
