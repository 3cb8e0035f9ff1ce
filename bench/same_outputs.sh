#!/usr/bin/env bash
# Runs the main jobs on the shared OASIS-TRT pairs with fixed seeds and threads and
# writes the SHA-256 of every output they produce, and each job's wall time, so that a
# refactoring can be checked to change no byte (run before and after, then diff the
# .sha256 files; times are in times.txt, not compared).
#
#   bench/same_outputs.sh OUT_DIR [BIN]      (BIN default: build/bin/autoreg)
#
# Jobs: register by instance optimisation, register --model default (with --refine 5
# and the inverse field), segment with 3 atlases, a 12-step train and a 6-step search
# (plus 4 retraining steps) on a small grid. About 4 minutes on 2 cores.
# The search's operation costs are measured times, and its architecture step weighs them:
# give both runs the same costs with OP_COST=FILE (an op_cost.json of an earlier run), or
# the search differs whenever the machine's load does. JOBS="io model ..." runs a subset;
# HASH_ONLY=1 hashes what OUT_DIR holds again.
# Data: $AUTOREG_TEST_DATA, else ../shared/data beside the clone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: bench/same_outputs.sh OUT_DIR [BIN]}
bin=${2:-$root/build/bin/autoreg}
data="${AUTOREG_TEST_DATA:-$root/../shared/data}/oasis_trt"
[[ -x "$bin" ]] || { echo "same_outputs: no executable $bin (build first)" >&2; exit 2; }
jobs=" ${JOBS:-io model segment train search} "
[[ -f "$data/oasis06_t1.nii.gz" ]] || { echo "same_outputs: no OASIS-TRT data in $data" >&2; exit 2; }
if [[ -e "$out" && ! -f "$out/times.txt" && -n "$(ls -A "$out")" ]]; then
  echo "same_outputs: $out is not empty and not an earlier run's folder; refusing to clear it" >&2; exit 2
fi
[[ ${HASH_ONLY:-0} == 1 ]] && jobs=" " || rm -rf "$out"
mkdir -p "$out"/{io,model,segment,train,search}
export OMP_NUM_THREADS=2
: >"$out/times.txt"

timed() {  # timed NAME command...
  local name=$1 start end
  shift
  [[ $jobs == *" $name "* ]] || return 0
  start=$(date +%s.%N)
  "$@" >"$out/$name.log" 2>&1 || { echo "same_outputs: $name failed (exit $?); see $out/$name.log" >&2; exit 1; }
  end=$(date +%s.%N)
  printf '%-8s %6.1f s\n' "$name" "$(echo "$end - $start" | bc)" | tee -a "$out/times.txt"
}

f="$data/oasis06_t1.nii.gz" fl="$data/oasis06_labels.nii.gz"
m="$data/oasis07_t1.nii.gz" ml="$data/oasis07_labels.nii.gz"
timed io "$bin" register --fixed "$f" --moving "$m" --moving-labels "$ml" --fixed-labels "$fl" \
  --out-warped "$out/io/warped.nii.gz" --out-field "$out/io/field.nii.gz" --out-labels "$out/io/labels.nii.gz" \
  --out-affine "$out/io/affine.tfm" --qc "$out/io/qc.png" --threads 2 --seed 1
timed model "$bin" register --fixed "$f" --moving "$m" --moving-labels "$ml" --model default --refine 5 \
  --out-warped "$out/model/warped.nii.gz" --out-field "$out/model/field.nii.gz" \
  --out-labels "$out/model/labels.nii.gz" --out-inverse-field "$out/model/inverse.nii.gz" --threads 2

{
  echo "image,labels"
  for s in 01 02 03; do echo "$data/oasis${s}_t1.nii.gz,$data/oasis${s}_labels.nii.gz"; done
} >"$out/atlases.csv"
timed segment "$bin" segment --atlases "$out/atlases.csv" --target "$f" --model default \
  --out "$out/segment/labels.nii.gz" --out-probabilities "$out/segment/probabilities.nii.gz" --threads 2

{
  echo "image,labels,split"
  for s in 01 02 03; do echo "$data/oasis${s}_t1.nii.gz,$data/oasis${s}_labels.nii.gz,train"; done
  for s in 06 07; do echo "$data/oasis${s}_t1.nii.gz,$data/oasis${s}_labels.nii.gz,val"; done
} >"$out/manifest.csv"
timed train "$bin" train --manifest "$out/manifest.csv" --out "$out/train/model.autoreg" \
  --cache "$out/cache" --grid 32x32x32 --spacing 6 --steps 12 --validate-every 6 --checkpoint-every 6 \
  --validation inline --threads 2 --seed 3
timed search "$bin" search --manifest "$out/manifest.csv" --out "$out/search/run" --cache "$out/cache" \
  --grid 32x32x32 --spacing 6 --steps 6 --retrain-steps 4 --validate-every 3 --checkpoint-every 3 \
  --validation inline --threads 2 --seed 3 ${OP_COST:+--op-cost "$OP_COST"}

# Every output but logs, caches and the files that hold times; in model files and JSON
# summaries the fields that hold a time or a date are left out of the hash.
python3 - "$out" >"$out/outputs.sha256" <<'PY'
import hashlib, json, os, re, sys
out = sys.argv[1]
skip = re.compile(r"\.(log|jsonl|html|svg|ckpt)$|op_cost|cache/")
timed = re.compile(r"seconds|_ms$|_ms_|time|date|trained|peak|threads")
def scrub(v):
    if isinstance(v, dict):
        return {k: scrub(x) for k, x in v.items() if not timed.search(k)}
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v
for top in ("io", "model", "segment", "train", "search"):
    for folder, _, files in sorted(os.walk(os.path.join(out, top))):
        for name in sorted(files):
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, out)
            if skip.search(rel):
                continue
            data = open(path, "rb").read()
            if name.endswith(".autoreg"):
                head, sep, body = data.partition(b"\ntensor ")
                head = b"\n".join(l for l in head.split(b"\n")
                                   if not (l.startswith(b"note.") and timed.search(l.split(b" ")[0].decode())))
                data = head + sep + re.sub(rb"\nchecksum [0-9a-f]+\n", b"\n", body, count=1)
            elif name.endswith(".json"):
                data = json.dumps(scrub(json.loads(data)), sort_keys=True).encode()
            print(hashlib.sha256(data).hexdigest(), rel)
PY
echo "same_outputs: $(wc -l <"$out/outputs.sha256") files hashed in $out/outputs.sha256"
