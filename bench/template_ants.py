#!/usr/bin/env python3
"""ANTsPy's ants.build_template (its defaults: SyN, 3 iterations) on OASIS-TRT subjects,
the reference of bench/template_oasis.py (issue 39). Run it with ANTsPy's own Python
(`pip install antspyx`, 0.6.3 measured), on a quiet machine:

    ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS=2 python bench/template_ants.py --subjects 6 --out DIR

Prints the wall time and the template's gradient energy inside the brain (intensities
mapped to [0, 1] by the 0.5th and 99.5th percentiles first, as autoreg's template is, and
the brain where the template exceeds 0.1); writes DIR/ants_template.nii.gz.
"""
import argparse
import json
import os
import pathlib
import time

import ants
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def gradient_energy(path):
    a = ants.image_read(str(path)).numpy().astype(np.float64)
    lo, hi = np.percentile(a, [0.5, 99.5])
    a = np.clip((a - lo) / (hi - lo), 0, 1)
    mask = a > 0.1
    g = [np.diff(a, axis=d, append=a.take([-1], axis=d)) ** 2 for d in range(3)]
    return float(sum(x[mask].mean() for x in g))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=6)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--autoreg-template", type=pathlib.Path, help="also the gradient energy of this template")
    args = parser.parse_args()
    data = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "oasis_trt"
    images = [ants.image_read(str(data / f"oasis{i:02d}_t1.nii.gz")) for i in range(1, args.subjects + 1)]
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    template = ants.build_template(image_list=images)
    seconds = time.perf_counter() - start
    ants.image_write(template, str(args.out / "ants_template.nii.gz"))
    result = {"subjects": args.subjects, "ants_seconds": seconds,
              "ants_gradient_energy": gradient_energy(args.out / "ants_template.nii.gz"),
              "threads": os.environ.get("ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS")}
    if args.autoreg_template:
        result["autoreg_gradient_energy"] = gradient_energy(args.autoreg_template)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
