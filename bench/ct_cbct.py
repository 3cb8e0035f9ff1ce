#!/usr/bin/env python3
"""A planning CT registered onto the same patient's cone-beam CT (../shared/data/ct_cbct):
the expert contours carried from the CT onto the CBCT, scored per structure against the
CBCT's own (Dice), before registration and after; the time, peak memory, what the
padding detection found, the pre-alignment's check and the failure checks' warnings.

  bench/ct_cbct.py [--threads 2] [--out DIR] [--ants] [-- extra register options]

Without extra options: `--preset ct-cbct`. `--ants` also runs ANTsPy's
registration(type_of_transform='SyN') (`pip install antspyx`, 0.6.3 measured) on the same
pair, the reference of issue 53. Outputs in --out (default ~/.cache/autoreg/ct-cbct).
Data: $AUTOREG_TEST_DATA, else ../shared/data.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import nibabel as nib
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "ct_cbct"
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))
STRUCTURES = {1: "small bowel", 2: "stomach + duodenum"}


def dice_per_structure(reference, labels):
    out = {}
    for value, name in STRUCTURES.items():
        a, b = reference == value, labels == value
        out[name] = float(2 * (a & b).sum() / max(1, a.sum() + b.sum()))
    out["mean"] = float(np.mean([out[n] for n in STRUCTURES.values()]))
    return out


def labels_of(path):
    return np.asarray(nib.load(str(path)).dataobj)


def on_grid(labels_path, reference_path):
    """A label map carried onto another grid by its header alone (nearest voxel, 0 outside):
    the contours where they stand before registration. The two grids must share their axes."""
    src, ref = nib.load(str(labels_path)), nib.load(str(reference_path))
    m = np.linalg.inv(src.affine) @ ref.affine
    if np.abs(m[:3, :3] - np.diag(np.diag(m[:3, :3]))).max() > 1e-6:
        sys.exit("ct_cbct: the two grids' axes differ; resample with autoreg apply instead")
    data = np.asarray(src.dataobj)
    index = [np.rint(m[a, a] * np.arange(ref.shape[a]) + m[a, 3]).astype(int) for a in range(3)]
    valid = [(i >= 0) & (i < data.shape[a]) for a, i in enumerate(index)]
    out = np.zeros(ref.shape, data.dtype)
    inner = data[np.ix_(*[np.clip(i, 0, data.shape[a] - 1) for a, i in enumerate(index)])]
    out[...] = inner * (valid[0][:, None, None] & valid[1][None, :, None] & valid[2][None, None, :])
    return out


def run_autoreg(out, threads, extra):
    cmd = [str(AUTOREG), "register", "--fixed", str(DATA / "cbct02.nii.gz"), "--moving", str(DATA / "planct.nii.gz"),
           "--moving-labels", str(DATA / "planct_labels.nii.gz"), "--out-labels", str(out / "labels.nii.gz"),
           "--fixed-labels", str(DATA / "cbct02_labels.nii.gz"), "--out-warped", str(out / "warped.nii.gz"),
           "--out-field", str(out / "field.nii.gz"), "--qc", str(out / "qc.png"), "--json", "--threads", str(threads)]
    cmd += extra or ["--preset", "ct-cbct"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ct_cbct: autoreg register failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    s = json.loads(r.stdout)
    return {"dice": dice_per_structure(labels_of(DATA / "cbct02_labels.nii.gz"), labels_of(out / "labels.nii.gz")),
            "seconds": s["seconds"], "peak_memory_mib": s["peak_memory_mib"],
            "folding_percent": s["non_positive_jacobian_percent"], "padding": s["settings"]["padding"],
            "pre_alignment": s["settings"]["pre_alignment"], "affine_check": s["affine_check"],
            "similarity_check": s["similarity_check"], "warnings": s["warnings"], "options": cmd[cmd.index("--threads") + 2:]}


def run_ants(out, threads):
    os.environ["ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS"] = str(threads)
    import ants  # noqa: E402 (optional)
    fixed, moving = ants.image_read(str(DATA / "cbct02.nii.gz")), ants.image_read(str(DATA / "planct.nii.gz"))
    start = time.perf_counter()
    reg = ants.registration(fixed=fixed, moving=moving, type_of_transform="SyN")
    seconds = time.perf_counter() - start
    labels = ants.apply_transforms(fixed=fixed, moving=ants.image_read(str(DATA / "planct_labels.nii.gz")),
                                   transformlist=reg["fwdtransforms"], interpolator="nearestNeighbor")
    ants.image_write(labels, str(out / "ants_labels.nii.gz"))
    return {"dice": dice_per_structure(labels_of(DATA / "cbct02_labels.nii.gz"), labels.numpy().round().astype(np.int32)),
            "seconds": seconds, "peak_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path.home() / ".cache" / "autoreg" / "ct-cbct")
    p.add_argument("--ants", action="store_true", help="also ANTsPy's SyN on the pair")
    p.add_argument("extra", nargs="*", help="options for autoreg register (after --)")
    a = p.parse_args()
    if not (DATA / "cbct02.nii.gz").exists():
        sys.exit(f"ct_cbct: no data in {DATA}")
    a.out.mkdir(parents=True, exist_ok=True)
    before = dice_per_structure(labels_of(DATA / "cbct02_labels.nii.gz"),
                                on_grid(DATA / "planct_labels.nii.gz", DATA / "cbct02_labels.nii.gz"))
    result = {"before": before, "autoreg": run_autoreg(a.out, a.threads, a.extra)}
    if a.ants:
        result["ants_syn"] = run_ants(a.out, a.threads)
    print(json.dumps(result, indent=1))
    for name in ("before", "autoreg", "ants_syn"):
        if name in result:
            r = result[name]
            d = r["dice"] if "dice" in r else r
            extra = f"  {r['seconds']:.1f} s  {r['peak_memory_mib']:.0f} MiB" if "seconds" in r else ""
            print(f"{name:9s} " + "  ".join(f"{k} {v:.3f}" for k, v in d.items()) + extra, file=sys.stderr)


if __name__ == "__main__":
    main()
