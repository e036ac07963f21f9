#!/usr/bin/env bash
# Configures the build tree DIR (the other arguments go to the CMake configure) and builds it on
# every core. A new tree uses Ninja: a target's objects compile while the libraries it links are
# still being built, where Make's target order leaves a core idle. A tree configured before keeps
# its generator.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}" cmake -S . -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
