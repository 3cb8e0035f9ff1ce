#!/usr/bin/env python3
"""`autoreg template` on OASIS-TRT subjects (issue 39): wall time, sharpness and labels.

    python bench/template_oasis.py --subjects 10 --out ~/.cache/autoreg/template-oasis [--threads 2]
        [--leave-one-out K] [--nproc N]

Builds the template of oasis01..N (``$AUTOREG_TEST_DATA`` or ../shared/data) with
`autoreg template` (default settings, --threads) and reports:
- wall time;
- sharpness: the mean local NCC (9³ windows) between each warped subject and the
  template, inside the brain (template > 0.1), and the template's gradient energy
  (mean squared finite difference) inside the brain;
- labels: the template's fused label map carried back to each subject by its inverse
  field, mean Dice over the subject's labels (in-sample: the subject helped build the
  template); with --leave-one-out K, for the first K subjects the template is rebuilt
  without the subject, the subject registered to it, and the labels carried back the same
  way (out-of-sample).
With --nproc N, `autoreg template --nproc N` (N ranks of --threads threads each). ANTs'
reference is bench/template_ants.py (ANTsPy's own Python). To measure another tool's
template with the same yardstick, `--fixed-template T` registers the subjects to T
(`autoreg template --initial T --template-iterations 0`: the final round alone, its
labels fused as autoreg's are) and reports the same figures for T.
"""
import argparse
import csv
import json
import os
import resource
import pathlib
import subprocess
import time

import numpy as np
import SimpleITK as sitk
import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]


def local_ncc(a, b, mask, window=9):
    x, y = (torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32))[None, None] for v in (a, b))
    h = window // 2

    def mean(t):  # the 9³ box mean (zeros beyond the border, divided by 9³), one axis at a time
        t = F.avg_pool3d(t, (window, 1, 1), 1, (h, 0, 0))
        t = F.avg_pool3d(t, (1, window, 1), 1, (0, h, 0))
        return F.avg_pool3d(t, (1, 1, window), 1, (0, 0, h))
    mx, my = mean(x), mean(y)
    cov = mean(x * y) - mx * my
    vx, vy = (mean(x * x) - mx * mx).clamp_min(1e-8), (mean(y * y) - my * my).clamp_min(1e-8)
    ncc = (cov / torch.sqrt(vx * vy))[0, 0].numpy()
    return float(ncc[mask].mean())


def gradient_energy(a, mask):
    g = [np.diff(a, axis=d, append=a.take([-1], axis=d)) ** 2 for d in range(3)]
    return float(sum(x[mask].mean() for x in g))


def dice(a, b, labels):
    out = []
    for label in labels:
        x, y = a == label, b == label
        s = x.sum() + y.sum()
        if s:
            out.append(2.0 * (x & y).sum() / s)
    return float(np.mean(out))


def run_template(images, out, threads, nproc, log, reuse=False, extra=()):
    if reuse and (out / "summary.json").exists():  # a finished run: its own measurement of itself
        return json.loads((out / "summary.json").read_text())["seconds"]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "subjects.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["image", "labels"])
        for image, labels in images:
            w.writerow([image, labels])
    start = time.perf_counter()
    subprocess.run([str(ROOT / "build" / "bin" / "autoreg"), "template", "--images", str(out / "subjects.csv"),
                    "--out", str(out), "--threads", str(threads)] + (["--nproc", str(nproc)] if nproc else []) + list(extra),
                   check=True, stderr=log)
    return time.perf_counter() - start


def labels_back_dice(template_labels, inverse_field, subject_labels):
    import autoreg

    carried = autoreg.apply(sitk.ReadImage(str(template_labels)), sitk.ReadImage(str(inverse_field)), labels=True)
    own = sitk.GetArrayFromImage(sitk.ReadImage(str(subject_labels)))
    values = [v for v in np.unique(own) if v != 0]
    return dice(sitk.GetArrayFromImage(carried), own, values)


def sharpness(out, names):
    templ = sitk.GetArrayFromImage(sitk.ReadImage(str(out / "template.nii.gz")))
    mask = templ > 0.1
    nccs = [local_ncc(sitk.GetArrayFromImage(sitk.ReadImage(str(out / f"{n}_warped.nii.gz"))), templ, mask) for n in names]
    return float(np.mean(nccs)), gradient_energy(templ, mask)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subjects", type=int, default=10)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path.home() / ".cache" / "autoreg" / "template-oasis")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--leave-one-out", type=int, default=0)
    parser.add_argument("--nproc", type=int, default=0, help="ranks (each with --threads threads); 0: one process")
    parser.add_argument("--template-iterations", type=int, help="autoreg template's --template-iterations (default: its own)")
    parser.add_argument("--fixed-template", type=pathlib.Path,
                        help="evaluate this template (another tool's) instead of building one")
    parser.add_argument("--reuse", action="store_true",
                        help="evaluate the templates already built in --out (the time: their summary.json's)")
    args = parser.parse_args()
    if args.fixed_template and args.leave_one_out:
        parser.error("--fixed-template scores a given template; it has no leave-one-out")
    torch.set_num_threads(args.threads)
    data = pathlib.Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "oasis_trt"
    subjects = [(str(data / f"oasis{i:02d}_t1.nii.gz"), str(data / f"oasis{i:02d}_labels.nii.gz"))
                for i in range(1, args.subjects + 1)]
    names = [f"oasis{i:02d}_t1" for i in range(1, args.subjects + 1)]
    results = {}
    with open(args.out.parent / "template-oasis.log", "a") if args.out.parent.exists() else open(os.devnull, "w") as log:
        extra = ["--initial", str(args.fixed_template), "--template-iterations", "0"] if args.fixed_template else []
        if args.template_iterations is not None and not args.fixed_template:
            extra += ["--template-iterations", str(args.template_iterations)]
        seconds = run_template(subjects, args.out / "all", args.threads, args.nproc, log, args.reuse, extra)
        ncc, energy = sharpness(args.out / "all", names)
        in_sample = [labels_back_dice(args.out / "all" / "template_labels.nii.gz", args.out / "all" / f"{n}_inverse.nii.gz",
                                      labels) for n, (_, labels) in zip(names, subjects)]
        results["autoreg"] = {"subjects": args.subjects, "nproc": args.nproc, "threads": args.threads, "seconds": seconds, "local_ncc": ncc, "gradient_energy": energy,
                              "dice_in_sample": float(np.mean(in_sample)), "dice_in_sample_each": in_sample,
                              # the largest process's peak (a rank's, with --nproc; 0 with --reuse)
                              "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}
        print(json.dumps(results["autoreg"]), flush=True)
        loo = []
        for k in range(args.leave_one_out):
            held = subjects[k]
            others = subjects[:k] + subjects[k + 1:]
            out = args.out / f"without_{k + 1:02d}"
            run_template(others, out, args.threads, args.nproc, log, args.reuse, extra)
            # the held-out subject registered to that template (as the final round does)
            import autoreg

            r = autoreg.register(sitk.ReadImage(str(out / "template.nii.gz")), sitk.ReadImage(held[0]), inverse=True,
                                 threads=args.threads)
            sitk.WriteImage(r.inverse, str(out / "held_out_inverse.nii.gz"))
            loo.append(labels_back_dice(out / "template_labels.nii.gz", out / "held_out_inverse.nii.gz", held[1]))
            print(json.dumps({"leave_one_out": k + 1, "dice": loo[-1]}), flush=True)
        if loo:
            results["autoreg"]["dice_leave_one_out"] = float(np.mean(loo))
            results["autoreg"]["dice_leave_one_out_each"] = loo
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
