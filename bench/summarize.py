#!/usr/bin/env python3
"""Summarises an autoreg_bench JSON file (--benchmark_out) as a Markdown table.

For every autoreg benchmark: the median time, the speed-up over torch's grid_sample doing
the same work in the same run, and the ratio to the memory-traffic floor: the bytes that
must move once (the benchmark's `bytes` counter) divided by the bandwidth of a large
tensor copy (copy_bandwidth/<device>) measured in the same run.

    python3 bench/summarize.py bench.json
"""
import json
import sys

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def medians(runs):
    """name -> run for median aggregates, or for plain runs when there are none."""
    out = {}
    have_aggregates = any(r.get("run_type") == "aggregate" for r in runs)
    for r in runs:
        if have_aggregates and r.get("aggregate_name") != "median":
            continue
        name = r.get("run_name", r["name"]).replace("/real_time", "")
        out[name] = r
    return out


def main(path):
    with open(path) as f:
        data = json.load(f)
    runs = medians(data["benchmarks"])
    ms = {n: r["real_time"] * UNIT_MS[r.get("time_unit", "ns")] for n, r in runs.items()}
    bandwidth = {}
    for n, r in runs.items():
        if n.startswith("copy_bandwidth/"):
            bandwidth[n.split("/")[1]] = r["bytes"] / (ms[n] * 1e-3)  # bytes per second
    ctx = data.get("context", {})
    print(f"threads: {ctx.get('threads', '?')}, keep freed memory: "
          f"{ctx.get('keep_freed_memory', '?')}, THP_MEM_ALLOC_ENABLE: {ctx.get('thp', '?')}, host: {ctx.get('host_name', '?')}")
    for dev, bw in sorted(bandwidth.items()):
        print(f"copy bandwidth ({dev}, read + write): {bw / 1e9:.1f} GB/s")
    print()
    print("| benchmark | autoreg (ms) | grid_sample (ms) | speed-up | floor (ms) | × floor |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in sorted(ms):
        if n.startswith(("grid_sample", "copy_bandwidth")):
            continue
        op, dev, size = n.split("/")
        ref = "grid_sample_" + op.replace("warp_", "") if op.startswith("warp") else "grid_sample_" + op
        ref_name = f"{ref}/{dev}/{size}"
        ref_ms = ms.get(ref_name)
        floor_ms = runs[n]["bytes"] / bandwidth[dev] * 1e3 if dev in bandwidth else None
        cells = [n, f"{ms[n]:.1f}",
                 f"{ref_ms:.1f}" if ref_ms else "-",
                 f"{ref_ms / ms[n]:.1f}×" if ref_ms else "-",
                 f"{floor_ms:.1f}" if floor_ms else "-",
                 f"{ms[n] / floor_ms:.1f}" if floor_ms else "-"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py BENCH.json")
    main(sys.argv[1])
