#!/usr/bin/env python3
"""The radiotherapy path judged by plastimatch (Debian's `plastimatch`, the field's open
registration and RTSTRUCT tool) on ../shared/data/ct_cbct/dicom: the planning CT's expert
RT Structure Set carried onto CBCT02's series by `autoreg register --moving-contours
--out-contours`, then
  - the written structure set and CBCT02's own rasterised by plastimatch (`plastimatch
    convert --input RS --referenced-ct SERIES`), each carried structure's Dice against
    the expert's; the same figure from the label-map path (the planning structures as
    plastimatch rasterises them, carried by the same registration with --moving-labels,
    against plastimatch's CBCT02 masks), which must agree within 0.02;
  - round trip: the planning structures as autoreg fills them (autoreg.read_contours)
    against plastimatch's filling of the same file (Dice);
  - the time the contours add over the plain registration (the `contours` stage of
    --json's stage_seconds, and the whole command's wall time with and without them).

  bench/rtstruct_plastimatch.py [--threads 2] [--out DIR]

Outputs in --out (default ~/.cache/autoreg/rtstruct-plastimatch); prints a table.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import SimpleITK as sitk

ROOT = Path(__file__).resolve().parent.parent
DICOM = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "ct_cbct" / "dicom"
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))
PAIRS = {"Bowel_sm_planCT": "Bowel_sm_CBCT", "Stomach_duo_planCT": "Stomach_duo_CBCT", "LUNG_L": "LUNG_L",
         "LUNG_R": "LUNG_R"}


def plastimatch_masks(rtstruct, series, out):
    """Each structure of `rtstruct` as plastimatch fills it on `series`: name -> bool [k, j, i]."""
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run(["plastimatch", "convert", "--input", str(rtstruct), "--referenced-ct", str(series),
                    "--output-prefix", str(out)], check=True, capture_output=True)
    return {p.stem: sitk.GetArrayFromImage(sitk.ReadImage(str(p))) > 0 for p in sorted(Path(out).glob("*.mha"))}


def dice(a, b):
    return float(2 * np.logical_and(a, b).sum() / max(1, a.sum() + b.sum()))


def register(out, threads, *extra):
    start = time.perf_counter()
    r = subprocess.run([str(AUTOREG), "register", "--fixed", str(DICOM / "cbct02"), "--moving", str(DICOM / "planct"),
                        "--threads", str(threads), "--json", *map(str, extra)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"autoreg register failed: {r.stderr}")
    return json.loads(r.stdout), time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path.home() / ".cache" / "autoreg" / "rtstruct-plastimatch")
    args = parser.parse_args()
    if shutil.which("plastimatch") is None:
        sys.exit("no plastimatch (apt-get install plastimatch)")
    if not (DICOM / "planct_rtstruct.dcm").exists():
        sys.exit(f"no data in {DICOM}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    planct_pm = plastimatch_masks(DICOM / "planct_rtstruct.dcm", DICOM / "planct", out / "pm_planct")
    cbct_pm = plastimatch_masks(DICOM / "cbct02_rtstruct.dcm", DICOM / "cbct02", out / "pm_cbct02")
    # The label-map path's input: plastimatch's planning masks as one label map.
    grid = sitk.ReadImage(str(next((out / "pm_planct").glob("*.mha"))))
    labels = np.zeros(grid.GetSize()[::-1], np.int16)
    for value, name in enumerate(PAIRS, 1):
        labels[planct_pm[name]] = value
    image = sitk.GetImageFromArray(labels)
    image.CopyInformation(grid)
    sitk.WriteImage(image, str(out / "planct_labels_pm.nii.gz"))

    plain, plain_wall = register(out, args.threads, "--out-field", out / "plain_field.nii.gz")
    for f in ("rs_on_cbct02.dcm", "labels_on_cbct02.nii.gz"):
        (out / f).unlink(missing_ok=True)
    carried, carried_wall = register(out, args.threads, "--moving-contours", DICOM / "planct_rtstruct.dcm",
                                     "--fixed-contours", DICOM / "cbct02_rtstruct.dcm", "--out-contours",
                                     out / "rs_on_cbct02.dcm", "--moving-labels", out / "planct_labels_pm.nii.gz",
                                     "--out-labels", out / "labels_on_cbct02.nii.gz", "--force")
    ours_pm = plastimatch_masks(out / "rs_on_cbct02.dcm", DICOM / "cbct02", out / "pm_ours")
    label_path = sitk.GetArrayFromImage(sitk.ReadImage(str(out / "labels_on_cbct02.nii.gz")))
    summary = {s["name"]: s for s in carried["contours"]["structures"]}

    import autoreg
    filled = autoreg.read_contours(DICOM / "planct_rtstruct.dcm", DICOM / "planct")
    print(f"{'structure':22s} {'before':>7s} {'RTSTRUCT (plastimatch)':>23s} {'label map':>10s} {'diff':>6s} "
          f"{'autoreg own':>11s} {'fill vs plastimatch':>20s}")
    rows = []
    for value, (name, fixed_name) in enumerate(PAIRS.items(), 1):
        expert = cbct_pm[fixed_name]
        by_rtstruct = dice(ours_pm[name], expert)
        by_labels = dice(label_path == value, expert)
        fill = dice(filled[name].mask, planct_pm[name])
        s = summary[name]
        rows.append({"structure": name, "dice_before": s.get("dice_before"), "dice_rtstruct_plastimatch": by_rtstruct,
                     "dice_label_map_path": by_labels, "dice_autoreg": s.get("dice"), "fill_agreement": fill})
        print(f"{name:22s} {s.get('dice_before', float('nan')):7.3f} {by_rtstruct:23.3f} {by_labels:10.3f} "
              f"{by_rtstruct - by_labels:+6.3f} {s.get('dice', float('nan')):11.3f} {fill:20.3f}")
    stages = carried.get("stage_seconds", {})
    timing = {"plain_wall_s": plain_wall, "with_contours_wall_s": carried_wall, "contours_stage_s": stages.get("contours"),
              "plain_registration_s": plain["seconds"], "with_contours_registration_s": carried["seconds"]}
    print(f"time: plain {plain_wall:.1f} s, with contours {carried_wall:.1f} s (the label map and its Dice too); "
          f"the contours stage {stages.get('contours', float('nan')):.2f} s")
    (out / "report.json").write_text(json.dumps({"structures": rows, "time": timing}, indent=2))
    worst = max(abs(r["dice_rtstruct_plastimatch"] - r["dice_label_map_path"]) for r in rows)
    return 0 if worst <= 0.02 else 1


if __name__ == "__main__":
    sys.exit(main())
