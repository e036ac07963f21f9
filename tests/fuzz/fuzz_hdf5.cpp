// Fuzz target: an HDF5 input read as a run would (and its molecule validated). InputError is the
// expected answer to bad input; any other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include <pthread.h>

#include "src/common/errors.hpp"
#include "src/io/hdf5_io.hpp"
#include "tests/fuzz/fuzz_input.hpp"

// Present under sanitizers only (weak: the replay build has none).
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

// read_hdf5_input lets a forked child meet libhdf5 first: a crash there is an expected answer,
// so in the child libFuzzer must not record it as a finding.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (__sanitizer_set_death_callback)
    pthread_atfork(nullptr, nullptr, [] { __sanitizer_set_death_callback(nullptr); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const dfmp2::RunInput input = dfmp2::read_hdf5_input(dfmp2::fuzz::input_file(data, size, ".h5"));
    if (input.molecule) dfmp2::validate(*input.molecule);
  } catch (const dfmp2::InputError&) {
  }
  return 0;
}
