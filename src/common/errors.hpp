// The one error type for problems the user can fix (bad input, bad options, no convergence):
// main prints its message as one line and exits non-zero.
#pragma once

#include <stdexcept>

namespace dfmp2 {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An iteration (the SCF) that did not converge: the user's to fix too (more iterations, another
// guess), told apart only where a caller classifies errors (QCSchema's error_type).
struct ConvergenceError : InputError {
  using InputError::InputError;
};

}  // namespace dfmp2
