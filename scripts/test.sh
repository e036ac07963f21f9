#!/usr/bin/env bash
# Set-up command 2: install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" ctest --output-on-failure -j 1
