#!/usr/bin/env bash
# The self-contained wheel against the source build, in the same run (issue 55):
#   bench/wheel_e2e.sh [WHEEL] [RUNS]   (default: the newest dist/autoreg-*.whl, 3 runs)
# A fresh venv (torch from the setup's environment through a .pth file), the wheel
# installed into it (timed), then `autoreg --help` and the sample pair's registration
# (data/pairs, oasisA onto oasisB, 2 threads) by the wheel's `autoreg` and by
# build/bin/autoreg, alternating, RUNS times each; prints the median of each and the Dice.
set -euo pipefail
source "$(dirname "$0")/../scripts/paths.sh"
pairs="$data/pairs"
wheel="${1:-$(ls -t "$root"/dist/autoreg-*.whl 2>/dev/null | head -1 || true)}"
[[ -f "$wheel" ]] || { echo "wheel_e2e: no wheel (scripts/build-wheel.sh builds one)" >&2; exit 2; }
runs="${2:-3}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 -m venv "$dir/venv"
torch_site > "$("$dir/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/torch-beside.pth"
start=$EPOCHREALTIME
"$dir/venv/bin/pip" install -q --no-deps --no-index --ignore-installed --disable-pip-version-check "$wheel"
install=$(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $start }")
timed() {  # seconds of one run of the command; a run that fails stops the bench
  local s=$EPOCHREALTIME
  "$@" > "$dir/last.log" 2>&1 || { echo "wheel_e2e: $* failed:" >&2; cat "$dir/last.log" >&2; return 1; }
  awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $s }"
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
register=(register --fixed "$pairs/oasisB_t1.nii.gz" --moving "$pairs/oasisA_t1.nii.gz" --moving-labels "$pairs/oasisA_tissue.nii.gz"
  --force --threads 2)
declare -A help pair
for i in $(seq "$runs"); do
  for who in wheel source; do
    cmd="$dir/venv/bin/autoreg"; [[ $who == source ]] && cmd="$root/build/bin/autoreg"
    help[$who]+=" $(timed "$cmd" --help)"
    pair[$who]+=" $(timed "$cmd" "${register[@]}" --out-field "$dir/$who-field.nii.gz" --out-warped "$dir/$who-warped.nii.gz" \
      --out-labels "$dir/$who-labels.nii.gz")"
  done
done
wheel_dice=$(mean_dice "$pairs/oasisB_tissue.nii.gz" "$dir/wheel-labels.nii.gz")
source_dice=$(mean_dice "$pairs/oasisB_tissue.nii.gz" "$dir/source-labels.nii.gz")
echo "wheel: $(basename "$wheel") ($(awk "BEGIN { printf \"%.1f\", $(stat -c %s "$wheel") / 1048576 }") MiB), pip install into a fresh venv with torch present: $install s"
printf '%-28s %12s %12s\n' "median of $runs runs" "wheel" "source build"
printf '%-28s %11ss %11ss\n' "autoreg --help" "$(median ${help[wheel]})" "$(median ${help[source]})"
printf '%-28s %11ss %11ss\n' "sample pair (register)" "$(median ${pair[wheel]})" "$(median ${pair[source]})"
printf '%-28s %12s %12s\n' "tissue Dice" "$wheel_dice" "$source_dice"
cmp -s "$dir/wheel-field.nii.gz" "$dir/source-field.nii.gz" && echo "fields: byte-identical" ||
  echo "fields: differ (the wheel's CPU kernels are built for x86-64-v3, the source build's for this machine)"
