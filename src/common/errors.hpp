// The one error type for problems the user can fix (bad input, bad options, no convergence):
// main prints its message as one line and exits non-zero.
#pragma once

#include <stdexcept>

namespace dfmp2 {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace dfmp2
