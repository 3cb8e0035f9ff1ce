#!/usr/bin/env bash
# The whole tree built with AddressSanitizer and UndefinedBehaviorSanitizer
# (AUTOREG_SANITIZE=address,undefined, in build-sanitize/), then the full test suite under
# them: any report fails its test. Not part of CI (the build and the slower tests take
# longer than CI's budget allows beside the normal run); run it before resolving a change
# to io/, apps/ or the readers. Arguments go to ctest (e.g. -R BadInput).
#
# CUDA is off in this build (nothing runs it here). LibTorch and ITK are not instrumented: their leaks at exit and container annotations
# are outside our code; scripts/sanitize.supp lists the suppressions and why.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
export AUTOREG_BUILD_DIR="${AUTOREG_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
if [[ ! -f "$AUTOREG_BUILD_DIR/CMakeCache.txt" ]]; then
  "$root/scripts/build.sh" -DAUTOREG_SANITIZE=address,undefined -DAUTOREG_BUILD_BENCHMARKS=OFF \
    -DAUTOREG_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
else
  "$root/scripts/build.sh"
fi
supp="$root/scripts/sanitize.supp"
export ASAN_OPTIONS="detect_leaks=1:detect_container_overflow=0:detect_odr_violation=0:abort_on_error=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
start=$(date +%s)
ctest --test-dir "$AUTOREG_BUILD_DIR" --output-on-failure -j2 --timeout 1800 "$@"
echo "sanitize: tests passed under ASan+UBSan in $(( $(date +%s) - start )) s" >&2
