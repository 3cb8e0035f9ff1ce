#!/usr/bin/env python3
"""What running `autoreg train` on many processes costs and saves, on one machine.

Trains the default network's recipe on OASIS-TRT (01-05 train, 06-07 validation, the
2 mm model grid) for a few steps in each configuration, in one run, and reads the
step times from each run's JSON log:

  rank layout     1 rank x 2 threads (--batch 2) against 2 ranks x 1 thread (--nproc 2):
                  the same global batch of 2 pairs; steps/s and the share of a step in
                  the allreduce (allreduce_seconds in the log)
  checkpoints     one every step, written in the training thread (--sync-checkpoints)
                  against in the background (the default), against none; the stall is
                  the time the training thread spends in a checkpoint (checkpoint_seconds
                  in the log)
  validation      inline every 5 steps against decoupled (the default) against off

    python3 bench/distributed_e2e.py [--autoreg build/bin/autoreg] [--data ../shared/data]
                                     [--out ~/.cache/autoreg/bench-distributed] [--steps 30]

The first run preprocesses the subjects into --out/cache (a few minutes); later runs
reuse it. Prints a Markdown table.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def manifest(data, out):
    path = os.path.join(out, "oasis.csv")
    with open(path, "w") as f:
        f.write("image,labels,split\n")
        for s in range(1, 8):
            split = "train" if s <= 5 else "val"
            d = os.path.join(os.path.abspath(data), "oasis_trt")
            f.write(f"{d}/oasis{s:02d}_t1.nii.gz,{d}/oasis{s:02d}_labels.nii.gz,{split}\n")
    return path


def train(args, name, extra, threads, steps=None):
    model = os.path.join(args.out, name + ".autoreg")
    for suffix in ("", ".ckpt", ".log.jsonl", ".validation.jsonl", ".best.ckpt", ".failures.jsonl"):
        if os.path.exists(model + suffix):
            os.remove(model + suffix)
    cmd = [args.autoreg, "train", "--manifest", manifest(args.data, args.out), "--out", model, "--cache",
           os.path.join(args.out, "cache"), "--steps", str(steps or args.steps),
           "--threads", str(threads)] + extra
    print("running", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    start = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - start
    lines = [json.loads(l) for l in open(model + ".log.jsonl")]
    seconds = [b["seconds"] - a["seconds"] for a, b in zip(lines, lines[1:])]
    steady = seconds[len(seconds) // 5:]  # past the first steps' warm-up
    allreduce = [l.get("allreduce_seconds", 0.0) for l in lines[1:]][len(seconds) // 5:]
    stalls = [l["checkpoint_seconds"] for l in lines if "checkpoint_seconds" in l]
    return {"s_per_step": statistics.mean(steady), "allreduce": statistics.mean(allreduce), "wall": wall,
            "validated": sum("validation_dice" in l for l in lines),
            "stall": statistics.median(stalls) if stalls else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--autoreg", default="build/bin/autoreg")
    ap.add_argument("--data", default=os.environ.get("AUTOREG_TEST_DATA", "../shared/data"))
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/autoreg/bench-distributed"))
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    quiet = ["--validation", "off"]
    # Preprocessing first, outside every measurement.
    train(args, "warm", quiet, 2, steps=2)
    none = ["--checkpoint-every", "100000"]
    rows = [
        ("1 rank x 2 threads, batch 2", train(args, "r1", quiet + none + ["--batch", "2"], 2)),
        ("2 ranks x 1 thread, batch 2", train(args, "r2", quiet + none + ["--nproc", "2"], 1)),
        ("1 rank x 2 threads, no checkpoints", train(args, "c0", quiet + none, 2)),
        ("checkpoint every step, synchronous", train(args, "cs", quiet + ["--checkpoint-every", "1", "--sync-checkpoints"], 2)),
        ("checkpoint every step, asynchronous", train(args, "ca", quiet + ["--checkpoint-every", "1"], 2)),
        ("validation inline every 5 steps", train(args, "vi", none + ["--validation", "inline", "--validate-every", "5"], 2)),
        ("validation decoupled (1 thread)", train(args, "vd", ["--validation", "decoupled", "--checkpoint-every", "5"], 2)),
    ]
    print("| configuration | s/step | steps/s | allreduce s/step (share) | checkpoint stall (median s) | wall s | validations in log |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        share = f"{r['allreduce']:.3f} ({100 * r['allreduce'] / r['s_per_step']:.1f} %)" if r["allreduce"] else ""
        stall = f"{r['stall']:.4f}" if r["stall"] is not None else ""
        print(f"| {name} | {r['s_per_step']:.3f} | {1 / r['s_per_step']:.2f} | {share} | {stall} | {r['wall']:.0f} | {r['validated']} |")


if __name__ == "__main__":
    main()
