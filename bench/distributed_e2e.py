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
  search          `autoreg search` steps (after a short warm-up: the mixed supernet's
                  ω, α and λ updates), 1 rank x 2 threads (--batch 2) against 2 ranks x
                  1 thread, and the share of a step in its allreduces

    python3 bench/distributed_e2e.py [--autoreg build/bin/autoreg] [--data ../shared/data]
                                     [--out ~/.cache/autoreg/bench-distributed] [--steps 30]
                                     [--search-steps 12]

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


def search(args, name, extra, threads, steps=None):
    out = os.path.join(args.out, "search-" + name)
    subprocess.run(["rm", "-rf", out], check=True)
    costs = os.path.join(args.out, "op_cost.json")
    cmd = [args.autoreg, "search", "--manifest", manifest(args.data, args.out), "--out", out, "--cache",
           os.path.join(args.out, "cache"), "--steps", str(steps or args.search_steps), "--warmup-fraction", "0.1",
           "--retrain-steps", "0", "--validation", "off", "--threads", str(threads)] + extra
    if os.path.exists(costs):
        cmd += ["--op-cost", costs]
    print("running", " ".join(cmd[1:]), file=sys.stderr, flush=True)
    start = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.time() - start
    if not os.path.exists(costs):
        subprocess.run(["cp", os.path.join(out, "op_cost.json"), costs], check=True)
    lines = [json.loads(l) for l in open(os.path.join(out, "search.log.jsonl"))]
    lines = [l for l in lines if l["phase"] != "warmup"]
    seconds = [b["seconds"] - a["seconds"] for a, b in zip(lines, lines[1:])]
    allreduce = [l.get("allreduce_seconds", 0.0) for l in lines[1:]]
    if not seconds:  # a warm-up run
        return None
    return {"s_per_step": statistics.mean(seconds), "allreduce": statistics.mean(allreduce), "wall": wall,
            "validated": 0, "stall": None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--autoreg", default="build/bin/autoreg")
    ap.add_argument("--data", default=os.environ.get("AUTOREG_TEST_DATA", "../shared/data"))
    ap.add_argument("--out", default=os.path.expanduser("~/.cache/autoreg/bench-distributed"))
    ap.add_argument("--steps", type=int, default=30, help="training steps per configuration (0: no training rows)")
    ap.add_argument("--search-steps", type=int, default=12, help="search steps per configuration (0: no search rows)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    quiet = ["--validation", "off"]
    # Preprocessing first, outside every measurement.
    train(args, "warm", quiet, 2, steps=2)
    none = ["--checkpoint-every", "100000"]
    print("| configuration | s/step | steps/s | allreduce s/step (share) | checkpoint stall (median s) | wall s | validations in log |")
    print("|---|---:|---:|---:|---:|---:|---:|", flush=True)

    def show(name, r):
        share = f"{r['allreduce']:.3f} ({100 * r['allreduce'] / r['s_per_step']:.1f} %)" if r["allreduce"] else ""
        stall = f"{r['stall']:.4f}" if r["stall"] is not None else ""
        print(f"| {name} | {r['s_per_step']:.3f} | {1 / r['s_per_step']:.2f} | {share} | {stall} | {r['wall']:.0f} | {r['validated']} |",
              flush=True)

    if args.steps > 0:
        show("1 rank x 2 threads, batch 2", train(args, "r1", quiet + none + ["--batch", "2"], 2))
        show("2 ranks x 1 thread, batch 2", train(args, "r2", quiet + none + ["--nproc", "2"], 1))
        show("1 rank x 2 threads, no checkpoints", train(args, "c0", quiet + none, 2))
        show("checkpoint every step, synchronous", train(args, "cs", quiet + ["--checkpoint-every", "1", "--sync-checkpoints"], 2))
        show("checkpoint every step, asynchronous", train(args, "ca", quiet + ["--checkpoint-every", "1"], 2))
        show("validation inline every 5 steps", train(args, "vi", none + ["--validation", "inline", "--validate-every", "5"], 2))
        show("validation decoupled (1 thread)", train(args, "vd", ["--validation", "decoupled", "--checkpoint-every", "5"], 2))
    if args.search_steps > 0:
        search(args, "warm", [], 2, steps=2)  # the operation costs, measured once
        show("search: 1 rank x 2 threads, batch 2", search(args, "r1", ["--batch", "2"], 2))
        show("search: 2 ranks x 1 thread, batch 2", search(args, "r2", ["--nproc", "2"], 1))


if __name__ == "__main__":
    main()
