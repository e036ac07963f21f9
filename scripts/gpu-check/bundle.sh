#!/usr/bin/env bash
# The device check, part 1, on this CPU machine: builds build-gpu/ (Release, CUDA for sm_90 + PTX,
# without MPI: a singleton OpenMPI run would need its orted on the GPU machine) and packs
# .gpu-bundle/bundle.tar.xz: dfmp2, test_gpu, bench_energy_gpu, dfmp2_amdahl and the shared
# libraries they load, less the C library's, the GPU driver's and cuBLAS (the GPU machine's own
# CUDA provides those). The repository travels beside it (basis sets, inputs, references, these
# scripts); run.sh is part 2. docs/gpu.md says how to hand both to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh
CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}" cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DDFMP2_USE_MPI=OFF \
  -DDFMP2_CUDA=ON >/dev/null
cmake --build build-gpu -j "$(nproc)" --target dfmp2 test_gpu bench_energy_gpu dfmp2_amdahl
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" .gpu-bundle
cp build-gpu/src/dfmp2 build-gpu/tests/gpu/test_gpu build-gpu/bench/bench_energy_gpu \
  build-gpu/bench/amdahl/dfmp2_amdahl "$stage/bin/"
# Every library the binaries resolve here, but the ones every Linux and every CUDA machine has.
ldd "$stage"/bin/* | awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcublas|libcublasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
strip --strip-unneeded "$stage"/bin/* 2>/dev/null || true
tar -C "$stage" -cJf .gpu-bundle/bundle.tar.xz bin lib
echo "bundle: .gpu-bundle/bundle.tar.xz ($(du -h .gpu-bundle/bundle.tar.xz | cut -f1))"
