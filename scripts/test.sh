#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test suite: the normal
# build's tests, the same under AddressSanitizer + UBSan (scripts/test-sanitizers.sh), then the
# input readers' fuzzers (scripts/test-fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j 1)
scripts/test-sanitizers.sh
scripts/test-fuzz.sh
