#!/usr/bin/env bash
# The device check, part 2, on the GPU machine, from the repository's root with .gpu-bundle carried
# (bundle.sh made it): the GPU tests, compute-sanitizer's memcheck and racecheck on the small ones,
# the energy-step benchmarks beside cuBLAS and PyTorch, and whole runs with the energy step on the
# CPU threads and on the GPU. Logs and results go to $OUT (what comes back: at most 8 files).
#   scripts/gpu-check/run.sh [all|tests|racecheck|bench|torch|runs|whole|gradient|scaling|ncu]...   (default: all)
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out" /tmp/gpu-bundle
log=$out/log.txt
tar -xJf .gpu-bundle/bundle.tar.xz -C /tmp/gpu-bundle || { echo "no bundle: run scripts/gpu-check/bundle.sh" >&2; exit 1; }
# cuBLAS from this machine's CUDA (the toolkit's, else PyTorch's wheel).
cublas=$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /opt /usr/lib -name 'libcublas.so.13*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH=/tmp/gpu-bundle/lib:$(dirname "${cublas:-/none}"):${LD_LIBRARY_PATH:-}
export DFMP2_BASIS_PATH=$root/basis DFMP2_SOURCE_DIR=$root OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# In a virtual machine that hides the CPU's model, OpenBLAS falls back to its Prescott (SSE3)
# kernels, a tenth of the machine's GEMM rate: name the kernel set its instructions allow.
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
bin=/tmp/gpu-bundle/bin
steps=("${@:-all}")
wants() { [[ " ${steps[*]} " == *" all "* || " ${steps[*]} " == *" $1 "* ]]; }
deadline=$(( ${DFMP2_CHECK_SECONDS:-100000} - 20 ))
step() {  # step NAME SECONDS COMMAND...: timed, logged, never fatal
  local name=$1 limit=$2 left=$((deadline - SECONDS)); shift 2
  if ((left < 15)); then echo "=== $name: skipped, ${left} s left of the call" | tee -a "$log"; return; fi
  ((limit > left)) && limit=$left
  echo "=== $name ($(date +%T)): $*" | tee -a "$log"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  nvidia-smi | head -4
  echo "cuBLAS: $cublas; OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-}"; nproc; grep -m1 'model name' /proc/cpuinfo; nvcc --version | tail -2
  ldd "$bin/dfmp2" | grep -E "not found|cublas" 
} >"$out/env.txt" 2>&1
cat "$out/env.txt"
if wants tests; then
  step "test_gpu" 240 "$bin/test_gpu"
  step "memcheck" 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/test_gpu" "[sanitize]"
fi
if wants racecheck; then  # the kernels that share memory between threads: the energy step's and the amplitudes' (the others are cuBLAS's)
  step "racecheck" 120 compute-sanitizer --tool racecheck --error-exitcode 9 "$bin/test_gpu" "[racecheck]"
fi
if wants tests; then
  step "cli json" 60 "$bin/dfmp2" inputs/water.xyz --basis cc-pvdz --device gpu --json "$out/water_gpu.json"
fi
if wants bench; then  # both fused fp64 kernels (v2: kernels/gpu/fused_tiles.cuh); DFMP2_BENCH_ARGS narrows the shapes
  step "bench_energy_gpu" 240 "$bin/bench_energy_gpu" ${DFMP2_BENCH_ARGS:---cpu-shapes small,medium --threshold} \
    --fused-kernels v1,v2 --out "$out/energy_gpu.json"
fi
if wants ncu; then  # what the hardware counters say of the kernels on the medium shape
  medium=("$bin/bench_energy_gpu" --shapes medium --precisions fp64 --reps 1 --out /tmp/ncu-bench.json)
  step "ncu fused" 120 ncu --clock-control none --kernel-name regex:fused_pairs --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis "${medium[@]}"
  step "ncu fused v2" 120 ncu --clock-control none --kernel-name regex:fused_tiles --launch-count 1 --section SpeedOfLight \
    --section Occupancy --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis "${medium[@]}" --fused-kernels v2
  # The loop backend's first chunk: its cuBLAS GEMM and its reduction (the probes' 8 GEMMs skipped).
  step "ncu loop" 120 ncu --clock-control none --kernel-name regex:"gemm|reduce_pairs" --launch-skip 8 \
    --launch-count 2 --section SpeedOfLight --section Occupancy "${medium[@]}"
fi
if wants torch; then
  step "torch path" 120 python3 bench/torch_energy.py --out "$out/torch_energy.json"
fi
if wants runs; then
  step "amdahl" 400 python3 scripts/gpu-check/amdahl_runs.py "$bin/dfmp2_amdahl" "$out/amdahl_gpu.json" \
    ${DFMP2_GPU_MOLECULES:-water15 c20h42 water25}
fi
if wants gradient; then  # the DF-MP2 gradient end to end on each device (its SCF's J/K, amplitude loop and Z-vector on the GPU)
  step "gradient runs, amplitudes made on the GPU" 300 env DFMP2_GPU_AMPLITUDES=1 python3 scripts/gpu-check/whole_runs.py \
    "$bin/dfmp2" "$out/gradient_runs_made.json" --devices gpu --gradient ${DFMP2_GRADIENT_MOLECULES:-water15}
  step "gradient runs" 300 python3 scripts/gpu-check/whole_runs.py "$bin/dfmp2" "$out/gradient_runs.json" \
    --devices gpu,cpu --gradient ${DFMP2_GRADIENT_MOLECULES:-water15}
fi
if wants whole; then  # end to end on each device: every stage runs again on the GPU's side
  # GPU-only molecules first, each molecule's GPU run before its CPU run: a cut step keeps those.
  # 40 waters took 260 s on 16 CPU threads and 34 s with the GPU (H200).
  [ -n "${DFMP2_GPU_ONLY_MOLECULES:-}" ] && step "whole runs, GPU only" "${DFMP2_GPU_ONLY_SECONDS:-200}" \
    python3 scripts/gpu-check/whole_runs.py "$bin/dfmp2" "$out/whole_runs_gpu.json" --devices gpu $DFMP2_GPU_ONLY_MOLECULES
  step "whole runs" "${DFMP2_WHOLE_SECONDS:-300}" python3 scripts/gpu-check/whole_runs.py "$bin/dfmp2" \
    "$out/whole_runs.json" --devices gpu,cpu ${DFMP2_WHOLE_MOLECULES:-water25}
fi
if wants scaling; then  # the CPU path's thread scaling on this machine, every stage (DFMP2_SCALING_GRADIENT=1: the gradient's)
  step "thread scaling" 240 python3 scripts/gpu-check/whole_runs.py "$bin/dfmp2" "$out/thread_scaling.json" \
    --devices cpu --threads 1,2,4,8,16 ${DFMP2_SCALING_GRADIENT:+--gradient} ${DFMP2_SCALING_MOLECULE:-water15}
fi
# What comes back is at most 8 files: the results in one archive beside the log and env.txt.
(cd "$out" && shopt -s nullglob && files=(*.json *.md) && ((${#files[@]})) && tar -czf results.tar.gz --remove-files "${files[@]}")
grep -E "^===|passed|failed|ERROR SUMMARY|RACECHECK SUMMARY|error|^\| " "$log" | tail -80
