#!/usr/bin/env bash
# Tests scripts/device-check.sh and scripts/device_summary.py without building anything
# (a few seconds). The script runs from a copy of scripts/ in a temporary repository root,
# with fake cmake, ninja and c++ first on PATH: the fake `cmake --build` writes fake test
# binaries (each writes a GoogleTest JSON report) and a fake autoreg_device_check (writes
# measure.json and train.json), and a fake python stands for the LibTorch environment.
#   1. what it needs is missing (no .device/, a .device/ without the training set; on the
#      GPU path a bad $CUDACXX, a python3 torch without CUDA, no GPU listed; a bad
#      option): exit 2 at once with a message naming it, nothing configured or built (no
#      build-rehearse/ or build-device/), and with --out only a summary saying the check
#      did not run;
#   2. every step passes, in a rehearsal and on the GPU path (fake nvcc, nvidia-smi and
#      torch module): exit 0;
#   3. a step fails (measure): the next steps still run, the summary is written and marks
#      it FAILED, stale results of an earlier run are gone, exit 1;
#   4. a CUDA test fails: exit 1;
#   5. device_summary.py alone: exit 0 when all passed, 1 for a failed step, a failed
#      measurement row, a test binary without a report.
#   bash tests/scripts/test_device_check.sh   (exit 0 when every check holds; KEEP=1 keeps its folder)
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_device_check.XXXXXX")
trap '[[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
fail() { echo "test_device_check: FAIL: $*" >&2; [[ -f $tmp/run.txt ]] && sed 's/^/  | /' "$tmp/run.txt" >&2; exit 1; }
# The device tool's $OUT (when this runs on the GPU machine) must not receive these runs.
unset OUT CUDACXX Torch_DIR CMAKE_PREFIX_PATH AUTOREG_TORCH_VENV

# ---- a repository root with the scripts, and the fakes -------------------------------
repo=$tmp/repo
mkdir -p "$repo/scripts" "$repo/models" "$tmp/bin" "$tmp/venv/bin" "$tmp/venv/prefix/Torch"
cp "$src/scripts/device-check.sh" "$src/scripts/device_summary.py" "$src/scripts/torch-version" "$repo/scripts/"
echo "not a real model" >"$repo/models/default.autoreg"
touch "$tmp/venv/prefix/Torch/TorchConfig.cmake"
printf '#!/usr/bin/env bash\nprintf %%s %q\n' "$tmp/venv/prefix" >"$tmp/venv/bin/python"
printf '#!/usr/bin/env bash\nexit 0\n' >"$tmp/bin/ninja"
printf '#!/usr/bin/env bash\nexit 0\n' >"$tmp/bin/c++"
printf '#!/usr/bin/env bash\nexit 0\n' >"$tmp/bin/nvcc"
# nvidia-smi lists one GPU, none when FAKE_NO_GPU=1.
printf '#!/usr/bin/env bash\n[[ ${FAKE_NO_GPU:-} == 1 ]] || echo "GPU 0: Fake GPU (UUID: GPU-0)"\n' >"$tmp/bin/nvidia-smi"
# python3's torch on the GPU path (PYTHONPATH): one with CUDA, one without.
for kind in cuda cpu; do
  mkdir -p "$tmp/torch-$kind/torch"
  printf 'from . import version, utils\n__version__ = "0.0"\n' >"$tmp/torch-$kind/torch/__init__.py"
  printf 'cmake_prefix_path = %s\n' "'$tmp/venv/prefix'" >"$tmp/torch-$kind/torch/utils.py"
  printf 'cuda = %s\n' "$([[ $kind == cuda ]] && echo "'13.0'" || echo None)" >"$tmp/torch-$kind/torch/version.py"
done

