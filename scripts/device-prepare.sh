#!/usr/bin/env bash
# Prepares, here, the folder that scripts/device-check.sh carries to a GPU machine (which
# has CUDA, LibTorch, CMake and Ninja, but no ITK and no package registry):
#   .device/oasis_trt.trainset     the default model's training set (OASIS-TRT 01-05
#                                  train, 06-07 validation), preprocessed onto its model
#                                  grid (80x80x96 at 2 mm) by `autoreg pack` (~26 MB)
#   .device/third_party/           Debian's nlohmann-json and gloo headers and
#                                  GoogleTest's sources (cmake/AutoregThirdParty.cmake)
# The folder is ignored by git; name it in the device tool's `carry`.
#   scripts/device-prepare.sh [--out .device] [--autoreg build/bin/autoreg]
# Needs the normal build (scripts/build.sh) and ../shared/data (models/oasis_trt.csv's paths).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/.device"
autoreg="$root/build/bin/autoreg"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --autoreg) autoreg=$2; shift 2 ;;
    *) echo "device-prepare: unknown option $1" >&2; exit 1 ;;
  esac
done
cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
[[ -x "$autoreg" ]] || { echo "device-prepare: $autoreg not built (scripts/build.sh)" >&2; exit 1; }
mkdir -p "$out/third_party/include"

# The headers and sources Debian's packages put here (scripts/setup.sh installs them).
for d in /usr/include/nlohmann /usr/include/gloo; do
  [[ -d $d ]] || { echo "device-prepare: $d missing (scripts/setup.sh)" >&2; exit 1; }
  rm -rf "$out/third_party/include/$(basename "$d")"
  cp -r "$d" "$out/third_party/include/"
done
[[ -f /usr/src/googletest/CMakeLists.txt ]] || { echo "device-prepare: /usr/src/googletest missing (libgtest-dev)" >&2; exit 1; }
rm -rf "$out/third_party/googletest"
cp -r /usr/src/googletest "$out/third_party/googletest"

# The training set (its preprocessing cached: a second run takes seconds).
if [[ ! -f "$out/oasis_trt.trainset" || "$root/models/oasis_trt.csv" -nt "$out/oasis_trt.trainset" ]]; then
  "$autoreg" pack --manifest "$root/models/oasis_trt.csv" --out "$out/oasis_trt.trainset" \
    --grid 80x80x96 --spacing 2 --cache "$cache/device-pack-cache"
fi
du -sh "$out" >&2
