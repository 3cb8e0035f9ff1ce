#!/usr/bin/env python3
"""Multi-atlas segmentation on ../shared/data/oasis_trt, end to end (issue 15's figures).

  segment_e2e.py register --targets 06,07 --atlases 01,02,03,04,05 --out DIR [--model default] [--tag T]
      registers the atlases (but the target) onto each target once (`autoreg segment
      --out-warped-dir`, JLF), timed with its peak memory: DIR/<target>-<mode><T>/warped/atlases.csv
  segment_e2e.py fuse --out DIR --targets 06,07 [--sizes 3,5,all] [--grid]
      fuses the registered atlases of every target (`segment --registered`): majority,
      weighted and jlf at their defaults, or with --grid every setting tried when choosing
      the defaults (validation targets only)
  segment_e2e.py ants --out DIR --targets 08 --python ANTS_PYTHON
      ANTs' joint label fusion (antspyx) on the same warped atlases (5), for reference

Stdlib only; the ANTs step runs ants_jlf.py under a Python that has antspyx, outside the
product. Dice: the mean over every label of the target's own map (a label the result
misses scores 0).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AUTOREG = os.environ.get("AUTOREG", str(ROOT / "build" / "bin" / "autoreg"))
DATA = Path(os.environ.get("AUTOREG_TEST_DATA", ROOT.parent / "shared" / "data")) / "oasis_trt"


def subject(s):
    return DATA / f"oasis{s}_t1.nii.gz", DATA / f"oasis{s}_labels.nii.gz"


def timed(cmd, log):
    """Runs cmd; returns (wall seconds, peak resident MiB, stdout)."""
    start = time.monotonic()
    with open(log, "w") as err:
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err, text=True)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"segment_e2e: failed ({log}): {' '.join(map(str, cmd))}")
    return time.monotonic() - start, usage.ru_maxrss / 1024.0, out


def register(args):
    atlases = args.atlases.split(",")
    mode = "model" if args.model else "io"
    for t in args.targets.split(","):
        d = Path(args.out) / f"{t}-{mode}{args.tag}"
        d.mkdir(parents=True, exist_ok=True)
        others = [a for a in atlases if a != t]
        csv = d / "atlases.csv"
        csv.write_text("image,labels\n" + "".join(f"{i},{l}\n" for i, l in map(subject, others)))
        image, labels = subject(t)
        cmd = [AUTOREG, "segment", "--atlases", csv, "--target", image, "--target-labels", labels, "--out",
               d / "jlf.nii.gz", "--out-warped-dir", d / "warped", "--threads", args.threads, "--json"]
        if args.model:
            cmd += ["--model", args.model] + (["--refine", str(args.refine)] if args.refine else [])
        wall, peak, out = timed(cmd, d / "segment.log")
        j = json.loads(out)
        row = {"target": t, "mode": mode, "atlases": len(others), "wall_s": wall, "peak_mib": peak,
               "atlas_dice": [a["dice"] for a in j["atlases"]], "atlas_seconds": [a["seconds"] for a in j["atlases"]],
               "folding_percent": [a["non_positive_jacobian_percent"] for a in j["atlases"]], "jlf_dice": j["dice"],
               "fusion_seconds": j["fusion_seconds"]}
        (d / "register.json").write_text(json.dumps(row, indent=1))
        print(json.dumps(row), flush=True)


# The settings tried on the validation targets (--grid) when choosing the defaults.
# Voxel by voxel (no local search, no patch voting): what the settings were first chosen
# with; then the search radius and patch voting on top of β 2, α 0.1, r 2.
PER_VOXEL = ["--search-radius", "0", "--no-patch-vote", "--alpha", "0.1"]
SETTINGS = {"majority": [[]],
            "weighted": [["--power", p, "--patch-radius", r] + PER_VOXEL for p in ("1", "2", "3") for r in ("1", "2")],
            "jlf": [["--beta", b, "--patch-radius", r] + PER_VOXEL for b in ("1", "2", "4") for r in ("1", "2")]
            + [["--beta", "2", "--patch-radius", "2"] + PER_VOXEL[:-1] + [a] for a in ("0.01", "1")]
            + [["--search-radius", s, "--alpha", "0.1"] + v for s in ("1", "2", "3") for v in ([], ["--no-patch-vote"])]
            + [["--alpha", a] for a in ("0.001", "0.01")] + [["--beta", "4", "--alpha", "0.1"]]}
# Without --grid: each method at its defaults (weighted and jlf with the search and patch
# voting), and jlf voxel by voxel beside them; --methods picks some.
DEFAULTS = {"majority": [], "weighted": [], "jlf": [], "jlf-per-voxel": PER_VOXEL}


def fuse(args):
    rows = []
    for d in sorted(Path(args.out).glob("*-*")):
        t, mode = d.name.split("-", 1)
        if t not in args.targets.split(",") or not (d / "warped" / "atlases.csv").exists():
            continue
        image, labels = subject(t)
        lines = (d / "warped" / "atlases.csv").read_text().splitlines()
        for size in args.sizes.split(","):
            n = len(lines) - 1 if size == "all" else int(size)
            csv = d / "warped" / f"first{n}.csv"
            csv.write_text("\n".join(lines[: n + 1]) + "\n")
            runs = [(m, e) for m, settings in SETTINGS.items() for e in settings] if args.grid else \
                [(m, e) for m, e in DEFAULTS.items() if m in args.methods.split(",")]
            for method, extra in runs:
                cmd = [AUTOREG, "segment", "--registered", "--atlases", csv, "--target", image, "--target-labels", labels,
                       "--out", d / f"fused-{method}.nii.gz", "--fusion", method.split("-")[0], "--threads", args.threads,
                       "--json"] + extra
                wall, peak, out = timed(cmd, d / "fuse.log")
                j = json.loads(out)
                row = {"target": t, "mode": mode, "atlases": n, "method": method, "settings": " ".join(extra),
                       "dice": j["dice"], "fusion_seconds": j["fusion_seconds"], "wall_s": wall, "peak_mib": peak}
                rows.append(row)
                print(json.dumps(row), flush=True)
    with open(Path(args.out) / ("grid.jsonl" if args.grid else "fuse.jsonl"), "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def ants(args):
    for t in args.targets.split(","):
        d = Path(args.out) / f"{t}-io"
        image, labels = subject(t)
        env = dict(os.environ, ITK_GLOBAL_DEFAULT_NUMBER_OF_THREADS=args.threads, OMP_NUM_THREADS=args.threads)
        cmd = [args.python, ROOT / "bench" / "ants_jlf.py", image, labels, d / "warped" / "first5.csv", d / "ants-jlf.nii.gz"]
        start = time.monotonic()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, text=True, env=env)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"segment_e2e: ANTs failed on {t}")
        row = {"target": t, "method": "ants jlf", **json.loads(out), "wall_s": time.monotonic() - start,
               "peak_mib": usage.ru_maxrss / 1024.0}
        with open(Path(args.out) / "ants.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("step", choices=["register", "fuse", "ants"])
    p.add_argument("--out", required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--atlases", default="01,02,03,04,05")
    p.add_argument("--model", default="")
    p.add_argument("--refine", type=int, default=0)
    p.add_argument("--tag", default="", help="register: appended to the folder name (e.g. -5 for a timed 5-atlas run)")
    p.add_argument("--sizes", default="3,5,all")
    p.add_argument("--grid", action="store_true")
    p.add_argument("--methods", default="majority,weighted,jlf,jlf-per-voxel", help="fuse without --grid: which")
    p.add_argument("--threads", default="2")
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    {"register": register, "fuse": fuse, "ants": ants}[args.step](args)


if __name__ == "__main__":
    main()
