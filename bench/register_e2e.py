#!/usr/bin/env python3
"""End-to-end timing of `autoreg register` on real pairs, against elastix.

For each pair: no registration, autoreg affine only, autoreg affine + deformable
(instance optimisation), with --modes also a trained model (`model`: --model default,
`model-refine`: --model default --refine K (--refine, default 10), or a NAME given a file by
--model-files); autoreg's rows also give the folded voxels (% with det J <= 0) and the
time per stage from `register --json`)
and, when the Debian `elastix` package is installed, elastix with a standard affine +
B-spline parameter set (Mattes mutual information, 4 resolutions, adaptive stochastic
gradient descent) and transformix for the labels; with --ants, ANTsPy's
registration(type_of_transform='SyN') (`pip install antspyx`). Reports mean Dice over the pair's
labels, wall time and peak memory (of that process alone) side by side, as a Markdown
table and as JSON lines.

  bench/register_e2e.py [--pairs oasis,fs01,vxm01 | --manifest M.csv [--split test]]
                        [--modes none,affine,full] [--model-files NAME=FILE,...]
                        [--threads 2] [--out DIR] [--no-elastix] [--ants] [--labels L,...]

With --manifest, the pairs are every ordered pair (both directions) of the manifest's
subjects in --split (rows with an image and labels), scored over the labels of both
maps, and a summary per method (mean over the pairs) follows the table.

Data: $AUTOREG_TEST_DATA, else ../shared/data beside the clone.
"""
import argparse
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data"))
# AUTOREG_BIN: another build of autoreg (e.g. a copy a long run keeps while the tree is rebuilt).
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))
# The aseg labels vxm01, fs01 and fsaverage share (../shared/data/README.md).
SHARED_ASEG = "2,4,5,7,8,10,11,12,13,14,15,16,17,18,24,26,28,31,41,43,44,46,47,49,50,51,52,53,54,58,60,62,63,77,85,251,252,253,254,255"

PAIRS = {
    # name: fixed image, fixed labels, moving image, moving labels, label list, extra register options
    "oasis": ("pairs/oasisB_t1.nii.gz", "pairs/oasisB_tissue.nii.gz", "pairs/oasisA_t1.nii.gz",
              "pairs/oasisA_tissue.nii.gz", None, ["--force"]),
    "fs01": ("brains/fsaverage_t1.nii.gz", "brains/fsaverage_aseg.nii.gz", "brains/fs01_t1.nii.gz",
             "brains/fs01_aparc2009s_aseg.nii.gz", SHARED_ASEG, []),
    # vxm01's header says RAS (identity), but its voxel axes point Left, Inferior,
    # Anterior (left white matter at high i, brainstem at high j, cerebellum at low k):
    # registering it as it is would need a reflection. Corrected with
    # --moving-orientation LIA (autoreg) or a corrected copy of the header (elastix).
    "vxm01": ("brains/fsaverage_t1.nii.gz", "brains/fsaverage_aseg.nii.gz", "brains/vxm01_t1.nii.gz",
              "brains/vxm01_aseg.nii.gz", SHARED_ASEG, ["--moving-orientation", "LIA"]),
    "vxm01-header": ("brains/fsaverage_t1.nii.gz", "brains/fsaverage_aseg.nii.gz", "brains/vxm01_t1.nii.gz",
                     "brains/vxm01_aseg.nii.gz", SHARED_ASEG, []),
}
RAS = {"R": (1, 0, 0), "L": (-1, 0, 0), "A": (0, 1, 0), "P": (0, -1, 0), "S": (0, 0, 1), "I": (0, 0, -1)}


def reoriented_nifti(src, dst, code):
    """A copy of a .nii.gz whose sform says its voxel axes point as `code` (e.g. LIA),
    keeping the volume's centre: what --moving-orientation does, for tools without it."""
    data = bytearray(gzip.open(src).read())
    dims = struct.unpack("<8h", data[40:56])[1:4]
    spacing = struct.unpack("<8f", data[76:108])[1:4]
    old = [struct.unpack("<4f", data[280 + 16 * r:296 + 16 * r]) for r in range(3)]
    half = [(n - 1) / 2.0 for n in dims]
    centre = [sum(old[r][c] * half[c] for c in range(3)) + old[r][3] for r in range(3)]
    cols = [[RAS[code[c]][r] * spacing[c] for r in range(3)] for c in range(3)]
    for r in range(3):
        row = [cols[c][r] for c in range(3)]
        row.append(centre[r] - sum(cols[c][r] * half[c] for c in range(3)))
        data[280 + 16 * r:296 + 16 * r] = struct.pack("<4f", *row)
    data[252:256] = struct.pack("<hh", 0, 2)  # qform unset, sform aligned
    with gzip.open(dst, "wb", compresslevel=1) as out:
        out.write(data)
    return dst

