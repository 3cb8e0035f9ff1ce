#!/usr/bin/env bash
# Configures (first time, or when given CMake arguments) and builds autoreg into
# build/ with Ninja, ccache and at most 2 jobs: every executable lands in build/bin/.
#   scripts/build.sh [-DAUTOREG_WITH_CUDA=OFF ...]
# Environment: AUTOREG_BUILD_DIR (default build/), AUTOREG_JOBS (default 2),
#              AUTOREG_CACHE (where setup.sh put LibTorch and the ccache folder).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="${AUTOREG_BUILD_DIR:-$root/build}"
cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
export CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}"
# Paths relative to the clone, so that every clone shares the cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
if [[ ! -f "$build/CMakeCache.txt" || $# -gt 0 ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --log-level=WARNING "$@"
fi
cmake --build "$build" -j "${AUTOREG_JOBS:-2}"
