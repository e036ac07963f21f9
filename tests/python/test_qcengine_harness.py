"""QCEngine's harness for dfmp2 (python/dfmp2/qcengine_harness.py) with Debian's qcengine:
`qcengine.compute(input, "dfmp2")` against the command line and against Psi4 1.3 run through
QCEngine's own psi4 harness (tests/reference/psi4_qcengine_reference.py)."""
import unittest

import dfmp2  # noqa: F401  (registers the harness)
import qcengine

from support import cli_json, psi4_qcengine_reference

# Eh. Measured: 6.4e-12 apart at most (water's total); 1e-9 stays above the spread between
# machines' kernels and dfmp2's run-to-run spread on two threads (up to 1.6e-10 Eh).
PSI4_TOLERANCE = 1e-9
CLI_TOLERANCE = 1e-12  # Eh: the same run, through QCSchema or the command line
CLI_GRADIENT_TOLERANCE = 1e-10  # Eh/bohr


class HarnessTest(unittest.TestCase):
    def compute(self, atomic_input):
        # One thread, as the command line it is compared with (support.cli_json).
        return qcengine.compute(atomic_input, "dfmp2", task_config={"ncores": 1, "memory": 1})

    def test_registered_and_found(self):
        self.assertIn("dfmp2", qcengine.list_all_programs())
        self.assertTrue(qcengine.get_program("dfmp2").found())
        self.assertEqual(qcengine.get_program("dfmp2").get_version(), "0.1.0")

    def test_water_mp2_equals_the_command_line_and_psi4(self):
        ref = psi4_qcengine_reference("water-mp2-cc-pvdz")
        result = self.compute(ref["input"])
        self.assertTrue(result.success, getattr(result, "error", None))
        self.assertEqual(result.provenance.creator, "dfmp2")
        self.assertAlmostEqual(result.return_result, ref["return_energy"], delta=PSI4_TOLERANCE)
        for key in ("scf_total_energy", "mp2_same_spin_correlation_energy", "mp2_opposite_spin_correlation_energy",
                    "mp2_total_energy", "nuclear_repulsion_energy"):
            self.assertAlmostEqual(getattr(result.properties, key), ref["properties"][key], delta=PSI4_TOLERANCE)
        for key in ("calcinfo_nbasis", "calcinfo_nmo", "calcinfo_nalpha", "calcinfo_nbeta", "calcinfo_natom"):
            self.assertEqual(getattr(result.properties, key), ref["properties"][key])
        molecule = ref["input"]["molecule"]
        keywords = ref["input"]["keywords"]
        cli = cli_json(molecule["symbols"], molecule["geometry"],
                       ["--basis", "cc-pvdz", "--df-basis", keywords["df_basis_mp2"], "--jk-basis",
                        keywords["df_basis_scf"], "--d-convergence", "1e-10"])
        self.assertAlmostEqual(result.return_result, cli["e_total"], delta=CLI_TOLERANCE)
        self.assertIn("dfmp2 — density-fitted MP2", result.stdout)

    def test_water_mp2_gradient_equals_the_command_line(self):
        atomic_input = {**psi4_qcengine_reference("water-mp2-cc-pvdz")["input"], "driver": "gradient"}
        result = self.compute(atomic_input)
        self.assertTrue(result.success, getattr(result, "error", None))
        self.assertEqual(result.return_result.shape, (3, 3))
        molecule = atomic_input["molecule"]
        keywords = atomic_input["keywords"]
        cli = cli_json(molecule["symbols"], molecule["geometry"],
                       ["--basis", "cc-pvdz", "--df-basis", keywords["df_basis_mp2"], "--jk-basis",
                        keywords["df_basis_scf"], "--d-convergence", "1e-10", "--gradient"])
        for row, cli_row in zip(result.return_result, cli["gradient"]):
            for value, expected in zip(row, cli_row):
                self.assertAlmostEqual(value, expected, delta=CLI_GRADIENT_TOLERANCE)
        self.assertAlmostEqual(result.properties.return_energy, cli["e_total"], delta=CLI_TOLERANCE)

    def test_ecp_molecule_gradient_equals_the_command_line(self):
        # Silver hydride in def2-SVP: silver's 28 core electrons are its potential's, counted nowhere.
        atomic_input = {"molecule": {"symbols": ["Ag", "H"], "geometry": [0.0, 0.1, -0.05, 0.2, 0.3, 3.0]},
                        "driver": "gradient", "model": {"method": "mp2", "basis": "def2-svp"}}
        result = self.compute(atomic_input)
        self.assertTrue(result.success, getattr(result, "error", None))
        self.assertEqual((result.properties.calcinfo_nalpha, result.properties.calcinfo_nbeta), (10, 10))
        cli = cli_json(["Ag", "H"], atomic_input["molecule"]["geometry"], ["--basis", "def2-svp", "--gradient"])
        for row, cli_row in zip(result.return_result, cli["gradient"]):
            for value, expected in zip(row, cli_row):
                self.assertAlmostEqual(value, expected, delta=CLI_GRADIENT_TOLERANCE)
        self.assertGreater(abs(result.return_result).max(), 1e-3)  # Eh/bohr: away from the minimum
        self.assertAlmostEqual(result.properties.return_energy, cli["e_total"], delta=CLI_TOLERANCE)

    def test_hydroxyl_ump2_equals_psi4(self):
        ref = psi4_qcengine_reference("hydroxyl-mp2-cc-pvdz")
        result = self.compute(ref["input"])
        self.assertTrue(result.success, getattr(result, "error", None))
        self.assertAlmostEqual(result.return_result, ref["return_energy"], delta=PSI4_TOLERANCE)
        self.assertEqual(result.properties.calcinfo_nbeta, 4)

    def test_bad_input_is_a_failed_operation_with_a_clear_message(self):
        atomic_input = psi4_qcengine_reference("water-mp2-cc-pvdz")["input"]
        cases = [({"driver": "gradient", "model": {"method": "hf", "basis": "cc-pvdz"}}, "input_error",
                  "driver gradient needs model.method mp2"),
                 ({"keywords": {"puream": True}}, "input_error", "unknown keyword 'puream'"),
                 ({"keywords": {"maxiter": 2}}, "convergence_error", "SCF did not converge in 2 iterations")]
        for change, error_type, message in cases:
            with self.subTest(message=message):
                result = self.compute({**atomic_input, **change})
                self.assertFalse(result.success)
                self.assertEqual(result.error.error_type, error_type)
                self.assertIn(message, result.error.error_message)
                self.assertNotIn("Traceback", result.error.error_message)


if __name__ == "__main__":
    unittest.main()