# Fake test binary: one passing case, or a failing one when FAKE_TEST_FAIL names it.
cat >"$tmp/fake_gtest" <<'EOF'
#!/usr/bin/env bash
for a in "$@"; do [[ $a == --gtest_output=json:* ]] && report=${a#--gtest_output=json:}; done
name=$(basename "$0")
if [[ ${FAKE_TEST_FAIL:-} == "$name" ]]; then
  echo '{"testsuites": [{"name": "CudaFake", "testsuite": [{"name": "Works", "result": "COMPLETED", "time": "0.1s", "failures": [{"failure": "expected 1, got 2"}]}]}]}' >"$report"
  exit 1
fi
echo '{"testsuites": [{"name": "CudaFake", "testsuite": [{"name": "Works", "result": "COMPLETED", "time": "0.1s"}]}]}' >"$report"
EOF
# Fake autoreg_device_check: measure fails when FAKE_MEASURE_FAIL=1.
cat >"$tmp/fake_device_check" <<'EOF'
#!/usr/bin/env bash
mode=$1; shift
while [[ $# -gt 1 ]]; do [[ $1 == --json ]] && json=$2; shift 2; done
if [[ $mode == measure ]]; then
  [[ ${FAKE_MEASURE_FAIL:-} == 1 ]] && { echo "fake measure: failing" >&2; exit 1; }
  echo '{"device": "cpu", "size": [32, 32, 32], "threads": 2, "rows": [{"name": "warp_fwd/1ch", "seconds": 0.01, "peak_mib": 1}]}' >"$json"
else
  echo '{"steps": 3, "seconds": 1, "steps_per_second": 3, "validation_dice": 0.5, "folding_percent": 0.1, "peak_mib": 10, "model": "model.autoreg"}' >"$json"
fi
EOF
cat >"$tmp/bin/cmake" <<EOF
#!/usr/bin/env bash
[[ \$1 == --version ]] && { echo "cmake version 3.25.1"; exit 0; }
echo "cmake \$*" >>"$tmp/cmake.log"
if [[ \$1 == --build ]]; then
  mkdir -p "\$2/bin"
  for t in autoreg_ops_tests autoreg_search_tests autoreg_parallel_tests; do cp "$tmp/fake_gtest" "\$2/bin/\$t"; done
  cp "$tmp/fake_device_check" "\$2/bin/autoreg_device_check"
fi
exit 0
EOF
chmod +x "$tmp/bin/"* "$tmp/venv/bin/python" "$tmp/fake_gtest" "$tmp/fake_device_check"
export PATH="$tmp/bin:$PATH" AUTOREG_TORCH_VENV="$tmp/venv" AUTOREG_CACHE="$tmp/cache"

# check ARGS...: runs the copy's device-check.sh (60 s at most), output in $tmp/run.txt,
# exit status in $rc, seconds in $took.
check() {
  local t0=$SECONDS
  rm -f "$tmp/cmake.log"
  timeout 60 bash "$repo/scripts/device-check.sh" "$@" >"$tmp/run.txt" 2>&1
  rc=$? took=$((SECONDS - t0))
}
# json_field FILE EXPR: EXPR (Python, the file's JSON as d) printed.
json_field() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"; }

# ---- 1. what it needs is missing: exit 2 at once ---------------------------------------
check --rehearse
((rc == 2)) || fail "no .device/: exit $rc, not 2"
((took < 20)) || fail "no .device/: took $took s"
grep -q "$repo/.device" "$tmp/run.txt" || fail "no .device/: the message does not name it"
grep -q "device-prepare.sh" "$tmp/run.txt" || fail "no .device/: the message does not say how to make it"
[[ ! -e $repo/build-rehearse ]] || fail "no .device/: build-rehearse/ was created"
[[ ! -e $tmp/cmake.log ]] || fail "no .device/: cmake was run: $(cat "$tmp/cmake.log")"

check --rehearse --out "$tmp/out-missing"
((rc == 2)) || fail "no .device/ with --out: exit $rc, not 2"
[[ ! -e $repo/build-rehearse && ! -e $tmp/cmake.log ]] || fail "no .device/ with --out: something was built"
grep -q "did not run" "$tmp/out-missing/summary.md" || fail "no .device/ with --out: summary.md does not say it did not run"
[[ $(json_field "$tmp/out-missing/summary.json" 'd["ran"], d["ok"], len(d["missing"])') == "False False 1" ]] ||
  fail "no .device/ with --out: summary.json is not ran: false, ok: false with one missing thing"
[[ $(ls "$tmp/out-missing" | tr '\n' ' ') == "summary.json summary.md " ]] ||
  fail "no .device/ with --out: OUT holds $(ls "$tmp/out-missing")"

# A .device/ with third_party/ but no training set (also given as --carry).
carry=$tmp/carry
mkdir -p "$carry/third_party/include/nlohmann" "$carry/third_party/include/gloo" "$carry/third_party/googletest"
touch "$carry/third_party/include/nlohmann/json.hpp" "$carry/third_party/include/gloo/types.h" \
  "$carry/third_party/googletest/CMakeLists.txt"
check --rehearse --carry "$carry"
((rc == 2)) || fail "no training set: exit $rc, not 2"
grep -q "oasis_trt.trainset" "$tmp/run.txt" || fail "no training set: the message does not name it"
[[ ! -e $repo/build-rehearse && ! -e $tmp/cmake.log ]] || fail "no training set: something was built"
echo "packed" >"$carry/oasis_trt.trainset"

# The GPU path with a $CUDACXX that is not there.
CUDACXX=/nonexistent/nvcc check --carry "$carry"
((rc == 2)) || fail "bad CUDACXX: exit $rc, not 2"
grep -q "CUDACXX" "$tmp/run.txt" || fail "bad CUDACXX: the message does not name it"
[[ ! -e $repo/build-device && ! -e $tmp/cmake.log ]] || fail "bad CUDACXX: something was built"

PYTHONPATH=$tmp/torch-cpu check --carry "$carry"
((rc == 2)) || fail "torch without CUDA: exit $rc, not 2"
grep -q "built without CUDA" "$tmp/run.txt" || fail "torch without CUDA: the message does not say it"
[[ ! -e $repo/build-device && ! -e $tmp/cmake.log ]] || fail "torch without CUDA: something was built"

FAKE_NO_GPU=1 PYTHONPATH=$tmp/torch-cuda check --carry "$carry"
((rc == 2)) || fail "no GPU: exit $rc, not 2"
grep -q "a GPU (nvidia-smi -L lists none)" "$tmp/run.txt" || fail "no GPU: the message does not say it"
[[ ! -e $repo/build-device && ! -e $tmp/cmake.log ]] || fail "no GPU: something was built"

check --rehearse --no-such-option
((rc == 2)) || fail "bad option: exit $rc, not 2"
check --rehearse --train-minutes
((rc == 2)) || fail "option without its value: exit $rc, not 2"
[[ ! -e $repo/build-rehearse ]] || fail "bad option: build-rehearse/ was created"

# ---- 2. every step passes: exit 0 ------------------------------------------------------
mkdir -p "$repo/.device"
cp -r "$carry/." "$repo/.device/"
check --rehearse
((rc == 0)) || fail "every step passing: exit $rc, not 0"
out=$repo/build-rehearse/out
grep -q "^Result: passed" "$out/summary.md" || fail "every step passing: summary.md does not say passed"
[[ $(json_field "$out/summary.json" 'd["ok"]') == True ]] || fail "every step passing: summary.json not ok"
[[ $(json_field "$out/summary.json" '" ".join(s["step"] for s in d["steps"])') == "configure build cuda-tests measure train" ]] ||
  fail "every step passing: the steps recorded are not the five"
grep -q "exit 0" "$out/device-check.log" || fail "every step passing: the log does not end with the verdict"

PYTHONPATH=$tmp/torch-cuda check --out "$tmp/out-gpu"
((rc == 0)) || fail "every step passing on the GPU path: exit $rc, not 0"
grep -q -- "-B $repo/build-device .*-DAUTOREG_TORCH_PYTHON=" "$tmp/cmake.log" ||
  fail "GPU path: not configured in build-device/ with python3's LibTorch"
grep -q "^Result: passed" "$tmp/out-gpu/summary.md" || fail "GPU path: summary.md does not say passed"

# ---- 3. a step fails: the rest run, the summary is written, exit 1 ---------------------
echo '{"rows": [{"name": "stale", "seconds": 1, "peak_mib": 1}]}' >"$out/measure.json"
FAKE_MEASURE_FAIL=1 check --rehearse
((rc == 1)) || fail "measure failing: exit $rc, not 1"
grep -q "^Result: FAILED.*step measure" "$out/summary.md" || fail "measure failing: summary.md's Result line does not name it"
grep -q "| measure | FAILED |" "$out/summary.md" || fail "measure failing: no FAILED row"
grep -q "| train | ok |" "$out/summary.md" || fail "measure failing: train did not run after it"
[[ -f $out/train.json ]] || fail "measure failing: no train.json"
[[ ! -e $out/measure.json ]] || fail "measure failing: an earlier run's measure.json was left"
[[ $(json_field "$out/summary.json" 'd["ok"]') == False ]] || fail "measure failing: summary.json says ok"
grep -q "FAILED.*exit 1" "$out/device-check.log" || fail "measure failing: the log does not end with the verdict"

# ---- 4. a CUDA test fails: exit 1 ------------------------------------------------------
FAKE_TEST_FAIL=autoreg_search_tests check --rehearse
((rc == 1)) || fail "a CUDA test failing: exit $rc, not 1"
grep -q "^Result: FAILED.*test autoreg_search_tests CudaFake.Works" "$out/summary.md" ||
  fail "a CUDA test failing: summary.md's Result line does not name it"

# ---- 5. device_summary.py alone --------------------------------------------------------
b=$tmp/summary/build o=$tmp/summary/out
summary() { python3 "$src/scripts/device_summary.py" --build "$b" --out "$o" >"$tmp/run.txt" 2>&1; rc=$?; }
mkdir -p "$b/gtest" "$o"
for t in autoreg_ops_tests autoreg_search_tests autoreg_parallel_tests; do
  echo '{"testsuites": [{"name": "CudaFake", "testsuite": [{"name": "Works", "time": "0.1s"}]}]}' >"$b/gtest/$t.json"
done
echo '{"size": [32, 32, 32], "rows": [{"name": "warp_fwd/1ch", "seconds": 0.01, "peak_mib": 1}]}' >"$o/measure.json"
printf '{"step": "%s", "ok": true, "seconds": 1, "exit": 0}\n' configure build cuda-tests measure >"$b/steps.jsonl"
summary
((rc == 0)) || fail "summary, all passed: exit $rc, not 0"
echo '{"step": "train", "ok": false, "seconds": 1, "exit": 3}' >>"$b/steps.jsonl"
summary
((rc == 1)) || fail "summary, a failed step: exit $rc, not 1"
grep -q "| train | FAILED |" "$o/summary.md" || fail "summary, a failed step: no FAILED row"
sed -i '$d' "$b/steps.jsonl"
echo '{"size": [32, 32, 32], "rows": [{"name": "warp_fwd/1ch", "error": "out of memory"}]}' >"$o/measure.json"
summary
((rc == 1)) || fail "summary, a failed measurement: exit $rc, not 1"
grep -q "measurement warp_fwd/1ch: out of memory" "$o/summary.md" || fail "summary, a failed measurement: not named"
echo '{"size": [32, 32, 32], "rows": []}' >"$o/measure.json"
rm "$b/gtest/autoreg_parallel_tests.json"
summary
((rc == 1)) || fail "summary, a test binary without a report: exit $rc, not 1"
rm "$b/steps.jsonl"
summary
((rc == 1)) || fail "summary, no step recorded: exit $rc, not 1"

echo "test_device_check: passed"
