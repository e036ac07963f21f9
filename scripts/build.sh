#!/usr/bin/env bash
# Configures and builds dfmp2 (Release) into build/. Extra arguments go to the CMake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/cmake-build.sh build -DCMAKE_BUILD_TYPE=Release "$@"