AFFINE = """(FixedInternalImagePixelType "float")
(MovingInternalImagePixelType "float")
(UseDirectionCosines "true")
(Registration "MultiResolutionRegistration")
(Interpolator "BSplineInterpolator")
(ResampleInterpolator "FinalBSplineInterpolator")
(Resampler "DefaultResampler")
(FixedImagePyramid "FixedSmoothingImagePyramid")
(MovingImagePyramid "MovingSmoothingImagePyramid")
(Optimizer "AdaptiveStochasticGradientDescent")
(Transform "AffineTransform")
(Metric "AdvancedMattesMutualInformation")
(AutomaticScalesEstimation "true")
(AutomaticTransformInitialization "true")
(AutomaticTransformInitializationMethod "CenterOfGravity")
(HowToCombineTransforms "Compose")
(NumberOfHistogramBins 32)
(NumberOfResolutions 4)
(MaximumNumberOfIterations 250)
(NumberOfSpatialSamples 2048)
(NewSamplesEveryIteration "true")
(ImageSampler "RandomCoordinate")
(BSplineInterpolationOrder 1)
(FinalBSplineInterpolationOrder 3)
(DefaultPixelValue 0)
(WriteResultImage "false")
(ResultImagePixelType "float")
(ResultImageFormat "nii.gz")
"""

BSPLINE = AFFINE.replace('(Transform "AffineTransform")', '(Transform "BSplineTransform")\n(FinalGridSpacingInPhysicalUnits 10)') \
    .replace('(AutomaticTransformInitialization "true")\n(AutomaticTransformInitializationMethod "CenterOfGravity")\n', "") \
    .replace('(AutomaticScalesEstimation "true")\n', "") \
    .replace("(MaximumNumberOfIterations 250)", "(MaximumNumberOfIterations 500)") \
    .replace('(WriteResultImage "false")', '(WriteResultImage "true")')


def timed(cmd, log):
    """Runs cmd; returns (wall seconds, peak resident MiB of that process)."""
    start = time.monotonic()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"register_e2e: failed ({log}): {' '.join(map(str, cmd))}")
    return wall, usage.ru_maxrss / 1024.0


def dice(fixed_labels, warped_labels, labels):
    cmd = [AUTOREG, "evaluate", "--json", "--fixed-labels", fixed_labels, "--warped-labels", warped_labels]
    if labels:
        cmd += ["--labels", labels]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)["mean_dice"]


def run_autoreg(name, pair, out, threads, mode, model_files, refine):
    fixed, fixed_labels, moving, moving_labels, labels, extra = pair
    d = out / f"{name}-{mode}"
    d.mkdir(parents=True, exist_ok=True)
    options = {"none": ["--no-affine", "--iterations", "0,0"], "affine": ["--affine-only"], "full": [],
               "model": ["--model", "default"], "model-refine": ["--model", "default", "--refine", str(refine)],
               **{n: ["--model", f] for n, f in model_files.items()},
               **{n + "-refine": ["--model", f, "--refine", str(refine)] for n, f in model_files.items()}}[mode]
    cmd = [AUTOREG, "register", "--threads", str(threads), "--fixed", DATA / fixed, "--moving", DATA / moving,
           "--moving-labels", DATA / moving_labels, "--out-labels", d / "labels.nii.gz",
           "--out-warped", d / "warped.nii.gz", "--out-field", d / "field.nii.gz", "--json"] + options + extra
    for f in ("labels.nii.gz", "warped.nii.gz", "field.nii.gz"):
        (d / f).unlink(missing_ok=True)
    wall, mib = timed(cmd, d / "log.txt")
    text = (d / "log.txt").read_text()
    summary = json.loads(text[text.index("{"):text.rindex("}") + 1])
    return {"pair": name, "method": f"autoreg {mode}", "dice": dice(DATA / fixed_labels, d / "labels.nii.gz", labels),
            "seconds": wall, "peak_mib": mib, "fold_percent": summary["non_positive_jacobian_percent"],
            "stage_seconds": summary["stage_seconds"]}


