#!/usr/bin/env bash
# The GPU path in one command, for a GPU machine lent for a few minutes (docs/gpu-check.md):
# from the repository root of a bare machine with CUDA, LibTorch (python3's torch), CMake
# and Ninja but no ITK and no package registry, it
#   1. configures and builds, without ITK, for sm_90, what the check needs;
#   2. runs every CUDA test (kernels, networks, a training step, a search step, NCCL);
#   3. measures warp against grid_sample, the networks against the AutoReg paper's GPU
#      figures, a training step and a search step, with their peak memory;
#   4. trains the default model's recipe on the packed training set for the rest of the
#      time budget and scores it on the set's validation pairs;
#   5. writes OUT/summary.md and summary.json (with tests.json, measure.json, train.json,
#      train.jsonl, model.autoreg and this log, device-check.log).
#
#   scripts/device-check.sh [--rehearse] [--train-minutes 5] [--total-minutes 8]
#                           [--carry .device] [--out DIR]
#
# It needs the carried folder (--carry DIR, default .device in the repository root) that
# scripts/device-prepare.sh fills here. OUT: --out, else $OUT (the device tool's), else
# build-device/out (build-rehearse/out). --rehearse runs the same steps here on the CPU,
# at small sizes and a short budget, in build-rehearse/ (the CUDA tests run with the CPU
# as their device, comparing it with itself).
#
# Before anything is built or run it checks everything it needs, and when something is
# missing it stops at once (exit 2) with one message naming each missing thing and how to
# make it. It needs: the carried folder and what the steps read from it (oasis_trt.trainset;
# third_party/include/nlohmann/json.hpp, third_party/include/gloo/,
# third_party/googletest/CMakeLists.txt), models/default.autoreg, python3, CMake 3.22 or
# newer, Ninja and a C++ compiler; on the GPU machine also nvcc (on PATH, $CUDACXX, or
# /usr/local/cuda/bin, then put on PATH), python3's torch built with CUDA (the LibTorch
# it builds with) and a GPU that nvidia-smi lists (when nvidia-smi is there); in a
# rehearsal LibTorch where cmake/AutoregTorch.cmake looks ($Torch_DIR or
# $CMAKE_PREFIX_PATH, else a python with torch: $AUTOREG_TORCH_VENV, scripts/setup.sh's
# environment, python3). Nothing under ../shared is read. When it stops there, nothing is
# built and OUT gets only summary.md and summary.json saying that the check did not run
# and why (and only when --out or $OUT names OUT).
#
# Past that check a failing step is recorded and the next one runs (so that one run of
# the GPU's few minutes reports all it can), and the summary is written whatever failed.
# The summary (scripts/device_summary.py) is the one judge of what failed: it writes the
# verdict in summary.md's Result line and summary.json's "ok" and "failures", and its
# exit status becomes this script's. Exit status:
#   0  every step passed, every CUDA test binary reported, none of its tests failed and
#      at least one passed, and no measurement failed;
#   1  something failed (summary.md says what), or the summary could not be written;
#   2  it did not start: something it needs is missing, or an option is wrong.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
bad_option() { echo "device-check: $*" >&2; echo "usage: scripts/device-check.sh [--rehearse] [--train-minutes M] [--total-minutes M] [--carry DIR] [--out DIR] (--help)" >&2; exit 2; }
rehearse=0 train_minutes="" total_minutes=8 carry="$root/.device" out="${OUT:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rehearse) rehearse=1; shift; continue ;;
    -h|--help) usage; exit 0 ;;
    --train-minutes|--total-minutes|--carry|--out) [[ $# -ge 2 && -n $2 ]] || bad_option "$1 needs a value" ;;
    *) bad_option "unknown option $1" ;;
  esac
  case "$1" in
    --train-minutes) train_minutes=$2 ;;
    --total-minutes) total_minutes=$2 ;;
    --carry) carry=$2 ;;
    --out) out=$2 ;;
  esac
  shift 2
done
for m in "$train_minutes" "$total_minutes"; do
  [[ -z $m || $m =~ ^[0-9]+([.][0-9]+)?$ ]] || bad_option "minutes must be a number, not '$m'"
