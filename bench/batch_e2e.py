#!/usr/bin/env python3
"""Many pairs in one run (issue 15's figures): `autoreg register --pairs` against one
`register` call per pair, a killed batch resumed, and the inverse fields' round trip.

  batch_e2e.py compare --out DIR [--pairs 01:06,02:06,...] [--model default] [--threads 2]
      the pairs (moving:fixed, OASIS-TRT subjects) in one --pairs run, then one register
      call each; total and per-pair wall time and peak memory of each way, Dice alike
  batch_e2e.py kill --out DIR [--after 30]
      a --pairs run of the same pairs SIGKILLed after --after seconds, then resumed with
      --resume: which pairs the second run registered, and that every pair ends complete
  batch_e2e.py inverse --out DIR --pairs 08:09,09:10,10:08 [--model default]
      --pairs --inverse: per pair the forward Dice, the inverse Dice (fixed labels carried
      onto the moving image) and the round trip's median / 95th-percentile error in mm
      inside the fixed labels

Default pairs: atlases 01-05 onto the validation subjects 06 and 07 (ten pairs).
Stdlib only. AUTOREG: another autoreg binary (e.g. a copy while the tree is rebuilt).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AUTOREG = os.environ.get("AUTOREG", str(ROOT / "build" / "bin" / "autoreg"))
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "oasis_trt"
DEFAULT_PAIRS = ",".join(f"{m}:{f}" for f in ("06", "07") for m in ("01", "02", "03", "04", "05"))


def subject(s):
    return DATA / f"oasis{s}_t1.nii.gz", DATA / f"oasis{s}_labels.nii.gz"


def pairs_csv(pairs, path):
    lines = ["fixed,moving,moving_labels,fixed_labels"]
    for p in pairs.split(","):
        m, f = p.split(":")
        (fi, fl), (mi, ml) = subject(f), subject(m)
        lines.append(f"{fi},{mi},{ml},{fl}")
    path.write_text("\n".join(lines) + "\n")
    return [p.split(":") for p in pairs.split(",")]


def timed(cmd, log, expect=(0,)):
    start = time.monotonic()
    with open(log, "w") as err:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in expect:
        sys.exit(f"batch_e2e: exit {code} ({log}): {' '.join(map(str, cmd))}")
    return time.monotonic() - start, usage.ru_maxrss / 1024.0, out


def common(args):
    extra = ["--threads", args.threads]
    if args.model:
        extra += ["--model", args.model]
    return extra


def compare(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = pairs_csv(args.pairs, out / "pairs.csv")
    batch = out / "batch"
    wall, peak, _ = timed([AUTOREG, "register", "--pairs", out / "pairs.csv", "--out-dir", batch] + common(args),
                          out / "batch.log")
    summary = json.loads((batch / "summary.json").read_text())
    rows = [{"way": "one --pairs run", "pairs": len(pairs), "wall_s": wall, "per_pair_s": wall / len(pairs),
             "peak_mib": peak, "dice": [p["dice"] for p in summary["pairs"]]}]
    single = out / "single"
    single.mkdir(exist_ok=True)
    total, peaks, dice = 0.0, [], []
    for m, f in pairs:
        (fi, fl), (mi, ml) = subject(f), subject(m)
        o = single / f"{m}_to_{f}"
        w, p, text = timed([AUTOREG, "register", "--json", "--fixed", fi, "--moving", mi, "--moving-labels", ml,
                            "--fixed-labels", fl, "--out-warped", f"{o}_warped.nii.gz", "--out-field",
                            f"{o}_field.nii.gz", "--out-labels", f"{o}_labels.nii.gz"] + common(args),
                           single / f"{m}_to_{f}.log")
        total += w
        peaks.append(p)
        dice.append(json.loads(text)["dice"])
    rows.append({"way": "one register call per pair", "pairs": len(pairs), "wall_s": total,
                 "per_pair_s": total / len(pairs), "peak_mib": max(peaks), "dice": dice})
    report(out / "compare.jsonl", rows)


def kill(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs_csv(args.pairs, out / "pairs.csv")
    batch = out / "killed"
    cmd = [AUTOREG, "register", "--pairs", out / "pairs.csv", "--out-dir", batch] + common(args)
    with open(out / "killed.log", "w") as err:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=err)
        time.sleep(args.after)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = sorted(p.name for p in batch.glob("*.json") if not p.name.startswith("summary"))
    wall, _, _ = timed(cmd + ["--resume"], out / "resumed.log")
    summary = json.loads((batch / "summary.json").read_text())
    status = [p["status"] for p in summary["pairs"]]
    row = {"killed_after_s": args.after, "complete_when_killed": len(before),
           "resumed_registered": status.count("done"), "resumed_skipped": status.count("done before (--resume)"),
           "failed": status.count("failed"), "resume_wall_s": wall,
           "temporaries_left": sorted(p.name for p in batch.iterdir() if "tmp" in p.name)}
    report(out / "kill.jsonl", [row])


def inverse(args):
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs_csv(args.pairs, out / "pairs.csv")
    mode = "model" if args.model else "io"
    batch = out / f"inverse-{mode}"
    timed([AUTOREG, "register", "--pairs", out / "pairs.csv", "--out-dir", batch, "--inverse"] + common(args),
          out / f"inverse-{mode}.log")
    rows = []
    for p in json.loads((batch / "summary.json").read_text())["pairs"]:
        inv = p["inverse"]
        rows.append({"pair": p["pair"], "mode": mode, "dice": p["dice"], "inverse_dice": inv["dice"],
                     "residual_mm_median": inv["residual_mm_median"], "residual_mm_p95": inv["residual_mm_p95"],
                     "seconds": p["seconds"], "inverse_seconds": p["stage_seconds"].get("inverse")})
    report(out / "inverse.jsonl", rows)


def report(path, rows):
    with open(path, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
            print(json.dumps(r), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["compare", "kill", "inverse"])
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", default=DEFAULT_PAIRS)
    p.add_argument("--model", default="")
    p.add_argument("--threads", default="2")
    p.add_argument("--after", type=float, default=30.0)
    args = p.parse_args()
    {"compare": compare, "kill": kill, "inverse": inverse}[args.step](args)


if __name__ == "__main__":
    main()
