# The setup's folders and the Python package's build, for the scripts that need them
# (scripts/build.sh, build-wheel.sh, check-wheel.sh, register-sample.sh,
# bench/wheel_e2e.sh); sourced, not run:
#   root    the clone
#   cache   AUTOREG_CACHE, default ~/.cache/autoreg: LibTorch's virtual environment, ccache
#   venv    the setup's virtual environment with torch (AUTOREG_TORCH_VENV overrides it)
#   data    the shared data: AUTOREG_TEST_DATA, else ../shared/data beside the clone
#   torch_site          the site-packages folder that holds the venv's torch
#   python_wheel B OUT  the Python package built against build B (installed into
#                       B/prefix first) as a wheel in OUT
#   mean_dice FIXED WARPED   the mean Dice of two label maps (autoreg evaluate --json);
#                       AUTOREG_BIN names the command (default: the build's)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${AUTOREG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/autoreg}"
venv="${AUTOREG_TORCH_VENV:-$cache/torch-$(cat "$root/scripts/torch-version")}"
data="${AUTOREG_TEST_DATA:-$root/../shared/data}"

torch_site() {
  "$venv/bin/python" -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"
}

python_wheel() {
  cmake --install "$1" --prefix "$1/prefix" > /dev/null
  "$venv/bin/python" -m pip wheel -q --no-build-isolation --no-deps --disable-pip-version-check "$root/python" \
    -w "$2" -C build-dir="$1/python" -C cmake.define.AutoReg_DIR="$1/prefix/lib/cmake/AutoReg" \
    -C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
}

mean_dice() {
  "${AUTOREG_BIN:-$root/build/bin/autoreg}" evaluate --fixed-labels "$1" --warped-labels "$2" --json |
    "${AUTOREG_PYTHON_FOR_JSON:-python3}" -c "import json, sys; print(round(json.load(sys.stdin)['mean_dice'], 4))"
}