done
# Absolute, whether or not the folder is there (the check below says when it is not).
[[ $carry == /* ]] || carry="$PWD/$carry"
carry=${carry%/}
out_given=$out

if ((rehearse)); then
  build="$root/build-rehearse" device=cpu size=32x32x32 repeats=2 jobs="${AUTOREG_JOBS:-2}"
  train_minutes=${train_minutes:-0.5}
  export AUTOREG_REHEARSE_CUDA_TESTS=1
  cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
  export CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}" CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
else
  build="$root/build-device" device=cuda size=160x192x224 repeats=5 jobs=$(nproc)
  train_minutes=${train_minutes:-5}
fi
out=${out:-$build/out}
[[ $out == /* ]] || out="$PWD/$out"

# The files this script leaves in OUT: removed first, so that none is left from an
# earlier run to pass for this one's.
results=(summary.md summary.json tests.json measure.json train.json train.jsonl model.autoreg device-check.log)
clear_results() { local f; for f in "${results[@]}"; do rm -f "$out/$f"; done; }

# ---- what it needs, checked before anything is built -------------------------------
missing=()
need() { missing+=("$1"); }
if ((rehearse)); then
  prepare="run scripts/device-prepare.sh here first (it needs the normal build, scripts/build.sh, and ../shared/data)"
  install="scripts/setup.sh installs it"
else
  prepare="run scripts/device-prepare.sh where the normal build is, then carry the folder (the device tool's carry: [\".device\"])"
  install="the GPU machine is meant to have it (docs/gpu-check.md)"
fi
if [[ ! -d $carry ]]; then
  need "the carried folder $carry (training set and third_party/): $prepare"
else
  [[ -s $carry/oasis_trt.trainset ]] || need "$carry/oasis_trt.trainset (the packed training set): $prepare"
  [[ -f $carry/third_party/include/nlohmann/json.hpp ]] || need "$carry/third_party/include/nlohmann/json.hpp (nlohmann-json's headers): $prepare"
  [[ -d $carry/third_party/include/gloo ]] || need "$carry/third_party/include/gloo/ (gloo's headers): $prepare"
  [[ -f $carry/third_party/googletest/CMakeLists.txt ]] || need "$carry/third_party/googletest/ (GoogleTest's sources): $prepare"
fi
[[ -s $root/models/default.autoreg ]] ||
  need "$root/models/default.autoreg (the default model, in git): restore it (git checkout -- models/default.autoreg)"
command -v python3 >/dev/null || need "python3 (the script's arithmetic and its summary): $install"
if ! command -v cmake >/dev/null; then
  need "cmake (3.22 or newer): $install"
else
  cmake_version=$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9][0-9.]*\).*/\1/p')
  [[ -n $cmake_version && $(printf '%s\n' 3.22 "$cmake_version" | sort -V | head -n1) == 3.22 ]] ||
    need "cmake 3.22 or newer ($(command -v cmake) is ${cmake_version:-of unknown version}): $install"
fi
command -v ninja >/dev/null || need "ninja (the build's generator): $install"
compiler=""
for c in ${CXX:-} c++ g++ clang++; do command -v "$c" >/dev/null && { compiler=$c; break; }; done
[[ -n $compiler ]] || need "a C++ compiler (\$CXX, c++, g++ or clang++): $install"

# torch_prefix PYTHON [cuda]: LibTorch's CMake prefix from PYTHON's torch, as
# cmake/AutoregTorch.cmake asks for it; fails (saying why on stdout) when there is none, or
# with cuda when that torch is built without CUDA.
torch_prefix() {
  local p
  p=$("$1" -c "import sys, torch.utils
if sys.argv[1:] == ['cuda'] and not torch.version.cuda: sys.exit('torch ' + torch.__version__ + ' is built without CUDA')
print(torch.utils.cmake_prefix_path, end='')" "${@:2}" 2>&1) || { echo "${p##*$'\n'}"; return 1; }
  [[ -f $p/Torch/TorchConfig.cmake ]] || { echo "no $p/Torch/TorchConfig.cmake"; return 1; }
  echo "$p"
}
if ((rehearse)); then
  if [[ -z ${Torch_DIR:-} && -z ${CMAKE_PREFIX_PATH:-} ]]; then
    pin=$(head -n1 "$root/scripts/torch-version" 2>/dev/null)
    found=""
    for py in ${AUTOREG_TORCH_VENV:+"$AUTOREG_TORCH_VENV/bin/python"} "$cache/torch-${pin:-?}/bin/python" python3; do
      command -v "$py" >/dev/null && torch_prefix "$py" >/dev/null && { found=$py; break; }
    done
    [[ -n $found ]] || need "LibTorch (no python with torch: \$AUTOREG_TORCH_VENV, $cache/torch-${pin:-?}, python3; nor \$Torch_DIR): $install"
  fi
  if ! command -v "${CUDACXX:-nvcc}" >/dev/null; then
    echo "device-check: note: no nvcc, so this rehearsal builds without the CUDA code (the GPU machine builds it)" >&2
  fi
else
  if [[ -n ${CUDACXX:-} ]]; then
    command -v "$CUDACXX" >/dev/null || need "nvcc: \$CUDACXX=$CUDACXX is not an executable: unset it or point it at CUDA's nvcc"
  elif ! command -v nvcc >/dev/null; then
    if [[ -x /usr/local/cuda/bin/nvcc ]]; then
      export PATH="/usr/local/cuda/bin:$PATH"
      echo "device-check: note: nvcc was not on PATH; using /usr/local/cuda/bin/nvcc" >&2
    else
      need "nvcc (CUDA's compiler): put CUDA's bin/ on PATH or set \$CUDACXX"
    fi
  fi
  if command -v python3 >/dev/null; then
    why=$(torch_prefix python3 cuda) ||
      need "python3's torch built with CUDA (the build's LibTorch; $(command -v python3): $why): $install"
  fi
  if command -v nvidia-smi >/dev/null && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    need "a GPU (nvidia-smi -L lists none): run it on the GPU machine"
  fi
fi
# LibTorch: python3's on the GPU machine; in a rehearsal scripts/setup.sh's environment.
torch_args=()
((rehearse)) || torch_args=(-DAUTOREG_TORCH_PYTHON="$(command -v python3)")

# json_string TEXT: TEXT as a JSON string (the messages hold no control characters).
json_string() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
if ((${#missing[@]})); then
  {
    echo "device-check: cannot start; missing:"
    printf '  - %s\n' "${missing[@]}"
    echo "device-check: nothing was built or run (exit 2)"
  } >&2
  if [[ -n $out_given ]]; then
    mkdir -p "$out" && clear_results
    {
      echo "# autoreg device check$( ((rehearse)) && echo ' (rehearsal, CPU)'): did not run"
      echo
      echo "Result: did not run; nothing was built or run. Missing:"
      echo
      printf -- '- %s\n' "${missing[@]}"
    } >"$out/summary.md"
    {
      printf '{"rehearsal": %s, "ran": false, "ok": false, "missing": [' "$( ((rehearse)) && echo true || echo false)"
      sep=""
      for m in "${missing[@]}"; do printf '%s%s' "$sep" "$(json_string "$m")"; sep=", "; done
      printf ']}\n'
    } >"$out/summary.json"
  fi
  exit 2
fi

# ---- the steps -------------------------------------------------------------------------
mkdir -p "$out" "$build/gtest"
clear_results
rm -f "$build/steps.jsonl" "$build"/gtest/*.json
log="$out/device-check.log"
exec > >(tee "$log") 2>&1
tee_pid=$!
start=$(date +%s)
echo "device-check: $( ((rehearse)) && echo rehearsal on the CPU || echo GPU run) from $root, carried $carry, results in $out"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader

# Arithmetic without bc (not on every machine): python3 is.
calc() { python3 -c "print(round($1, 3))"; }

# step NAME COMMAND...: runs it, times it, records in BUILD/steps.jsonl whether it passed
# (the summary reads it), and goes on either way.
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

# The summary, written whatever failed, judges the run: 0 when everything passed, 1 when
# something failed (after writing summary.md and summary.json, which say what).
echo "=== summary: scripts/device_summary.py"
summary_args=(--build "$build" --out "$out")
((rehearse)) && summary_args+=(--rehearse)
python3 "$root/scripts/device_summary.py" "${summary_args[@]}"
summary_rc=$?
if ((summary_rc == 0)); then
  status=0 verdict="every step passed"
elif ((summary_rc == 1)) && [[ -f $out/summary.json ]]; then
  status=1 verdict="FAILED (summary.md's Result line and FAILED rows say what)"
else
  status=1 verdict="FAILED: the summary could not be written (scripts/device_summary.py exit $summary_rc)"
fi
echo "device-check: $(($(date +%s) - start)) s in all; $verdict; exit $status"
# Every line in the log before the results are collected.
exec 1>&- 2>&-
wait "$tee_pid"
exit "$status"
