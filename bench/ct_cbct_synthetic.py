#!/usr/bin/env python3
"""A cone-beam CT simulated from the planning CT (../shared/data/ct_cbct), with a known
deformation: the planning CT deformed by a smooth random field (up to about MAX mm),
then seen as a CBCT is — −1000 outside a cylinder of 26 cm, intensities shifted and
scaled off HU (soft tissue near −180), streaks from the centre, noise. The planning CT
is registered onto it with `autoreg register` and the given options; the endpoint error
(mm) of the field against the one applied, inside the cylinder and the body, and the
Dice of the contours carried by the field against those carried by the truth.

  bench/ct_cbct_synthetic.py [--max-mm 8] [--seed 1] [--threads 2] [--out DIR] [-- options]

Default options: --preset ct-cbct. The answer is exact: fixed(x) = cbct(ct(x + u(x))).
Outputs in --out (default ~/.cache/autoreg/ct-cbct-synthetic).
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
import torch

from synthetic_motion import sample

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "ct_cbct"
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))


def smooth_field(shape, spacing, max_mm, seed):
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand((1, 3, 4, 6, 6), generator=g) * 2 - 1  # knots about 6-9 cm apart
    field = torch.nn.functional.interpolate(coarse, size=shape, mode="trilinear", align_corners=True)[0]
    for c in range(3):
        field[c] *= max_mm / spacing[c]  # mm → voxels along each axis
    return field


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--max-mm", type=float, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path.home() / ".cache" / "autoreg" / "ct-cbct-synthetic")
    p.add_argument("extra", nargs="*", help="options for autoreg register (after --)")
    a = p.parse_args()
    if not (DATA / "planct.nii.gz").exists():
        sys.exit(f"ct_cbct_synthetic: no data in {DATA}")
    a.out.mkdir(parents=True, exist_ok=True)
    ct_image = sitk.ReadImage(str(DATA / "planct.nii.gz"), sitk.sitkFloat32)
    ct = sitk.GetArrayFromImage(ct_image)  # D×H×W
    labels = sitk.GetArrayFromImage(sitk.ReadImage(str(DATA / "planct_labels.nii.gz"))).astype(np.float32)
    spacing = ct_image.GetSpacing()[::-1]
    u = smooth_field(ct.shape, spacing, a.max_mm, a.seed)
    deformed = sample(ct, u, "bilinear")
    truth_labels = sample(labels, u, "nearest").round().astype(np.int16)
    d, h, w = ct.shape
    y = (np.arange(h) - (h - 1) / 2)[:, None] * spacing[1]
    x = (np.arange(w) - (w - 1) / 2)[None, :] * spacing[2]
    cylinder = (x * x + y * y) <= 130.0 ** 2
    angle = np.arctan2(y, x)
    rng = np.random.default_rng(a.seed)
    streaks = 60 * np.sin(24 * angle) * np.exp(-np.sqrt(x * x + y * y) / 80)  # from the centre outwards
    cbct = 0.9 * deformed - 220 + streaks[None] + rng.normal(0, 20, deformed.shape)
    cbct = np.where(cylinder[None], np.clip(cbct, -999, None), -1000).round().astype(np.int16)
    fixed = sitk.GetImageFromArray(cbct)
    fixed.CopyInformation(ct_image)
    fixed_file = a.out / f"cbct_sim_{a.seed}.nii.gz"
    sitk.WriteImage(fixed, str(fixed_file))
    field_file, labels_file = a.out / "field.nii.gz", a.out / "labels.nii.gz"
    options = a.extra or ["--preset", "ct-cbct"]
    cmd = [str(AUTOREG), "register", "--fixed", str(fixed_file), "--moving", str(DATA / "planct.nii.gz"),
           "--moving-labels", str(DATA / "planct_labels.nii.gz"), "--out-labels", str(labels_file), "--out-field",
           str(field_file), "--out-warped", str(a.out / "warped.nii.gz"), "--json", "--threads", str(a.threads)] + options
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        sys.exit(f"ct_cbct_synthetic: register failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    s = json.loads(r.stdout)
    field = sitk.GetArrayFromImage(sitk.ReadImage(str(field_file)))  # D×H×W×3 LPS mm = (i, j, k) mm here
    truth = np.stack([u[2].numpy() * spacing[2], u[1].numpy() * spacing[1], u[0].numpy() * spacing[0]], -1)
    inside = cylinder[None] & (deformed > -500)
    error = np.linalg.norm(field - truth, axis=-1)[inside]
    before = np.linalg.norm(truth, axis=-1)[inside]
    carried = sitk.GetArrayFromImage(sitk.ReadImage(str(labels_file)))
    dice = {}
    for value, name in ((1, "small bowel"), (2, "stomach + duodenum")):
        t, c = (truth_labels == value) & cylinder[None], (carried == value) & cylinder[None]
        dice[name] = float(2 * (t & c).sum() / max(1, t.sum() + c.sum()))
    row = {"seed": a.seed, "max_mm": a.max_mm, "options": options, "epe_before_mm": float(before.mean()),
           "epe_after_mm": float(error.mean()), "epe_after_p95_mm": float(np.percentile(error, 95)), "dice": dice,
           "seconds": seconds, "warnings": [x["check"] for x in s["warnings"]], "affine_kept": (s["affine_check"] or {}).get("kept")}
    print(json.dumps(row))
    with open(a.out / "results.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
