#!/usr/bin/env python3
"""ANTs' joint label fusion (antspyx) on atlases already on the target's grid, for
segment_e2e.py's reference: ants_jlf.py TARGET TARGET_LABELS ATLASES.csv OUT.nii.gz.
Radius 2, β 4, search radius 3 (antspyx's defaults but β, as in issue 15's run); the
mask is the union of the atlases' labels, dilated by one voxel. Prints JSON: Dice over
the target's labels, fusion seconds. Needs antspyx (not part of autoreg)."""
import csv
import json
import sys
import time
from pathlib import Path

import ants
import numpy as np


def main():
    target, target_labels, atlases_csv, out = sys.argv[1:5]
    folder = Path(atlases_csv).parent
    rows = list(csv.DictReader(open(atlases_csv)))
    t = ants.image_read(target)
    images = [ants.image_read(str(folder / r["image"])) for r in rows]
    labels = [ants.image_read(str(folder / r["labels"])) for r in rows]
    union = sum((l.numpy() > 0).astype("float32") for l in labels)
    mask = ants.iMath(t.new_image_like((union > 0).astype("float32")), "MD", 1)
    start = time.monotonic()
    r = ants.joint_label_fusion(t, mask, atlas_list=images, beta=4, rad=2, label_list=labels)
    seconds = time.monotonic() - start
    seg = r["segmentation"]
    ants.image_write(seg, out)
    truth = ants.image_read(target_labels).numpy().astype(np.int64)
    s = seg.numpy().astype(np.int64)
    values = [v for v in np.unique(truth) if v != 0]
    dice = [2.0 * np.sum((truth == v) & (s == v)) / max(1, np.sum(truth == v) + np.sum(s == v)) for v in values]
    print(json.dumps({"dice": float(np.mean(dice)), "fusion_seconds": seconds, "atlases": len(rows)}))


if __name__ == "__main__":
    main()
