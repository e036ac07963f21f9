#!/usr/bin/env bash
# Configures and builds dfmp2 (Release) into build/. Extra arguments go to the CMake configure.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
