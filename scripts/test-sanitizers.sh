#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (gcc, MPI on as in the
# normal build), built into build-asan/. Any report fails the test it comes from: UBSan does not
# recover, and ASan's leak checker runs at every exit with OpenMPI's own leaks suppressed.
# Runs everything but (see README.md, "What scripts/test.sh runs"): the slowest energy
# comparisons; the RHF sweep of every backend on 2–4 ranks and the distributed exact-SCF/fp32 run,
# whose code the UHF sweep on 2 and 3 ranks and the UHF exact-SCF/fp32 run reach too, and the RHF
# run on more ranks than active orbitals, whose code the UHF one on more ranks than β orbitals
# reaches; the UHF DF-MP2 gradient's finite differences (a UHF energy at every displaced geometry),
# whose gradient code the closed-shell UHF and OH-doublet gradient tests run too; the Python
# package's tests, which reach dfmp2's C++ through the same CLI paths as the qcschema and CLI
# tests; and the test of peak RSS against --memory: ASan's shadow
# memory and quarantine of freed blocks are RSS the budget does not (and should not) count.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizers="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
# Line tables (-g1) are all a sanitizer's stack trace reads, and a fifth cheaper to compile than
# full debug information. The fuzz job replays the fuzzers' committed inputs under ASan + UBSan,
# and the benchmark drivers' test is skipped here, so neither is built.
scripts/cmake-build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$sanitizers" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_EXE_LINKER_FLAGS="$sanitizers" \
  -DDFMP2_BUILD_BENCH=OFF -DDFMP2_REPLAY_FUZZ_CORPUS=OFF
# Full unwinding at each allocation: OpenMPI's libraries have no frame pointers, and a leak's
# stack must reach them for the suppressions to see whose it is.
export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan-openmpi.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
skipped=(
  "^energies:(DF-RHF / RHF and DF-MP2 energies match Psi4|every backend and precision agrees)"
  "^memory:the budget \(--memory\) bounds a whole run's peak RSS"
  "^mpi:(2 and 3 ranks give the serial energies for every backend|exact SCF and fp32 also run distributed)"
  "^mpi:more ranks than active occupied orbitals still give the serial energy"
  "^gradient:the UHF DF-MP2 gradient is the central differences"
  "^python: "
)
OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j 1 -E "$(IFS='|'; echo "${skipped[*]}")"
# Cases that could not run here (tests/src/skip.hpp), as scripts/test.sh reports them.
skips=$(grep '^SKIPPED: ' Testing/Temporary/LastTest.log || true)
echo "Skipped: $(grep -c . <<<"$skips" || true) test(s)"
[[ -z "$skips" ]] || sort <<<"$skips" | uniq -c
