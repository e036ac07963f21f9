// QCSchema, MolSSI's JSON for quantum chemistry that QCEngine and QCFractal speak: an AtomicInput
// becomes the run's input and options, the run's result an AtomicResult. Keywords take Psi4's
// names where Psi4 has the option, so that one input runs with either program; the table of them
// is in docs/qcschema.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "src/run/options.hpp"
#include "src/run/run_input.hpp"
#include "src/run/run_result.hpp"

namespace dfmp2 {

// model.method: what return_result is.
enum class QcMethod { hf, mp2, scs_mp2 };

struct QcschemaJob {
  RunInput input;  // the molecule (ghost atoms from `real`) and its basis set names
  RunOptions options;
  QcMethod method = QcMethod::mp2;
};

// Throws InputError naming the field for what dfmp2 cannot run: a document that is not an
// AtomicInput, a driver other than energy and gradient (the DF-MP2 gradient: model.method mp2,
// where --gradient covers the run), a method other than hf, mp2 and scs-mp2, a basis that is not
// a name, an unknown keyword or a keyword's bad value.
QcschemaJob read_atomic_input(const nlohmann::json& input);

// The AtomicResult of a run: the input's fields echoed, return_result (the method's energy, or for
// driver gradient the gradient, also as properties.return_gradient) and properties for the method
// (SCS-MP2's energies, which QCSchema's properties lack, in extras.qcvars under Psi4's names),
// provenance, and the report as stdout unless protocols.stdout is false.
nlohmann::json atomic_result(const nlohmann::json& input, QcMethod method, const RunResult& result,
                             const std::string& report);

// success false with error {error_type, error_message}, echoing the input's fields when it was a
// JSON object. error_type is QCEngine's: input_error, convergence_error, resource_error,
// unknown_error.
nlohmann::json failed_result(const nlohmann::json& input, const std::string& error_type, const std::string& message);

}  // namespace dfmp2
