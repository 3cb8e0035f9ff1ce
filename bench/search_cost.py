#!/usr/bin/env python3
"""What a search step costs against a training step of the default network.

Runs the `search_cost` benchmarks of autoreg_bench, each in its own process (so that
its peak memory is its own), and prints seconds per step, the ratio to the training
step, the split of a search step into its ω, λ and α updates, and peak memory.

    python3 bench/search_cost.py [--bench build/bin/autoreg_bench] [--threads 2] [--skip-darts] [--warmup-fraction 0.5]
                              [--cases default,second_order,whole_volumes,gdas,darts_full]

The run average counts the warm-up's steps (the default network's path: a training
step) at --warmup-fraction and the search's at the rest.
"""
import argparse
import json
import subprocess
import sys
import tempfile

CASES = ["train_step", "search_step/default", "search_step/second_order", "search_step/whole_volumes",
         "search_step/gdas", "search_step/darts_full"]


def run(bench, case, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([bench, f"--threads={threads}", f"--benchmark_filter=^search_cost/{case}/",
                        f"--benchmark_out={out.name}", "--benchmark_out_format=json"],
                       check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out.name))["benchmarks"][0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="build/bin/autoreg_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-darts", action="store_true", help="leave out the full-supernet DARTS step (minutes)")
    ap.add_argument("--cases", default="",
                    help="comma-separated search_step cases to run (default: all; the training step always runs)")
    ap.add_argument("--warmup-fraction", type=float, default=0.5,
                    help="warm-up share for the run average: warm-up steps train the default network (default 0.5, the command's)")
    args = ap.parse_args()
    rows = {}
    for case in CASES:
        if args.skip_darts and case.endswith("darts_full"):
            continue
        if args.cases and case != "train_step" and case.split("/")[-1] not in args.cases.split(","):
            continue
        print(f"running {case}...", file=sys.stderr, flush=True)
        rows[case] = run(args.bench, case, args.threads)
    base = rows["train_step"]["seconds_per_step"]
    base_mem = rows["train_step"]["peak_rss_mib"]
    w = args.warmup
    print(f"| step | s/step | × training step | × over a run (warm-up {w:g}) | ω s | λ s | α s | peak memory (MiB) |"
          " × training's |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case, r in rows.items():
        ratio = r["seconds_per_step"] / base
        run_ratio = ratio if case == "train_step" else w + (1 - w) * ratio
        parts = [f"{r[k]:.2f}" if k in r else "" for k in ("weights_s", "objective_s", "architecture_s")]
        print(f"| {case} | {r['seconds_per_step']:.2f} | {ratio:.2f} | {run_ratio:.2f} | " + " | ".join(parts) +
              f" | {r['peak_rss_mib']:.0f} | {r['peak_rss_mib'] / base_mem:.2f} |")


if __name__ == "__main__":
    main()
