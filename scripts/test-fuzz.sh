#!/usr/bin/env bash
# The input readers' fuzzers (libFuzzer with clang 14, ASan + UBSan) built into build-fuzz/ and
# run by CTest for DFMP2_FUZZ_SECONDS each (default 45) over the committed corpus in tests/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang-14 CXX=clang++-14 scripts/cmake-build.sh build-fuzz -DDFMP2_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDFMP2_FUZZ_SECONDS="${DFMP2_FUZZ_SECONDS:-45}"
cd build-fuzz
ctest --output-on-failure -j 1
