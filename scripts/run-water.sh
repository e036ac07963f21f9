#!/usr/bin/env bash
# Set-up command 1: install what is missing, build, and run the main job on bundled water.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build/src/dfmp2 inputs/water.h5 --json build/water.json
