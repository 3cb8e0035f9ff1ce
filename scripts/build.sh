#!/usr/bin/env bash
# Configures (first time, or when given CMake arguments) and builds autoreg into
# build/ with Ninja, ccache and at most 2 jobs: every executable lands in build/bin/.
#   scripts/build.sh [-DAUTOREG_WITH_CUDA=OFF ...]
# Environment: AUTOREG_BUILD_DIR (default build/), AUTOREG_JOBS (default 2),
#              AUTOREG_CACHE (where setup.sh put LibTorch and the ccache folder).
set -euo pipefail
source "$(dirname "$0")/paths.sh"
build="${AUTOREG_BUILD_DIR:-$root/build}"
export CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}"
# Paths relative to the clone, so that every clone shares the cache entries.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
if [[ ! -f "$build/CMakeCache.txt" || $# -gt 0 ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release --log-level=WARNING "$@"
fi
cmake --build "$build" -j "${AUTOREG_JOBS:-2}"

# The Python package (python/): built by scikit-build-core against this build's
# libraries (installed into $build/prefix, the CMake package it finds) and installed
# into the setup's virtual environment as a wheel (kept in $build/python-dist, which a
# test installs into a fresh environment). AUTOREG_PYTHON=0 skips it.
if [[ "${AUTOREG_PYTHON:-1}" != 0 ]]; then
  rm -rf "$build/python-dist"
  python_wheel "$build" "$build/python-dist"
  "$venv/bin/python" -m pip install -q --no-deps --force-reinstall --disable-pip-version-check "$build"/python-dist/autoreg-*.whl
fi
