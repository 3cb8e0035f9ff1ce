#!/usr/bin/env bash
# Fuzzes autoreg's readers of untrusted files with libFuzzer (Debian's clang, installed
# here if missing), the tree built with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-fuzz/:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Each target (archive, manifest, genotype, transform, volume, rtstruct; default all)
# runs for SECONDS (default 60) or 10^6 executions, whichever comes first, starting from
# the seeds autoreg_fuzz_seeds writes and the corpus kept in
# $AUTOREG_CACHE/fuzz-corpus/<target> (grown run after run, outside the clone). A crash,
# leak, timeout (10 s) or sanitizer report stops that target; the input is saved as
# fuzz/regressions/<target>/crash-<sha1>, which ctest then replays in every build
# (FuzzReplay.<target>) once it is committed.
# Prints executions, coverage (edges) and findings per target; exits 1 if any.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(archive manifest genotype transform volume rtstruct)
"$root/scripts/setup.sh"
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "fuzz: installing Debian's clang (libFuzzer)" >&2
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang >/dev/null
fi
export AUTOREG_BUILD_DIR="${AUTOREG_FUZZ_BUILD_DIR:-$root/build-fuzz}"
if [[ ! -f "$AUTOREG_BUILD_DIR/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$AUTOREG_BUILD_DIR" -G Ninja --log-level=WARNING -DAUTOREG_FUZZ=ON \
    -DAUTOREG_SANITIZE=address,undefined,fuzzer-no-link -DAUTOREG_WITH_CUDA=OFF -DAUTOREG_BUILD_TESTS=OFF \
    -DAUTOREG_BUILD_BENCHMARKS=OFF -DAUTOREG_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# Only what the targets link (not the command line, the ITK filter or the search). The
# seeds come from the regular build's autoreg_fuzz_seeds when there is one (the same
# seeds, without building io/ and registration/ again under the sanitizers).
seeds_tool="$root/build/bin/autoreg_fuzz_seeds"
build_targets=($(printf 'fuzz_%s ' "${targets[@]}"))
[[ -x "$seeds_tool" ]] || { seeds_tool="$AUTOREG_BUILD_DIR/bin/autoreg_fuzz_seeds"; build_targets+=(autoreg_fuzz_seeds); }
CCACHE_DIR="${CCACHE_DIR:-${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}/ccache}" \
  cmake --build "$AUTOREG_BUILD_DIR" -j "${AUTOREG_JOBS:-2}" --target "${build_targets[@]}"
cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
seeds="$AUTOREG_BUILD_DIR/fuzz-seeds"
"$seeds_tool" "$seeds" "$root" >/dev/null
export ASAN_OPTIONS="detect_leaks=1:detect_container_overflow=0:detect_odr_violation=0:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
failed=0
for t in "${targets[@]}"; do
  corpus="$cache/fuzz-corpus/$t"
  regressions="$root/fuzz/regressions/$t"
  mkdir -p "$corpus" "$regressions"
  log="$AUTOREG_BUILD_DIR/fuzz-$t.log"
  status=0
  "$AUTOREG_BUILD_DIR/bin/fuzz_$t" "$corpus" "$seeds/$t" -max_total_time="$seconds" -runs=1000000 \
    -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$regressions/" >"$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  if ((status != 0)); then
    failed=1
    echo "fuzz $t: FINDING after $execs executions (edges $edges); see $log and $regressions/" >&2
    grep -m3 -E "ERROR|SUMMARY|fuzz: undocumented|runtime error" "$log" >&2 || true
  else
    echo "fuzz $t: $execs executions, $edges edges, no finding" >&2
  fi
done
exit $failed
