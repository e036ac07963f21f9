#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test suite: the normal
# build's tests, the same under AddressSanitizer + UBSan (scripts/test-sanitizers.sh), then the
# input readers' fuzzers (scripts/test-fuzz.sh). Ends with each part's wall time, the machine and
# the commit, so that a log of it says how long the test command took where.
set -euo pipefail
cd "$(dirname "$0")/.."
times=()
timed() {  # timed NAME COMMAND...: run COMMAND, keep its wall time under NAME
  local start=$SECONDS
  "${@:2}"
  times+=("$1 $((SECONDS - start)) s")
}
normal_suite() {
  (cd build && OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j 1)
  # A case that cannot run on this machine prints "SKIPPED: <reason>" (tests/src/skip.hpp) and
  # CTest lists it as not run: how many were skipped, and why.
  local skips
  skips=$(grep '^SKIPPED: ' build/Testing/Temporary/LastTest.log || true)
  echo "Skipped: $(grep -c . <<<"$skips" || true) test(s)"
  [[ -z "$skips" ]] || sort <<<"$skips" | uniq -c
}
timed install-deps scripts/install-deps.sh
timed build scripts/build.sh
timed normal-suite normal_suite
timed sanitizers scripts/test-sanitizers.sh
timed fuzzers scripts/test-fuzz.sh
echo "Test command passed on $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
  "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%F):"
printf '  %s\n' "${times[@]}" "total $SECONDS s"
