#!/usr/bin/env bash
# The self-contained wheel on a system without the build's libraries (docs/install.md#the-wheel):
#   scripts/check-wheel.sh [WHEEL]   (as root; default: the newest dist/autoreg-*.whl)
# A check to run before a release (a minute or two); its fast part, the wheel's contents and
# dependencies (scripts/wheel_tools.py check), is a ctest test.
#
# In a private mount namespace (unshare -m) every system library the source build links
# to (ldd of build/bin/autoreg and build/lib/*.so: ITK, GDCM, HDF5, tcmalloc, ...) is
# hidden by a bind mount of /dev/null, except those on the wheel's manylinux policy list
# and those Python loads to import torch. There, as the user nobody in a folder of its
# own, with Debian's python3: a fresh venv that sees the setup's torch (a .pth file, the
# torch folder bind-mounted where nobody can read it), the wheel installed into it
# (pip, offline), and
#   - `autoreg --help`; the source build's command fails there (the proof that the
#     libraries are hidden);
#   - `autoreg register` of the sample pair (data/pairs, oasisA onto oasisB, tissue
#     labels): its Dice is the reference build's and its field byte-identical (the
#     reference: the build the wheel was made from, WHEEL_REFERENCE, default
#     build-wheel/bin/autoreg, else build/bin/autoreg; run here, outside the namespace);
#   - `autoreg apply` of that field to the moving image (the register's warped image?);
#   - `autoreg segment` of OASIS-TRT 02 with 01 as the atlas, and its Dice;
#   - `autoreg.register` on numpy arrays.
# Each step prints PASS or FAIL with its figures; the exit code is the number of failures.
set -euo pipefail
source "$(dirname "$0")/paths.sh"
wheel="${1:-$(ls -t "$root"/dist/autoreg-*.whl 2>/dev/null | head -1 || true)}"
say() { echo "check-wheel: $*" >&2; }
[[ -f "$wheel" ]] || { say "no wheel (scripts/build-wheel.sh builds one)"; exit 2; }
[[ $(id -u) -eq 0 ]] || { say "needs root (unshare -m and bind mounts)"; exit 2; }
[[ -f "$data/pairs/oasisA_t1.nii.gz" ]] || { say "no sample pair in $data/pairs"; exit 2; }
reference="${WHEEL_REFERENCE:-$root/build-wheel/bin/autoreg}"
[[ -x "$reference" ]] || reference="$root/build/bin/autoreg"
site=$(torch_site)

dir=$(mktemp -d /tmp/autoreg-wheel-check.XXXXXX)
chmod 755 "$dir"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/ref" "$dir/user" "$dir/torch-site"
cp "$wheel" "$dir/user/"
cp "$data"/pairs/oasis{A,B}_{t1,tissue}.nii.gz "$data"/oasis_trt/oasis0{1,2}_{t1,labels}.nii.gz "$dir/user/"
printf 'image,labels\noasis01_t1.nii.gz,oasis01_labels.nii.gz\n' > "$dir/user/atlases.csv"
chown -R nobody:nogroup "$dir/user"

# The reference: the same registration with the build the wheel was made from.
(cd "$dir/user" && "$reference" register --fixed oasisB_t1.nii.gz --moving oasisA_t1.nii.gz \
  --moving-labels oasisA_tissue.nii.gz --force --threads 2 --out-field "$dir/ref/field.nii.gz" \
  --out-warped "$dir/ref/warped.nii.gz" --out-labels "$dir/ref/labels.nii.gz" > "$dir/ref/log" 2>&1) ||
  { say "the reference build's registration failed:"; cat "$dir/ref/log" >&2; exit 2; }
ref_dice=$(AUTOREG_BIN="$reference" mean_dice "$dir/user/oasisB_tissue.nii.gz" "$dir/ref/labels.nii.gz")
chmod -R a+rX "$dir/ref"

# What to hide: the source build's system libraries, less the policy's and Python's + torch's.
"$venv/bin/python" "$root/scripts/wheel_tools.py" hidden "$root/build" "$wheel" "$site" > "$dir/hidden.txt"
say "$(wc -l < "$dir/hidden.txt") system libraries of the source build hidden (the wheel's manylinux list and Python's + torch's kept); reference: $reference"

