#!/usr/bin/env bash
# Crash consistency at scale: kills `autoreg register`, `train` and `search` with SIGKILL
# KILLS times in all (default 300, a third per command) at moments spread over their runs,
# and checks after each kill that outputs are whole or absent, inputs unchanged, and that
# training resumed after kills ends bit for bit as an uninterrupted run
# (tests/apps/test_kill.cpp; ctest runs the same test with 18 kills). Needs a build.
set -euo pipefail
cd "$(dirname "$0")/.."
AUTOREG_KILLS="${1:-300}" exec build/bin/autoreg_cli_tests --gtest_filter='Kill.*'
