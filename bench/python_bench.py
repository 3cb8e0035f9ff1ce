#!/usr/bin/env python3
"""The Python package's costs (issue 38), each against its reference in the same run:

1. autoreg.register on in-memory SimpleITK images against `autoreg register` on the
   same files (same settings, seed and threads; the command's time includes reading
   and writing its files, the Python call's includes converting the images);
2. torch.ops.autoreg.warp against torch.nn.functional.grid_sample, forward and
   forward + backward, on a 1×1×160×192×224 volume;
3. the PyTorch module's forward against the C++ network's (autoreg._autoreg) on the
   default model's grid.

    python bench/python_bench.py [--threads 2] [--repeats 3]

Data: the sample pair of $AUTOREG_TEST_DATA or ../shared/data (pairs/oasisA, oasisB).
Prints a table; every time is the median of the repeats. "summary s" is what the
summary reports (its stages), "no files s" the same without reading and writing files.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

import SimpleITK as sitk
import torch
import torch.nn.functional as F

import autoreg
from autoreg import _autoreg, ops

ROOT = pathlib.Path(__file__).resolve().parents[1]


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "pairs"
    fixed_file, moving_file = data / "oasisB_t1.nii.gz", data / "oasisA_t1.nii.gz"
    rows = []

    with tempfile.TemporaryDirectory() as out:
        cli = [str(ROOT / "build" / "bin" / "autoreg"), "register", "--fixed", str(fixed_file), "--moving", str(moving_file),
               "--out-warped", f"{out}/w.nii.gz", "--out-field", f"{out}/f.nii.gz", "--threads", str(args.threads), "--json"]
        seconds = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            summary = json.loads(subprocess.run(cli, capture_output=True, text=True, check=True).stdout)
            seconds.append(time.perf_counter() - start)
        stages = sum(v for k, v in summary["stage_seconds"].items() if k not in ("read", "write"))
        rows.append(("autoreg register (command, files in and out)", statistics.median(seconds), summary["seconds"], stages))
    fixed, moving = sitk.ReadImage(str(fixed_file)), sitk.ReadImage(str(moving_file))
    reported = []
    t = median_time(lambda: reported.append(autoreg.register(fixed, moving, threads=args.threads).summary["seconds"]),
                    args.repeats)
    rows.append(("autoreg.register (Python, in memory)", t, statistics.median(reported), statistics.median(reported)))

    g = torch.Generator().manual_seed(0)
    image = torch.rand(1, 1, 160, 192, 224, generator=g)
    u = (torch.rand(1, 3, 160, 192, 224, generator=g) - 0.5) * 4
    grid = ops.reference.sampling_grid(u)
    rows.append(("warp forward: torch.ops.autoreg.warp", median_time(lambda: ops.warp(image, u), args.repeats)))
    rows.append(("warp forward: grid_sample (grid given)",
                 median_time(lambda: F.grid_sample(image, grid, align_corners=True), args.repeats)))

    def backward(fn, *inputs):
        xs = [x.detach().requires_grad_() for x in inputs]
        fn(*xs).sum().backward()

    rows.append(("warp forward+backward: torch.ops.autoreg.warp",
                 median_time(lambda: backward(ops.warp, image, u), args.repeats)))
    rows.append(("warp forward+backward: grid_sample (grid given)",
                 median_time(lambda: backward(lambda i, gr: F.grid_sample(i, gr, align_corners=True), image, grid),
                             args.repeats)))

    model = autoreg.load_model("default")
    shape = (1, 1) + tuple(model.info.grid)
    moving_t, fixed_t = torch.rand(shape, generator=g), torch.rand(shape, generator=g)
    with torch.no_grad():
        rows.append(("network forward: PyTorch module", median_time(lambda: model(moving_t, fixed_t), args.repeats)))
    path = autoreg.default_model_path()
    rows.append(("network forward: C++ network (incl. loading the model)",
                 median_time(lambda: _autoreg.network_forward(path, moving_t.numpy(), fixed_t.numpy(), False), args.repeats)))

    print(f"{'what':58s} {'wall s':>8s} {'summary s':>10s} {'no files s':>10s}   "
          f"({args.threads} threads, median of {args.repeats})")
    for name, wall, *reported_s in rows:
        extra = "".join(f" {r:10.3f}" for r in reported_s)
        print(f"{name:58s} {wall:8.3f}{extra}")


if __name__ == "__main__":
    main()
