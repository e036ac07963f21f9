#!/usr/bin/env bash
# The input readers' fuzzers (libFuzzer with clang 14, ASan + UBSan) built into build-fuzz/ and
# run by CTest for DFMP2_FUZZ_SECONDS each (default 60) over the committed corpus in tests/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DDFMP2_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDFMP2_FUZZ_SECONDS="${DFMP2_FUZZ_SECONDS:-60}" >/dev/null
cmake --build build-fuzz -j "$(nproc)"
cd build-fuzz
# The HDF5 target is left out: in its long-lived process libhdf5 1.10 sometimes loops inside the
# reader's own read of a damaged file that the forked check came through (nondeterministically),
# so it can fail CI by chance. Run it by hand: (cd build-fuzz && ctest -R fuzz_hdf5). Its corpus
# and regressions are replayed by the normal and sanitizer builds (fuzz_hdf5_corpus).
ctest --output-on-failure -j 1 -E '^fuzz_hdf5$'