def run_elastix(name, pair, out, threads):
    fixed, fixed_labels, moving, moving_labels, labels, _ = pair
    d = out / f"{name}-elastix"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    moving, moving_labels = DATA / moving, DATA / moving_labels
    extra = pair[5]
    if "--moving-orientation" in extra:
        code = extra[extra.index("--moving-orientation") + 1]
        moving = reoriented_nifti(moving, d / "moving.nii.gz", code)
        moving_labels = reoriented_nifti(moving_labels, d / "moving_labels.nii.gz", code)
    (d / "affine.txt").write_text(AFFINE)
    (d / "bspline.txt").write_text(BSPLINE)
    wall, mib = timed(["elastix", "-f", DATA / fixed, "-m", moving, "-p", d / "affine.txt",
                       "-p", d / "bspline.txt", "-out", d, "-threads", str(threads)], d / "log.txt")
    # The label map through the same transform, by nearest neighbour.
    tp = (d / "TransformParameters.1.txt").read_text()
    tp = tp.replace("(FinalBSplineInterpolationOrder 3)", "(FinalBSplineInterpolationOrder 0)") \
           .replace('(ResultImagePixelType "float")', '(ResultImagePixelType "int")')
    (d / "labels-tp.txt").write_text(tp)
    (d / "labels").mkdir()
    timed(["transformix", "-in", moving_labels, "-tp", d / "labels-tp.txt", "-out", d / "labels",
           "-threads", str(threads)], d / "labels" / "log.txt")
    return {"pair": name, "method": "elastix affine+bspline",
            "dice": dice(DATA / fixed_labels, d / "labels" / "result.nii.gz", labels),
            "seconds": wall, "peak_mib": mib}


ANTS_SYN = """
import sys, ants
fixed, moving, moving_labels, out = sys.argv[1:5]
f = ants.image_read(fixed)
reg = ants.registration(fixed=f, moving=ants.image_read(moving), type_of_transform="SyN")
labels = ants.apply_transforms(fixed=f, moving=ants.image_read(moving_labels), transformlist=reg["fwdtransforms"],
                               interpolator="genericLabel")
ants.image_write(labels, out)
"""


def run_ants(name, pair, out, threads):
    """ANTsPy's registration(type_of_transform='SyN') (its defaults: affine, then SyN with
    mutual information), the labels through its transforms; one process, so that its wall
    time and peak memory are its own."""
    fixed, fixed_labels, moving, moving_labels, labels, extra = pair
    if "--moving-orientation" in extra:
        sys.exit("register_e2e: --ants reads the headers as they are; not for pairs with --moving-orientation")
    d = out / f"{name}-ants"
    d.mkdir(parents=True, exist_ok=True)
    (d / "labels.nii.gz").unlink(missing_ok=True)
    env = dict(os.environ, ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS=str(threads))
    start = time.monotonic()
    with open(d / "log.txt", "w") as log:
        proc = subprocess.Popen([sys.executable, "-c", ANTS_SYN, DATA / fixed, DATA / moving, DATA / moving_labels,
                                 d / "labels.nii.gz"], stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"register_e2e: ANTsPy failed ({d / 'log.txt'}; pip install antspyx)")
    return {"pair": name, "method": "ANTsPy SyN", "dice": dice(DATA / fixed_labels, d / "labels.nii.gz", labels),
            "seconds": time.monotonic() - start, "peak_mib": usage.ru_maxrss / 1024.0}