cat > "$dir/user/steps.sh" <<'STEPS'
set -u
failures=0
pass() { echo "PASS  $*"; }
fail() { echo "FAIL  $*"; failures=$((failures + 1)); }
cd "$HOME"
source "$SCRIPTS/paths.sh"
export AUTOREG_BIN=autoreg AUTOREG_PYTHON_FOR_JSON=/usr/bin/python3  # mean_dice with the wheel's command
# Runs a step, its output in last.out and last.err; prints its exit code and seconds.
seconds() { local s=$EPOCHREALTIME; "$@" > "$HOME/last.out" 2> "$HOME/last.err"; local rc=$?; echo "$rc $(awk "BEGIN { printf \"%.2f\", $EPOCHREALTIME - $s }")"; }
read -r rc t < <(seconds /usr/bin/python3 -m venv "$HOME/venv")
[[ $rc == 0 ]] && pass "fresh venv (Debian's python3)" || { fail "venv: $(cat last.err)"; echo "failures: $failures"; exit 1; }
echo "$TORCH_SITE" > "$("$HOME/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/torch-beside.pth"
# --ignore-installed: the setup's environment (seen for torch) holds the source build's
# package, hidden below; this one goes into the fresh venv, ahead of it on sys.path.
read -r rc t < <(seconds "$HOME/venv/bin/pip" install --no-deps --no-index --ignore-installed --disable-pip-version-check "$HOME/$WHEEL")
[[ $rc == 0 ]] && pass "pip install $WHEEL (offline, torch present): $t s" || fail "pip install: $(tail -3 last.err)"
export PATH="$HOME/venv/bin:/usr/bin:/bin"
read -r rc t < <(seconds autoreg --help)
[[ $rc == 0 ]] && grep -q register last.out && pass "autoreg --help: $t s" || fail "autoreg --help: $(tail -3 last.err)"
read -r rc t < <(seconds "$SOURCE_BUILD" --help)
[[ $rc != 0 ]] && pass "the source build's command cannot start here: $(head -c 120 last.err)" || fail "the source build's command ran: the libraries are not hidden"
read -r rc t < <(seconds autoreg register --fixed oasisB_t1.nii.gz --moving oasisA_t1.nii.gz --moving-labels oasisA_tissue.nii.gz \
  --force --threads 2 --out-field field.nii.gz --out-warped warped.nii.gz --out-labels labels.nii.gz)
if [[ $rc == 0 ]]; then
  dice=$(mean_dice oasisB_tissue.nii.gz labels.nii.gz)
  same=$(cmp -s field.nii.gz "$REF/field.nii.gz" && echo identical || echo different)
  [[ "$dice" == "$REF_DICE" && $same == identical ]] && pass "autoreg register (sample pair): $t s, Dice $dice (reference $REF_DICE), field byte-identical" \
    || fail "autoreg register: Dice $dice (reference $REF_DICE), field $same"
else
  fail "autoreg register: $(tail -3 last.err)"
fi
read -r rc t < <(seconds autoreg apply --moving oasisA_t1.nii.gz --reference oasisB_t1.nii.gz --field field.nii.gz --out applied.nii.gz)
if [[ $rc == 0 && -s applied.nii.gz ]]; then
  same=$(cmp -s applied.nii.gz warped.nii.gz && echo "byte for byte the register's warped image" || echo "written")
  pass "autoreg apply (the moving image through the field): $t s, $same"
else
  fail "autoreg apply: rc $rc $(tail -3 last.err)"
fi
read -r rc t < <(seconds autoreg segment --target oasis02_t1.nii.gz --atlases atlases.csv --out segmented.nii.gz --threads 2 --json)
if [[ $rc == 0 ]]; then
  d=$(mean_dice oasis02_labels.nii.gz segmented.nii.gz)
  pass "autoreg segment (OASIS-TRT 02 from atlas 01, ~100 labels): $t s, Dice $d"
else
  fail "autoreg segment: $(tail -3 last.err)"
fi
cat > arrays.py <<'PY'
import os, numpy as np, nibabel, autoreg
assert autoreg.__file__.startswith(os.environ["HOME"]), autoreg.__file__
f = np.asarray(nibabel.load("oasisB_t1.nii.gz").dataobj, dtype=np.float32).transpose(2, 1, 0)
m = np.asarray(nibabel.load("oasisA_t1.nii.gz").dataobj, dtype=np.float32).transpose(2, 1, 0)
r = autoreg.register(f, m, threads=2)
c = r.summary["similarity_check"]
assert r.field.shape == f.shape + (3,) and c["loss_after"] < c["loss_before"], (r.field.shape, c)
print(f"similarity {c['loss_before']:.4f} -> {c['loss_after']:.4f}, from {autoreg.__file__}")
PY
read -r rc t < <(seconds python arrays.py)
[[ $rc == 0 ]] && pass "autoreg.register on numpy arrays: $t s, $(tail -1 last.out)" || fail "autoreg.register: $(tail -3 last.err)"
echo "failures: $failures"
exit $failures
STEPS
chown nobody:nogroup "$dir/user/steps.sh"

set +e
unshare -m --propagation private bash -s <<EOF
set -e
trap 'echo "check-wheel: setting up the namespace failed" >&2; exit 125' ERR
mount --bind "$site" "$dir/torch-site"
# The source build's package, installed there by scripts/build.sh, hidden too.
for package in autoreg autoreg_cli; do
  if [[ -d "$dir/torch-site/\$package" ]]; then mount -t tmpfs -o ro,size=1k none "$dir/torch-site/\$package"; fi
done
while read -r lib; do mount --bind /dev/null "\$lib"; done < "$dir/hidden.txt"
trap - ERR
set +e
runuser -u nobody -- env -i HOME="$dir/user" TORCH_SITE="$dir/torch-site" WHEEL="$(basename "$wheel")" \
  REF="$dir/ref" REF_DICE="$ref_dice" SOURCE_BUILD="$root/build/bin/autoreg" SCRIPTS="$root/scripts" PATH=/usr/bin:/bin \
  bash "$dir/user/steps.sh"
EOF
rc=$?
if [[ $rc == 125 ]]; then exit 2; fi
say "$(basename "$wheel"): $([[ $rc == 0 ]] && echo "every step passed" || echo "$rc step(s) failed")"
exit $rc
