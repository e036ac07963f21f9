// Fuzz target: an XYZ file read and validated as a run would. InputError is the expected answer
// to bad input; any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include "src/common/errors.hpp"
#include "src/io/xyz.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    dfmp2::validate(dfmp2::read_xyz(dfmp2::fuzz::input_file(data, size, ".xyz")));
  } catch (const dfmp2::InputError&) {
  }
  return 0;
}
