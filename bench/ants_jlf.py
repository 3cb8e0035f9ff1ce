#!/usr/bin/env python3
"""ANTs' joint label fusion (antspyx) on atlases already on the target's grid, for
segment_e2e.py's reference: ants_jlf.py TARGET TARGET_LABELS ATLASES.csv OUT.nii.gz [SEARCH].
Radius 2, β 4, search radius 3 (antspyx's defaults, as in issue 15's run); the mask is
the union of the atlases' labels, dilated by one voxel. Two things make it a fair
reference: the target's intensities are normalised as the warped atlases' are (0.5-99.5
percentiles to [0, 1], what `segment --out-warped-dir` writes), as ANTs compares raw patch
intensities (MSQ); and max_lab_plus_one, so that background competes as a label (without
it antspyx gives every voxel of the mask a foreground label). Prints JSON: Dice over the
target's labels, fusion seconds. Needs antspyx (not part of autoreg)."""
import csv
import json
import sys
import time
from pathlib import Path

import ants
import numpy as np


def main():
    target, target_labels, atlases_csv, out = sys.argv[1:5]
    search = int(sys.argv[5]) if len(sys.argv) > 5 else 3  # antspyx's default r_search
    folder = Path(atlases_csv).parent
    rows = list(csv.DictReader(open(atlases_csv)))
    t = ants.image_read(target)
    lo, hi = np.percentile(t.numpy(), [0.5, 99.5])
    t = t.new_image_like(np.clip((t.numpy() - lo) / max(hi - lo, 1e-6), 0, 1).astype("float32"))
    images = [ants.image_read(str(folder / r["image"])) for r in rows]
    labels = [ants.image_read(str(folder / r["labels"])) for r in rows]
    union = sum((l.numpy() > 0).astype("float32") for l in labels)
    mask = ants.iMath(t.new_image_like((union > 0).astype("float32")), "MD", 1)
    start = time.monotonic()
    r = ants.joint_label_fusion(t, mask, atlas_list=images, beta=4, rad=2, label_list=labels, max_lab_plus_one=True,
                                 r_search=search)
    seconds = time.monotonic() - start
    seg = r["segmentation"]
    ants.image_write(seg, out)
    truth = ants.image_read(target_labels).numpy().astype(np.int64)
    s = seg.numpy().astype(np.int64)
    values = [v for v in np.unique(truth) if v != 0]
    dice = [2.0 * np.sum((truth == v) & (s == v)) / max(1, np.sum(truth == v) + np.sum(s == v)) for v in values]
    print(json.dumps({"dice": float(np.mean(dice)), "fusion_seconds": seconds, "atlases": len(rows), "search": search}))


if __name__ == "__main__":
    main()
