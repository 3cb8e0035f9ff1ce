#!/usr/bin/env bash
# Installs everything autoreg needs to build and test, and nothing twice.
#
#   Debian packages: ITK 5.2, TCLAP, nlohmann-json, GoogleTest, Google Benchmark, gloo's headers,
#                    ccache, ninja, CMake, a C++ compiler, Python's venv, elastix
#                    (the comparison in bench/register_e2e.py), chromium (a test opens
#                    the batch's QC page in it, headless).
#   Python packages: python/requirements.txt (pinned) into the same environment: what
#                    the Python package (python/) builds and tests with.
#   LibTorch:        the PyPI `torch` wheel (pinned below, built with CUDA 13.0 to match
#                    the CUDA 13 toolkit) in a virtual environment under
#                    $AUTOREG_CACHE (default ~/.cache/autoreg), shared by every clone.
#
# Idempotent and silent when everything is already there. Safe to run concurrently
# (a lock serialises installers). Environment:
#   AUTOREG_CACHE        cache folder (default ${XDG_CACHE_HOME:-~/.cache}/autoreg)
#   AUTOREG_TORCH_VENV   use this existing virtual environment instead of the cache's
#   AUTOREG_SKIP_APT=1   do not touch Debian packages (for machines without apt/root)
set -euo pipefail

# The pinned torch version lives in scripts/torch-version (CMake reads it too).
# Its default PyPI build (2.11.0) is built with CUDA 13.0, like the local toolkit.
TORCH_VERSION=$(cat "$(dirname "$0")/torch-version")
APT_PACKAGES=(build-essential cmake ninja-build ccache git python3 python3-venv
  libinsighttoolkit5-dev libtclap-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libbenchmark-dev
  libdeflate-dev   # the parallel .nii.gz writer
  zlib1g-dev       # reading .gz inputs to their end (files cut short)
  libtcmalloc-minimal4  # the autoreg executable's malloc (less memory, faster; apps/CMakeLists.txt)
  libhdf5-dev      # checking .h5 transform files before ITK reads them
  libdcmtk-dev     # DCMTK's dcmdata: RT Structure Sets in and out (rt/)
  dicom3tools      # dciodvfy, the independent validator the RT Structure Set tests check our output with
  libgloo-dev      # gloo's headers, which c10d's ProcessGroupGloo.hpp includes (parallel/)
  libgdcm-tools    # GDCM's CMake package (pulled in by ITK) names its tools
  elastix          # the reference bench/register_e2e.py compares against
  chromium)        # the headless browser a test opens the batch's QC page (index.html) in

say() { echo "setup: $*" >&2; }
cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
mkdir -p "$cache"

# --- Debian packages --------------------------------------------------------------
if [[ "${AUTOREG_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    sudo=""; [[ $(id -u) -eq 0 ]] || sudo="sudo"
    say "installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# --- LibTorch from the PyPI wheel ---------------------------------------------------
if [[ -n "${AUTOREG_TORCH_VENV:-}" ]]; then
  # A venv the user manages: use it as it is, never reinstall or remove it.
  "$AUTOREG_TORCH_VENV/bin/python" -c "import torch.utils" 2>/dev/null || {
    say "AUTOREG_TORCH_VENV=$AUTOREG_TORCH_VENV has no importable torch"; exit 1; }
  venv=""
else
  venv="$cache/torch-$TORCH_VERSION"
fi
stamp="$venv/.autoreg-ready"
if [[ -n "$venv" && ! -f "$stamp" ]]; then
  exec 9>"$cache/.setup.lock"
  flock 9                       # another setup may be installing right now
  if [[ ! -f "$stamp" ]]; then
    say "installing torch==$TORCH_VERSION (LibTorch, CUDA 13.0 build) into $venv"
    say "first time only: about 5 GB download, 7 GB on disk, 2-10 minutes"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
      "torch==$TORCH_VERSION"
    "$venv/bin/python" - <<'PY'
import os, torch.utils
d = os.path.join(torch.utils.cmake_prefix_path, "Torch")
assert os.path.isfile(os.path.join(d, "TorchConfig.cmake")), d
PY
    touch "$stamp"
  fi
  flock -u 9
fi

# --- The Python package's build and test requirements (python/requirements.txt) ------
# Installed beside torch, pinned; a stamp named after the file's checksum makes a
# changed list install again.
python="${AUTOREG_TORCH_VENV:-$venv}/bin/python"
requirements="$(dirname "$0")/../python/requirements.txt"
python_stamp="${AUTOREG_TORCH_VENV:-$venv}/.autoreg-python-$(sha256sum "$requirements" | cut -c1-16)"
if [[ ! -f "$python_stamp" ]]; then
  exec 9>"$cache/.setup.lock"
  flock 9
  if [[ ! -f "$python_stamp" ]]; then
    say "installing the Python package's requirements (python/requirements.txt, about 300 MB)"
    "$python" -m pip install -q --disable-pip-version-check -r "$requirements"
    touch "$python_stamp"
  fi
  flock -u 9
fi

# --- ccache keeps its cache beside the venv, outside every clone --------------------
if command -v ccache >/dev/null; then
  CCACHE_DIR="${CCACHE_DIR:-$cache/ccache}" ccache --max-size=5G >/dev/null
fi
