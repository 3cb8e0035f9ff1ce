#!/usr/bin/env python3
"""Large sliding motion with a known answer: each liver subject's exhale master
(../shared/data/liver) warped by a sliding field — one half of the volume (along the
first in-plane axis) moved by A mm along the second in-plane axis, the other half still,
the two joined over 4 mm — for A = 20, 25 and 30 mm. The master is registered onto its
warped copy with `autoreg register` and the given options; the endpoint error (mm) of
the field against the one applied, in the moving half and in the still half, is printed
beside the error before registration (the motion itself).

  bench/liver_synthetic.py [--threads 2] [--out DIR] [-- extra register options]

Default options: --preset breathing. The answer is exact: fixed(x) = master(x + u(x)),
so the field that registers the master onto it is u. Data: $AUTOREG_TEST_DATA, else
../shared/data. Outputs in --out (default ~/.cache/autoreg/liver-synthetic).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import SimpleITK as sitk

from synthetic_motion import sample

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "liver"
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))
AMPLITUDES_MM = (20, 25, 30)


def sliding_field(shape, spacing, amplitude_mm):
    """u (3×D×H×W, voxels, channel c along tensor axis c): the half W < W/2 moves along H."""
    d, h, w = shape
    x = (np.arange(w) - w / 2) * spacing[2]  # mm across the interface
    weight = 1 / (1 + np.exp(x / 1.0))       # 1 on one side, 0 on the other, over about 4 mm
    u = np.zeros((3, d, h, w), np.float32)
    u[1] = (amplitude_mm / spacing[1]) * weight[None, None, :]
    return u, weight


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path.home() / ".cache" / "autoreg" / "liver-synthetic")
    p.add_argument("extra", nargs="*", help="options for autoreg register (after --)")
    a = p.parse_args()
    if not (DATA / "dataset18").is_dir():
        sys.exit(f"liver_synthetic: no liver data in {DATA}")
    a.out.mkdir(parents=True, exist_ok=True)
    options = a.extra or ["--preset", "breathing"]
    print(f"register options: {' '.join(options)}; {a.threads} threads")
    print("| subject | motion | moving half: before → after (mm) | still half: before → after | folding | time | warnings |")
    print("|---|---:|---:|---:|---:|---:|---|")
    rows = []
    for subject in ("dataset18", "dataset19"):
        master_file = DATA / subject / "exhMaster_unmasked.force_direction.mha"
        master = sitk.ReadImage(str(master_file), sitk.sitkFloat32)
        image = sitk.GetArrayFromImage(master)  # D×H×W (k, j, i)
        spacing = master.GetSpacing()[::-1]    # along D, H, W
        for amplitude in AMPLITUDES_MM:
            u, weight = sliding_field(image.shape, spacing, amplitude)
            fixed = sitk.GetImageFromArray(sample(image, u))
            fixed.CopyInformation(master)
            fixed_file = a.out / f"{subject}_{amplitude}mm_fixed.mha"
            field_file = a.out / f"{subject}_{amplitude}mm_field.mha"
            sitk.WriteImage(fixed, str(fixed_file))
            cmd = [str(AUTOREG), "register", "--fixed", str(fixed_file), "--moving", str(master_file), "--out-field",
                   str(field_file), "--out-warped", str(a.out / f"{subject}_{amplitude}mm_warped.mha"), "--threads",
                   str(a.threads), "--json"] + options
            start = time.monotonic()
            r = subprocess.run(cmd, capture_output=True, text=True)
            seconds = time.monotonic() - start
            if r.returncode != 0:
                sys.exit(f"liver_synthetic: register failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
            s = json.loads(r.stdout)
            # The field: LPS mm per voxel; identity direction, so (x, y, z) = (i, j, k) mm.
            field = sitk.GetArrayFromImage(sitk.ReadImage(str(field_file)))  # D×H×W×3, (i, j, k) order
            truth_mm = np.stack([u[2] * spacing[2], u[1] * spacing[1], u[0] * spacing[0]], -1)
            error = np.linalg.norm(field - truth_mm, axis=-1)
            motion = np.linalg.norm(truth_mm, axis=-1)
            moving_half, still_half = weight[None, None, :] > 0.99, weight[None, None, :] < 0.01
            moving_half, still_half = np.broadcast_to(moving_half, error.shape), np.broadcast_to(still_half, error.shape)
            row = {"subject": subject, "motion_mm": amplitude, "moving_before": float(motion[moving_half].mean()),
                   "moving_after": float(error[moving_half].mean()), "still_before": float(motion[still_half].mean()),
                   "still_after": float(error[still_half].mean()), "folding_percent": s["non_positive_jacobian_percent"],
                   "seconds": seconds, "warnings": [w["check"] for w in s["warnings"]], "options": options}
            rows.append(row)
            print(f"| {subject} | {amplitude} mm | {row['moving_before']:.1f} → {row['moving_after']:.2f} | "
                  f"{row['still_before']:.1f} → {row['still_after']:.2f} | {row['folding_percent']:.2f} % | "
                  f"{seconds:.1f} s | {', '.join(row['warnings']) or 'none'} |", flush=True)
    mean = lambda k: sum(r[k] for r in rows) / len(rows)
    print(f"| mean | | {mean('moving_before'):.1f} → {mean('moving_after'):.2f} | {mean('still_before'):.1f} → "
          f"{mean('still_after'):.2f} | {mean('folding_percent'):.2f} % | {mean('seconds'):.1f} s | |")
    with open(a.out / "results.jsonl", "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
