#!/usr/bin/env python3
"""The registration networks' forward pass at 1×1×160×192×224 (AutoReg network, default
genotype, against the VoxelMorph-style U-Net) and the cost of every candidate operation
on every edge of the AutoReg network: the network_forward and op_cost benchmarks of
autoreg_bench, each network in its own process so that its peak memory is its own
(minus the same process with no benchmark: LibTorch loaded, no tensors).

  bench/network_e2e.py [--threads 2] [--repetitions 3] [--no-ops] [--device cpu]
                       [--genotypes NAME=FILE,...]

--genotypes adds AutoReg networks of other genotypes (a search's genotype.txt).

Prints two Markdown tables; writes the raw Google Benchmark JSON next to them
(network_e2e-*.json).
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "build" / "bin" / "autoreg_bench"
OPS = ["conv_1x1", "conv_3x3", "conv_5x5", "sep_conv_3x3", "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5",
       "dil_conv_7x7"]
EDGES = ["F0", "F1", "F2", "F3", "F4", "F5", "D4_0", "D4_1", "D4_2", "D2_0", "D2_1", "D2_2"]


def run(filter_, threads, repetitions, out):
    """Runs the benchmarks matching filter_; returns (median ms by name, peak RSS MiB)."""
    cmd = [str(BENCH), f"--benchmark_filter={filter_}", f"--threads={threads}",
           f"--benchmark_repetitions={repetitions}", "--benchmark_report_aggregates_only=true",
           "--benchmark_format=json", f"--benchmark_out={out}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"network_e2e: {' '.join(cmd)} failed: {proc.stderr.read()}")
    times = {}
    if Path(out).exists() and Path(out).stat().st_size:
        for b in json.load(open(out))["benchmarks"]:
            if b.get("aggregate_name", "median") == "median":
                name = b["run_name"].replace("/real_time", "")
                unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
                times[name] = b["real_time"] * unit
    return times, usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--no-ops", action="store_true", help="skip the per-operation table")
    ap.add_argument("--genotypes", default="", help="NAME=FILE,...: more AutoReg genotypes")
    args = ap.parse_args()
    if not BENCH.exists():
        sys.exit(f"network_e2e: build first ({BENCH} is missing)")
    if args.genotypes:
        os.environ["AUTOREG_BENCH_GENOTYPES"] = ",".join(
            f"{n}={Path(f).resolve()}" for n, f in (i.split("=", 1) for i in args.genotypes.split(",")))
    _, base = run("^nothing$", args.threads, 1, "network_e2e-base.json")
    rows = {}
    extra = [i.split("=", 1)[0] for i in args.genotypes.split(",") if i]
    for kind in ["autoreg", "unet"] + extra:
        name = f"network_forward/{kind}/{args.device}/160"
        times, peak = run(f"^{name}(/real_time)?$", args.threads, args.repetitions, f"network_e2e-{kind}.json")
        rows[kind] = (times[name], peak - base)
    print(f"Forward pass, 1×1×160×192×224, {args.device}, {args.threads} threads (median of {args.repetitions}):\n")
    print("| network | forward | peak memory (above LibTorch loaded) |\n|---|---:|---:|")
    for kind, (ms, mib) in rows.items():
        print(f"| {kind} | {ms / 1e3:.2f} s | {mib:.0f} MiB |")
    a, u = rows["autoreg"], rows["unet"]
    print(f"\nAutoReg network: {u[0] / a[0]:.2f}× faster than the U-Net, {a[1] / u[1]:.2f}× its memory.")
    if args.no_ops:
        return
    times, _ = run(f"^op_cost/{args.device}/", args.threads, 1, "network_e2e-ops.json")
    print(f"\nCost of each candidate operation on each edge at 160×192×224 (ms, forward, {args.device}):\n")
    print("| edge | " + " | ".join(OPS) + " |\n|---|" + "---:|" * len(OPS))
    for e in EDGES:
        cells = [times.get(f"op_cost/{args.device}/{e}/{op}") for op in OPS]
        print(f"| {e} | " + " | ".join(f"{c:.0f}" if c is not None else "-" for c in cells) + " |")


if __name__ == "__main__":
    main()
