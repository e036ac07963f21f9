#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test suite: the normal
# build's tests, the same under AddressSanitizer + UBSan (scripts/test-sanitizers.sh), then the
# input readers' fuzzers (scripts/test-fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
(cd build && OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j 1)
# A case that cannot run on this machine prints "SKIPPED: <reason>" (tests/src/skip.hpp) and CTest
# lists it as not run: how many were skipped, and why.
skips=$(grep '^SKIPPED: ' build/Testing/Temporary/LastTest.log || true)
echo "Skipped: $(grep -c . <<<"$skips" || true) test(s)"
[[ -z "$skips" ]] || sort <<<"$skips" | uniq -c
scripts/test-sanitizers.sh
scripts/test-fuzz.sh
