#!/usr/bin/env bash
# The GPU path in one command, for a GPU machine lent for a few minutes (README, "The GPU
# check"): from the repository root of a bare machine with CUDA, LibTorch (python3's
# torch), CMake and Ninja but no ITK and no package registry, it
#   1. configures and builds, without ITK, for sm_90, what the check needs;
#   2. runs every CUDA test (kernels, networks, a training step, a search step, NCCL);
#   3. measures warp against grid_sample, the networks against the AutoReg paper's GPU
#      figures, a training step and a search step, with their peak memory;
#   4. trains the default model's recipe on the packed training set for the rest of the
#      time budget and scores it on the set's validation pairs;
#   5. writes OUT/summary.md and summary.json (with tests.json, measure.json, train.json,
#      train.jsonl, model.autoreg and this log, device-check.log).
# A failing step is recorded and the next one runs: one run reports all it can.
#
#   scripts/device-check.sh [--rehearse] [--train-minutes 5] [--total-minutes 8]
#                           [--carry .device] [--out DIR]
#
# It needs the carried folder (--carry, default .device) that scripts/device-prepare.sh
# fills here. OUT: $OUT (the device tool's), else build-device/out. --rehearse runs the
# same steps here on the CPU, at small sizes and a short budget, in build-rehearse/ (the
# CUDA tests run with the CPU as their device, comparing it with itself).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rehearse=0 train_minutes="" total_minutes=8 carry="$root/.device" out="${OUT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rehearse) rehearse=1; shift ;;
    --train-minutes) train_minutes=$2; shift 2 ;;
    --total-minutes) total_minutes=$2; shift 2 ;;
    --carry) carry=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "device-check: unknown option $1" >&2; exit 1 ;;
  esac
done

if ((rehearse)); then
  build="$root/build-rehearse" device=cpu size=32x32x32 repeats=2 jobs="${AUTOREG_JOBS:-2}"
  train_minutes=${train_minutes:-0.5}
  export AUTOREG_REHEARSE_CUDA_TESTS=1
  torch_args=()  # LibTorch from scripts/setup.sh's environment
  cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
  export CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}" CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
else
  build="$root/build-device" device=cuda size=160x192x224 repeats=5 jobs=$(nproc)
  train_minutes=${train_minutes:-5}
  torch_args=(-DAUTOREG_TORCH_PYTHON="$(command -v python3)")
fi
out=${out:-$build/out}
mkdir -p "$out" "$build/gtest"
rm -f "$build/steps.jsonl" "$build"/gtest/*.json
log="$out/device-check.log"
exec > >(tee "$log") 2>&1
tee_pid=$!
start=$(date +%s)
echo "device-check: $( ((rehearse)) && echo rehearsal on the CPU || echo GPU run) from $root, carried $carry, results in $out"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

# Arithmetic without bc (not on every machine): python3 is.
calc() { python3 -c "print(round($1, 3))"; }

# step NAME COMMAND...: runs it, times it, records whether it passed.
step() {
  local name=$1 t0 rc
  shift
  echo "=== $name: $*"
  t0=$(date +%s.%N)
  "$@"
  rc=$?
  printf '{"step": "%s", "ok": %s, "seconds": %s, "exit": %d}\n' "$name" "$([[ $rc == 0 ]] && echo true || echo false)" \
    "$(calc "$(date +%s.%N) - $t0")" "$rc" >>"$build/steps.jsonl"
  ((rc == 0)) || echo "=== $name FAILED (exit $rc); going on"
  return 0
}

[[ -f "$carry/oasis_trt.trainset" && -d "$carry/third_party/googletest" ]] ||
  echo "device-check: $carry lacks oasis_trt.trainset or third_party/ (scripts/device-prepare.sh here, then carry it)"

step configure cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --log-level=WARNING \
  -DAUTOREG_WITH_ITK=OFF -DAUTOREG_BUILD_EXAMPLES=OFF -DAUTOREG_THIRD_PARTY="$carry/third_party" \
  -DCMAKE_CUDA_ARCHITECTURES=90 ${torch_args[@]+"${torch_args[@]}"}
step build cmake --build "$build" -j "$jobs" --target autoreg_ops_tests \
  autoreg_search_tests autoreg_parallel_tests autoreg_device_check

# Every CUDA test: the kernels' (Cuda*), the networks', training's and search's (CudaPaths),
# NCCL's (Collective.Nccl*).
cuda_tests() {
  local rc=0 t
  for t in autoreg_ops_tests autoreg_search_tests autoreg_parallel_tests; do
    "$build/bin/$t" --gtest_filter='Cuda*:*Cuda*:*Nccl*' --gtest_output="json:$build/gtest/$t.json" || rc=1
  done
  return $rc
}
step cuda-tests cuda_tests

step measure "$build/bin/autoreg_device_check" measure --device $device --size $size --repeats $repeats \
  --set "$carry/oasis_trt.trainset" --model "$root/models/default.autoreg" --json "$out/measure.json"

# Training gets --train-minutes, or what is left of --total-minutes (half a minute kept
# for scoring and the summary).
minutes=$(calc "min($train_minutes, $total_minutes - ($(date +%s) - $start) / 60 - 0.5)")
if [[ $(calc "int($minutes > 0.1)") == 1 ]]; then
  step train "$build/bin/autoreg_device_check" train --device $device --minutes "$minutes" \
    --set "$carry/oasis_trt.trainset" --model "$root/models/default.autoreg" \
    --out "$out/model.autoreg" --log "$out/train.jsonl" --json "$out/train.json"
else
  echo "=== train: no time left of --total-minutes $total_minutes"
fi

step summary python3 "$root/scripts/device_summary.py" --build "$build" --out "$out" $( ((rehearse)) && echo --rehearse)
echo "device-check: $(($(date +%s) - start)) s in all"
# Every line in the log before the results are collected.
exec 1>&- 2>&-
wait "$tee_pid"
