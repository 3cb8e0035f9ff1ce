#!/usr/bin/env python3
"""A stress suite of simulated clinical pairs, each with a known field, for the defaults
(`--preset auto`) and each preset: does any case end worse than no registration?

Cases (28), made from ../shared/data (or $AUTOREG_TEST_DATA):
- c01-c20: the planning CT (moving) onto a cone-beam CT simulated from it (fixed): the CT
  carried by a smooth field (knots 6-9 cm apart) or a sliding one, then seen as a CBCT
  is: padding (-1000) outside a cylinder 20-34 cm across, centred or not, covering
  40-100 % of the CT's length and shifted along it; intensities off HU (gain, offset),
  streaks from the centre, noise; bowel gas pockets added, removed and moved inside the
  bowel contour, the stomach filled differently.
- c21-c22: CBCT02 (moving) onto a CBCT of another day simulated from it (its own field,
  field of view shifted, gain and offset, gas moved).
- l23-l28: each liver subject's exhale master (moving) onto itself carried by a sliding
  field (one half moving 10, 20 or 30 mm along the other, the other still).
fixed(x) = moving(x + u(x)) up to the simulated acquisition, so the field that registers
the moving image onto the fixed one is u. Per case and configuration: the endpoint error
(mm) inside the fixed field of view and the body, before (|u|) and after, and the labels'
Dice (the moving labels carried by the result against those carried by u) before and
after; the worst case (after / before) first.

  bench/stress_suite.py [--cases c01,l23] [--configs defaults,brain,ct-cbct,breathing]
                        [--downsample 2] [--threads 2] [--out DIR] [--json FILE] [--fail-worse]

A configuration is `defaults` (no options) or a preset's name (`--preset NAME`), with
`+gas` (`--exclude-gas true`), `+nogas` (`--exclude-gas false`), `+mind`
(`--similarity mind`) or `+discrete` (`--discrete-mm 20`) added: `ct-cbct+gas`. `--select A,B,...` prints, besides the
table, the leave-one-case-out choice among those configurations: for each case held out,
the configuration with the best mean rank (by endpoint error) over the other cases, and
what the held-out case gets from it.
--downsample F resamples the CT cases in-plane by F (the tests' quick subset). Outputs
and the generated cases in --out (default ~/.cache/autoreg/stress-suite); a case already
generated there is reused. Exit 1 when a register command fails, or with --fail-worse
when a case ends worse than no registration with the defaults (the test's quick subset:
`--cases c08,c13,l24 --configs defaults --downsample 2 --fail-worse`); 77 without the
data.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_motion import sample  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data"))
AUTOREG = Path(os.environ.get("AUTOREG_BIN", ROOT / "build" / "bin" / "autoreg"))

# name: what it is, and its recipe (source, field, acquisition)
CT = dict(source="ct", smooth_mm=8, seed=1, diameter_cm=26, centre_mm=(0, 0), cover=(0.0, 1.0), gain=0.9,
          offset=-220, streaks=60, noise=20, gas="", stomach="", slide_mm=0)
CASES = {
    "c01": ("CBCT 26 cm, centred, whole length", {}),
    "c02": ("cylinder 20 cm", dict(diameter_cm=20)),
    "c03": ("cylinder 34 cm", dict(diameter_cm=34, seed=2)),
    "c04": ("off centre 40 mm left, 20 mm anterior", dict(centre_mm=(40, -20), seed=3)),
    "c05": ("40 % of the length, at the top", dict(cover=(0.0, 0.4), seed=4)),
    "c06": ("40 % of the length, in the middle", dict(cover=(0.3, 0.7), seed=5)),
    "c07": ("60 % of the length, at the bottom", dict(cover=(0.4, 1.0), seed=6)),
    "c08": ("short and shifted: 20 cm off centre by 30 mm, 50 % of the length", dict(diameter_cm=20, centre_mm=(30, 10), cover=(0.45, 0.95), seed=7)),
    "c09": ("gain 1.1, offset -100", dict(gain=1.1, offset=-100, seed=8)),
    "c10": ("gain 0.8, offset -300, noise 40", dict(gain=0.8, offset=-300, noise=40, seed=9)),
    "c11": ("strong streaks, noise 40", dict(streaks=150, noise=40, seed=10)),
    "c12": ("bowel gas added (6 pockets)", dict(gas="add", seed=11)),
    "c13": ("bowel gas removed (filled)", dict(gas="remove", seed=12)),
    "c14": ("bowel gas moved", dict(gas="move", seed=13)),
    "c15": ("stomach gas filled with fluid", dict(stomach="fill", seed=14)),
    "c16": ("stomach with a gas cap", dict(stomach="cap", seed=15)),
    "c17": ("smooth motion up to 15 mm", dict(smooth_mm=15, seed=16)),
    "c18": ("smooth motion up to 4 mm", dict(smooth_mm=4, seed=17)),
    "c19": ("organs sliding 10 mm along the body wall", dict(smooth_mm=0, slide_mm=10, seed=18)),
    "c20": ("organs sliding 20 mm along the body wall", dict(smooth_mm=0, slide_mm=20, seed=19)),
    "c21": ("CBCT02 onto another day's CBCT: field of view 20 mm lower, gain 1.05, offset +40", dict(source="cbct", gain=1.05, offset=40, streaks=30, noise=15, cover=(0.1, 1.0), seed=20)),
    "c22": ("CBCT02 onto another day's CBCT with its gas moved", dict(source="cbct", gain=1.0, offset=0, streaks=30, noise=15, gas="move", seed=21)),
    "l23": ("liver dataset18, 10 mm sliding", dict(source="liver", subject="dataset18", slide_mm=10)),
    "l24": ("liver dataset18, 20 mm sliding", dict(source="liver", subject="dataset18", slide_mm=20)),
    "l25": ("liver dataset18, 30 mm sliding", dict(source="liver", subject="dataset18", slide_mm=30)),
    "l26": ("liver dataset19, 10 mm sliding", dict(source="liver", subject="dataset19", slide_mm=10)),
    "l27": ("liver dataset19, 20 mm sliding", dict(source="liver", subject="dataset19", slide_mm=20)),
    "l28": ("liver dataset19, 30 mm sliding", dict(source="liver", subject="dataset19", slide_mm=30)),
}


EXTRAS = {"gas": ["--exclude-gas", "true"], "nogas": ["--exclude-gas", "false"], "mind": ["--similarity", "mind"],
          "discrete": ["--discrete-mm", "20"], "noreg": ["--regularization", "0", "--learning-rate", "2"],
          "levels3": ["--iterations", "70,70,20"], "levels4": ["--iterations", "70,70,70,20"], "tv": ["--regularizer", "tv"]}


def smooth_field(shape, spacing, max_mm, seed):
    g = torch.Generator().manual_seed(seed)
    coarse = torch.rand((1, 3, 4, 6, 6), generator=g) * 2 - 1  # knots about 6-9 cm apart
    field = torch.nn.functional.interpolate(coarse, size=shape, mode="trilinear", align_corners=True)[0].numpy()
    for c in range(3):
        field[c] *= max_mm / spacing[c]
    return field


def box_blur(x, radius):
    """Mean over a box of 2r+1 voxels along each axis (separable), same shape."""
    t = torch.from_numpy(np.asarray(x, np.float32))[None, None]
    for axis, r in enumerate(radius):
        if r < 1:
            continue
        k = [1, 1, 1]
        k[axis] = 2 * r + 1
        pad = [0, 0, 0]
        pad[axis] = r
        t = torch.nn.functional.avg_pool3d(t, k, stride=1, padding=pad, count_include_pad=False)
    return t[0, 0].numpy()


def sliding_in_body(body, spacing, amplitude_mm):
    """Organs inside the body (more than ~2 cm from its wall) moving along the slices'
    axis (superior-inferior), the wall still: a sliding field with a soft edge."""
    inner = box_blur(body.astype(np.float32), [max(1, round(20 / s)) for s in spacing]) > 0.97
    weight = box_blur(inner.astype(np.float32), [max(1, round(4 / s)) for s in spacing])
    u = np.zeros((3,) + body.shape, np.float32)
    u[0] = weight * amplitude_mm / spacing[0]
    return u


def liver_sliding(shape, spacing, amplitude_mm):
    d, h, w = shape
    x = (np.arange(w) - w / 2) * spacing[2]
    weight = 1 / (1 + np.exp(x / 1.0))
    u = np.zeros((3, d, h, w), np.float32)
    u[1] = (amplitude_mm / spacing[1]) * weight[None, None, :]
    return u


def spheres(mask, count, radius_mm, spacing, rng):
    """`count` balls of about `radius_mm` centred on random voxels of `mask`."""
    out = np.zeros(mask.shape, bool)
    where = np.argwhere(mask)
    if len(where) == 0:
        return out
    grid = np.indices(mask.shape, dtype=np.float32)
    for c in where[rng.choice(len(where), size=min(count, len(where)), replace=False)]:
        r = radius_mm * rng.uniform(0.6, 1.2)
        lo = [max(0, int(c[a] - r / spacing[a] - 1)) for a in range(3)]
        hi = [min(mask.shape[a], int(c[a] + r / spacing[a] + 2)) for a in range(3)]
        sl = tuple(slice(lo[a], hi[a]) for a in range(3))
        dist = sum(((grid[a][sl] - c[a]) * spacing[a]) ** 2 for a in range(3))
        out[sl] |= dist <= r * r
    return out


def read(path, kind=sitk.sitkFloat32):
    image = sitk.ReadImage(str(path), kind)
    return image, sitk.GetArrayFromImage(image)


def downsampled(image, factor, labels=False):
    if factor == 1:
        return image
    size = [max(1, s // factor) if a < 2 else s for a, s in enumerate(image.GetSize())]
    spacing = [sp * image.GetSize()[a] / size[a] for a, sp in enumerate(image.GetSpacing())]
    origin = image.TransformContinuousIndexToPhysicalPoint([(factor - 1) / 2 if a < 2 else 0 for a in range(3)])
    return sitk.Resample(image, size, sitk.Transform(), sitk.sitkNearestNeighbor if labels else sitk.sitkLinear, origin,
                         spacing, image.GetDirection(), -1000 if not labels else 0, image.GetPixelID())


def make_case(name, out, factor):
    """Writes the case's fixed, moving, labels and truth into out/name/ and returns their paths."""
    what, recipe = CASES[name]
    r = dict(CT, **recipe)
    folder = out / f"{name}-x{factor}"
    done = folder / "case.json"
    if done.exists():
        return json.loads(done.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(r["seed"])
    if r["source"] == "liver":
        L = DATA / "liver" / r["subject"]
        image, vol = read(L / "exhMaster_unmasked.force_direction.mha")
        spacing = image.GetSpacing()[::-1]
        u = liver_sliding(vol.shape, spacing, r["slide_mm"])
        fixed = sample(vol, u)
        labels = None
        body = fixed > 0.1 * np.percentile(vol, 99)
        moving_file = L / "exhMaster_unmasked.force_direction.mha"
        fov = np.ones(vol.shape, bool)
    else:
        src = "planct" if r["source"] == "ct" else "cbct02"
        image, vol = read(DATA / "ct_cbct" / f"{src}.nii.gz")
        label_image = sitk.ReadImage(str(DATA / "ct_cbct" / f"{src}_labels.nii.gz"))
        image, label_image = downsampled(image, factor), downsampled(label_image, factor, labels=True)
        vol = sitk.GetArrayFromImage(image)
        lab = sitk.GetArrayFromImage(label_image).astype(np.float32)
        moving_file = folder / "moving.nii.gz"
        sitk.WriteImage(sitk.Cast(image, sitk.sitkInt16), str(moving_file))
        labels_file = folder / "moving_labels.nii.gz"
        sitk.WriteImage(label_image, str(labels_file))
        spacing = image.GetSpacing()[::-1]
        source_fov = vol > -1000 if src == "cbct02" else np.ones(vol.shape, bool)
        u = np.zeros((3,) + vol.shape, np.float32)
        if r["smooth_mm"]:
            u += smooth_field(vol.shape, spacing, r["smooth_mm"], r["seed"])
        if r["slide_mm"]:
            u += sliding_in_body(vol > (-500 if src == "planct" else -700), spacing, r["slide_mm"])
        fixed = sample(vol, u)
        carried = sample(lab, u, "nearest").round()
        soft = 30 if src == "planct" else -180
        bowel = carried == 1
        if r["gas"] in ("remove", "move"):
            fixed = np.where(bowel & (fixed < -400), soft + rng.normal(0, 15, fixed.shape), fixed)
        if r["gas"] in ("add", "move"):
            fixed = np.where(spheres(bowel, 6, 10, spacing, rng) & bowel, -1000, fixed)
        stomach = carried == 2
        if r["stomach"] == "fill":
            fixed = np.where(stomach & (fixed < -400), 10 + rng.normal(0, 10, fixed.shape), fixed)
        if r["stomach"] == "cap" and stomach.any():
            ys = np.argwhere(stomach)[:, 1]
            fixed = np.where(stomach & (np.arange(vol.shape[1])[None, :, None] < np.percentile(ys, 35)), -1000, fixed)
        d, h, w = vol.shape
        y = (np.arange(h) - (h - 1) / 2)[:, None] * spacing[1] - r["centre_mm"][1]
        x = (np.arange(w) - (w - 1) / 2)[None, :] * spacing[2] - r["centre_mm"][0]
        cylinder = (x * x + y * y) <= (r["diameter_cm"] * 5.0) ** 2
        z = np.arange(d)
        first, last = int(round(r["cover"][0] * d)), int(round(r["cover"][1] * d))
        fov = cylinder[None] & ((z >= first) & (z < last))[:, None, None] & (sample(source_fov.astype(np.float32), u, "nearest") > 0.5)
        angle = np.arctan2(y, x)
        streaks = r["streaks"] * np.sin(24 * angle) * np.exp(-np.sqrt(x * x + y * y) / 80)
        cbct = r["gain"] * fixed + r["offset"] + streaks[None] + rng.normal(0, r["noise"], fixed.shape)
        fixed = np.where(fov, np.clip(cbct, -999, None), -1000).round()
        body = fov & (sample(vol, u) > (-500 if src == "planct" else -700))
        labels = carried
    fixed_image = sitk.GetImageFromArray(fixed.astype(np.float32 if r["source"] == "liver" else np.int16))
    fixed_image.CopyInformation(image)
    fixed_file = folder / "fixed.nii.gz"
    sitk.WriteImage(fixed_image, str(fixed_file))
    np.save(folder / "truth.npy", np.stack([u[2] * spacing[2], u[1] * spacing[1], u[0] * spacing[0]], -1).astype(np.float32))
    np.save(folder / "scored.npy", body & fov)
    case = {"name": name, "what": what, "fixed": str(fixed_file), "moving": str(moving_file)}
    if labels is not None:
        np.save(folder / "truth_labels.npy", labels.astype(np.int16))
        case["moving_labels"] = str(folder / "moving_labels.nii.gz")
    done.write_text(json.dumps(case))
    return case


def dice(a, b, values):
    return float(np.mean([2 * ((a == v) & (b == v)).sum() / max(1, (a == v).sum() + (b == v).sum()) for v in values]))


def run_case(case, config, threads):
    folder = Path(case["fixed"]).parent
    work = folder / config
    work.mkdir(exist_ok=True)
    cmd = [str(AUTOREG), "register", "--fixed", case["fixed"], "--moving", case["moving"], "--out-field",
           str(work / "field.nii.gz"), "--out-warped", str(work / "warped.nii.gz"), "--json", "--threads", str(threads),
           "--force"]
    if "moving_labels" in case:
        cmd += ["--moving-labels", case["moving_labels"], "--out-labels", str(work / "labels.nii.gz")]
    preset, *extras = config.split("+")
    if preset != "defaults":
        cmd += ["--preset", preset]
    for extra in extras:
        cmd += EXTRAS[extra]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    seconds = time.monotonic() - start
    if p.returncode != 0:
        return {"case": case["name"], "config": config, "failed": p.stderr.strip()[-400:]}
    s = json.loads(p.stdout)
    truth = np.load(folder / "truth.npy")
    scored = np.load(folder / "scored.npy")
    field = sitk.GetArrayFromImage(sitk.ReadImage(str(work / "field.nii.gz")))
    row = {"case": case["name"], "config": config, "what": case["what"],
           "epe_before": float(np.linalg.norm(truth, axis=-1)[scored].mean()),
           "epe_after": float(np.linalg.norm(field - truth, axis=-1)[scored].mean()), "seconds": seconds,
           "preset": (s.get("preset_choice") or {}).get("name", s["settings"].get("preset")),
           "pre_alignment": s["settings"]["pre_alignment"], "affine_kept": (s.get("affine_check") or {}).get("kept"),
           "warnings": [w["check"] for w in s["warnings"]],
           "nmi": [(s.get("second_opinion") or {}).get(k) for k in ("before", "after")]}
    if "moving_labels" in case:
        truth_labels = np.load(folder / "truth_labels.npy")
        moved = sitk.GetArrayFromImage(sitk.ReadImage(str(work / "labels.nii.gz")))
        start_labels = sitk.GetArrayFromImage(sitk.ReadImage(case["moving_labels"]))
        row["dice_before"] = dice(start_labels, truth_labels, (1, 2))
        row["dice_after"] = dice(moved, truth_labels, (1, 2))
    return row


def table(rows):
    done = [r for r in rows if "failed" not in r]
    done.sort(key=lambda r: -r["epe_after"] / max(1e-6, r["epe_before"]))
    lines = ["| case | configuration | preset run | pre-alignment | endpoint error before → after (mm) | Dice before → after | "
             "mutual information before → after | time | warnings |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in done:
        d = f"{r['dice_before']:.3f} → {r['dice_after']:.3f}" if "dice_before" in r else ""
        worse = " **worse**" if r["epe_after"] > r["epe_before"] else ""
        nmi = r.get("nmi") or [None, None]
        mi = f"{nmi[0]:.3f} → {nmi[1]:.3f}" if None not in nmi else ""
        lines.append(f"| {r['case']} {r['what']} | {r['config']} | {r['preset']} | {r['pre_alignment']} ({r['affine_kept']}) | "
                     f"{r['epe_before']:.2f} → {r['epe_after']:.2f}{worse} | {d} | {mi} | {r['seconds']:.1f} s | {','.join(r['warnings'])} |")
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['case']} | {r['config']} | FAILED: {r['failed']} | | | | | |")
    return "\n".join(lines)


def summary(rows):
    out = []
    for config in dict.fromkeys(r["config"] for r in rows):
        done = [r for r in rows if r["config"] == config and "failed" not in r]
        if not done:
            continue
        ratio = [r["epe_after"] / max(1e-6, r["epe_before"]) for r in done]
        worse = [r["case"] for r in done if r["epe_after"] > r["epe_before"]]
        out.append(f"{config}: {len(done)} cases, median endpoint error {np.median([r['epe_before'] for r in done]):.2f} → "
                   f"{np.median([r['epe_after'] for r in done]):.2f} mm (median ratio {np.median(ratio):.2f}), worse than "
                   f"no registration: {len(worse)} {worse if worse else ''}, median time {np.median([r['seconds'] for r in done]):.1f} s")
    return "\n".join(out)


def leave_one_out(rows, configs):
    """For each case held out: the configuration of `configs` with the best mean rank
    (endpoint error) over the other cases, and the held-out case's error with it."""
    by = {}
    for r in rows:
        if "failed" not in r and r["config"] in configs:
            by.setdefault(r["case"], {})[r["config"]] = r["epe_after"]
    cases = [c for c, v in by.items() if len(v) == len(configs)]
    ranks = {c: {k: sorted(by[c].values()).index(by[c][k]) for k in configs} for c in cases}
    lines, chosen = [], {}
    for held in cases:
        mean = {k: np.mean([ranks[c][k] for c in cases if c != held]) for k in configs}
        pick = min(configs, key=lambda k: (mean[k], configs.index(k)))
        chosen[pick] = chosen.get(pick, 0) + 1
        lines.append(f"{held}: {pick} ({by[held][pick]:.2f} mm; best here {min(by[held].values()):.2f})")
    return f"leave-one-case-out over {len(cases)} cases, chosen: {chosen}\n" + "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--configs", default="defaults,brain,ct-cbct,breathing")
    p.add_argument("--downsample", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path.home() / ".cache" / "autoreg" / "stress-suite")
    p.add_argument("--json", type=Path, help="also write every row here (JSON lines)")
    p.add_argument("--select", help="configurations to choose among, leave-one-case-out")
    p.add_argument("--rows", type=Path, help="add the rows of an earlier run's --json file (not run again)")
    p.add_argument("--fail-worse", action="store_true", help="exit 1 when a case ends worse than it started with the defaults")
    a = p.parse_args()
    if not (DATA / "ct_cbct" / "planct.nii.gz").exists() or not (DATA / "liver" / "dataset18").is_dir():
        print(f"stress_suite: no data in {DATA}; skipped", file=sys.stderr)
        return 77
    unknown = [c for c in a.cases.split(",") if c and c not in CASES]
    if unknown:
        sys.exit(f"stress_suite: unknown cases {unknown} (known: {', '.join(CASES)})")
    a.out.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in a.rows.read_text().splitlines()] if a.rows else []
    for name in [c for c in a.cases.split(",") if c]:
        case = make_case(name, a.out, a.downsample)
        for config in a.configs.split(","):
            row = run_case(case, config, a.threads)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
    print(table(rows))
    print()
    print(summary(rows))
    if a.select:
        print()
        print(leave_one_out(rows, a.select.split(",")))
    worse = [r["case"] for r in rows if r["config"] == "defaults" and "failed" not in r and r["epe_after"] > r["epe_before"]]
    if a.fail_worse and worse:
        print(f"stress_suite: with the defaults {', '.join(worse)} end worse than no registration", file=sys.stderr)
        return 1
    return 1 if any("failed" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