def manifest_pairs(path, split, labels=None):
    """Every ordered pair of the split's labelled subjects, as PAIRS entries."""
    import csv
    path = Path(path).resolve()
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if line.strip() and not line.startswith("#"))]
    subjects = [(path.parent / r["image"], path.parent / r["labels"]) for r in rows
                if (r.get("split") or "train") == split and r.get("image") and r.get("labels")]
    if len(subjects) < 2:
        sys.exit(f"register_e2e: {path} has fewer than two labelled '{split}' subjects")
    name = lambda p: p.name.split("_")[0]
    return {f"{name(m[0])}-to-{name(f[0])}": (f[0].resolve(), f[1].resolve(), m[0].resolve(), m[1].resolve(), labels, [])
            for f in subjects for m in subjects if f != m}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default="oasis,fs01,vxm01", help="of " + ",".join(PAIRS))
    ap.add_argument("--manifest", help="pairs from a CSV manifest instead of --pairs")
    ap.add_argument("--split", default="test", help="the manifest's split to pair up (default test)")
    ap.add_argument("--modes", default="none,affine,full",
                    help="of none,affine,full,model,model-refine and the names of --model-files (NAME, NAME-refine)")
    ap.add_argument("--model-files", default="", help="NAME=FILE,...: model files to register with, as modes")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench-e2e")
    ap.add_argument("--no-elastix", action="store_true")
    ap.add_argument("--ants", action="store_true",
                    help="also ANTsPy's SyN (pip install antspyx; minutes a pair), labels by genericLabel")
    ap.add_argument("--refine", type=int, default=10, help="K of the *-refine modes (default 10)")
    ap.add_argument("--labels", help="with --manifest: score over these labels (e.g. 2,4,17) instead of both maps'")
    ap.add_argument("--skip-done", action="store_true",
                    help="skip the (pair, method) rows already in <out>.jsonl (a resumed run)")
    args = ap.parse_args()
    if not AUTOREG.exists():
        sys.exit(f"register_e2e: build first ({AUTOREG} is missing)")
    if not DATA.is_dir():
        sys.exit(f"register_e2e: no data at {DATA} (set AUTOREG_TEST_DATA)")
    elastix = shutil.which("elastix") and shutil.which("transformix") and not args.no_elastix
    if not elastix and not args.no_elastix:
        print("register_e2e: elastix not installed (apt-get install elastix): autoreg only", file=sys.stderr)
    model_files = dict(item.split("=", 1) for item in args.model_files.split(",") if item)
    out = Path(args.out)
    pairs = manifest_pairs(args.manifest, args.split, args.labels) if args.manifest else {n: PAIRS[n] for n in args.pairs.split(",")}
    rows = []
    jsonl = out.parent / (out.name + ".jsonl") if out.name else Path("bench-e2e.jsonl")
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.skip_done and jsonl.exists():
        done = {(r["pair"], r["method"]) for r in map(json.loads, open(jsonl))}
    with open(jsonl, "a") as log:
        for name, pair in pairs.items():
            jobs = [lambda m=m: run_autoreg(name, pair, out, args.threads, m, model_files, args.refine)
                    for m in args.modes.split(",") if (name, f"autoreg {m}") not in done]
            if elastix and (name, "elastix affine+bspline") not in done:
                jobs.append(lambda: run_elastix(name, pair, out, args.threads))
            if args.ants and (name, "ANTsPy SyN") not in done:
                jobs.append(lambda: run_ants(name, pair, out, args.threads))
            for job in jobs:
                row = job()
                row["threads"] = args.threads
                rows.append(row)
                log.write(json.dumps(row) + "\n")
                log.flush()
                print(f"{row['pair']:6} {row['method']:24} Dice {row['dice']:.3f}  {row['seconds']:7.1f} s  "
                      f"{row['peak_mib']:7.0f} MiB  folding {row.get('fold_percent', float('nan')):.4f} %", file=sys.stderr)
    print(f"\n| pair | method | mean Dice | wall time | peak memory |\n|---|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['pair']} | {r['method']} | {r['dice']:.3f} | {r['seconds']:.1f} s | {r['peak_mib']:.0f} MiB |")
    if len(pairs) > 1:
        print(f"\nMean over {len(pairs)} pairs:\n\n| method | mean Dice | min | max | wall time | peak memory | most folding |\n"
              "|---|---:|---:|---:|---:|---:|---:|")
        for method in dict.fromkeys(r["method"] for r in rows):
            rs = [r for r in rows if r["method"] == method]
            d = [r["dice"] for r in rs]
            fold = max((r["fold_percent"] for r in rs if "fold_percent" in r), default=None)
            print(f"| {method} | {sum(d) / len(d):.3f} | {min(d):.3f} | {max(d):.3f} | "
                  f"{sum(r['seconds'] for r in rs) / len(rs):.1f} s | {max(r['peak_mib'] for r in rs):.0f} MiB | "
                  f"{'' if fold is None else f'{fold:.4f} %'} |")
        print("\nMean seconds per stage (autoreg):\n")
        for method in dict.fromkeys(r["method"] for r in rows if "stage_seconds" in r):
            rs = [r for r in rows if r["method"] == method and "stage_seconds" in r]
            stages = dict.fromkeys(k for r in rs for k in r["stage_seconds"])
            print(f"- {method}: " + ", ".join(
                f"{k} {sum(r['stage_seconds'].get(k, 0) for r in rs) / len(rs):.2f}" for k in stages))


if __name__ == "__main__":
    main()
