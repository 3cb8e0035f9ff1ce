#!/usr/bin/env python3
"""The adaptation study (docs/adaptation.md, issue 28): the
default model on target domains that differ from its training set (OASIS-TRT T1) as
scanners and protocols do, unadapted and adapted from K of each domain's scans.

Domains (made here, under --work, from ../shared/data; labels used only for scoring and
for picking the best step on the validation subjects):
  clinical  OASIS-TRT 01-10 as a clinical scanner gives them: 5 mm axial slices, a bias
            field, Rician noise (bench/make_domain.cpp), on their label maps' grid
  t2like    OASIS-TRT 01-10 in another contrast: a non-monotonic intensity map of the T1
            (CSF bright, white matter dark, as a T2; from intensities alone)
  brains    the FreeSurfer-processed brains of brains/ (another source, another
            intensity scale): fsaverage adapts (K = 1), fs01 <-> vxm01 are scored over
            the 40 aseg labels they share (vxm01's header corrected to LIA, as
            register_e2e.py does)

In the OASIS domains the K adaptation scans are subjects 01..K (unlabelled rows), the
validation pair 06 <-> 07 picks the best step, and --split test scores every ordered
pair of 08, 09, 10 (--split val: of 06, 07, for choosing settings). Methods: ftm and
finetune (`autoreg adapt`, same scans, steps and objective), scratch (`autoreg train` on
the same K scans with the default model's genotype and objective), each scored with
`register --model` and `--refine 10`, beside the unadapted default model and instance
optimisation (bench/register_e2e.py). Runs are kept and resumed under --work.

  bench/adapt_study.py [--work DIR] [--domains clinical,t2like,brains] [--ks 1,3,5]
                       [--methods ftm,finetune] [--steps 200] [--scratch-steps 500]
                       [--split test] [--threads 2] [--refine-ks 3] [--no-score] [--summary]
                       [--base noisy.autoreg --base-name noisy]   (adapt another model)
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import register_e2e as e2e  # noqa: E402

ROOT = HERE.parent
BIN = ROOT / "build" / "bin"
MAKE_DOMAIN = Path(os.environ.get("AUTOREG_MAKE_DOMAIN", BIN / "autoreg_make_domain"))
AUTOREG = e2e.AUTOREG
DATA = e2e.DATA
DEFAULT_MODEL = ROOT / "models" / "default.autoreg"


def run(cmd, log):
    start = time.monotonic()
    with open(log, "a") as out:
        out.write("$ " + " ".join(map(str, cmd)) + "\n")
        out.flush()
        code = subprocess.call(list(map(str, cmd)), stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        sys.exit(f"adapt_study: failed ({log}): {' '.join(map(str, cmd))}")
    return time.monotonic() - start


def oasis(i):
    return DATA / "oasis_trt" / f"oasis{i:02d}_t1.nii.gz", DATA / "oasis_trt" / f"oasis{i:02d}_labels.nii.gz"


def make_domain(name, work):
    """Writes the domain's images; returns {subject: (image, labels)}."""
    d = work / "data" / name
    d.mkdir(parents=True, exist_ok=True)
    subjects = {}
    if name == "brains":
        b = DATA / "brains"
        subjects["fsaverage"] = (b / "fsaverage_t1.nii.gz", b / "fsaverage_aseg.nii.gz")
        subjects["fs01"] = (b / "fs01_t1.nii.gz", b / "fs01_aparc2009s_aseg.nii.gz")
        img, lab = d / "vxm01_t1.nii.gz", d / "vxm01_aseg.nii.gz"
        if not lab.exists():
            e2e.reoriented_nifti(b / "vxm01_t1.nii.gz", img, "LIA")
            e2e.reoriented_nifti(b / "vxm01_aseg.nii.gz", lab, "LIA")
        subjects["vxm01"] = (img, lab)
        return subjects
    for i in range(1, 11):
        t1, labels = oasis(i)
        out = d / f"oasis{i:02d}_{name}.nii.gz"
        if not out.exists():
            run([MAKE_DOMAIN, name, t1, out, i], work / "make_domain.log")
        subjects[f"oasis{i:02d}"] = (out, labels)
    return subjects


def write_csv(path, rows):
    with open(path, "w") as f:
        f.write("image,labels,split\n")
        for image, labels, split in rows:
            f.write(f"{image},{labels or ''},{split}\n")
    return path


def manifests(name, subjects, work, ks, split):
    """{K: adaptation manifest} and the scoring manifest."""
    d = work / "data" / name
    if name == "brains":
        adapt = {1: write_csv(d / "adapt-1.csv", [(subjects["fsaverage"][0], None, "train")])}
        score = write_csv(d / "score.csv", [(*subjects[s], "test") for s in ("fs01", "vxm01")])
        return adapt, score
    val = [(*subjects[f"oasis{i:02d}"], "val") for i in (6, 7)]
    adapt = {k: write_csv(d / f"adapt-{k}.csv", [(subjects[f"oasis{i:02d}"][0], None, "train")
                                                 for i in range(1, k + 1)] + val) for k in ks}
    scored = (6, 7) if split == "val" else (8, 9, 10)
    score = write_csv(d / f"score-{split}.csv", [(*subjects[f"oasis{i:02d}"], "test") for i in scored])
    return adapt, score


def header(model):
    """A model file's header fields (up to the first tensor line)."""
    fields = {}
    with open(model, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if line.startswith("tensor "):
                break
            key, _, value = line.partition(" ")
            fields[key] = value
    return fields


def default_recipe():
    """The default model's genotype, objective and grid."""
    fields = header(DEFAULT_MODEL)
    return fields["genotype"], fields["note.objective"], fields["grid"].replace(" ", "x")


def adapt_models(name, adapt, work, methods, steps, scratch_steps, threads, base=None, base_name=None):
    """Runs (or resumes) every adaptation; returns {mode name: model file}. (Scores are
    kept by (pair, method): delete a domain's scores/*.jsonl after re-making its models.)
    With a base model other than the default, ftm and finetune adapt it, its runs are
    named <base_name>-<method>-k<K>, and the base itself is scored as <base_name>."""
    runs = work / "runs" / name
    runs.mkdir(parents=True, exist_ok=True)
    models = {base_name: Path(base)} if base else {}
    prefix = f"{base_name}-" if base else ""
    genotype, objective, grid = default_recipe()
    (runs / "genotype.txt").write_text(genotype + "\n")
    for k, csv in sorted(adapt.items()):
        for method in methods:
            if base and method == "scratch":
                continue  # a scratch model has no base
            out = runs / f"{prefix}{method}-k{k}.autoreg"
            if not out.exists():
                resume = ["--resume"] if Path(str(out) + ".ckpt").exists() else []
                if method == "scratch":
                    cmd = [AUTOREG, "train", "--manifest", csv, "--out", out, "--genotype", runs / "genotype.txt",
                           "--objective", objective, "--grid", grid, "--steps", scratch_steps, "--learning-rate", "1e-3",
                           "--validation", "inline", "--validate-every", 100, "--threads", threads,
                           "--cache", runs / f"cache-k{k}"]
                else:
                    cmd = [AUTOREG, "adapt", "--model", base or DEFAULT_MODEL, "--manifest", csv, "--out", out,
                           "--method", method, "--steps", steps, "--threads", threads, "--cache", runs / f"cache-k{k}"]
                print(f"{name}: {prefix}{method} K={k} ...", flush=True)
                seconds = run(cmd + resume, runs / f"{prefix}{method}-k{k}.log")
                print(f"{name}: {prefix}{method} K={k}: {seconds:.0f} s", flush=True)
            models[f"{prefix}{method}-k{k}"] = out
    return models


def notes_of(model):
    return {k[5:]: v for k, v in header(model).items() if k.startswith("note.")}


def score(name, score_csv, models, work, threads, split, refine, refine_ks):
    out = work / "scores" / f"{name}-{split}"
    out.mkdir(parents=True, exist_ok=True)
    def refined(n):  # an adapted model's K is in refine_ks, or a base model
        k = n.rsplit("-k", 1)
        return len(k) == 1 or not k[1].isdigit() or int(k[1]) in refine_ks
    modes = ["full", "model", "model-refine"] + [m for n in models for m in (n, n + "-refine")
                                                 if m == n or refined(n)]
    cmd = [sys.executable, HERE / "register_e2e.py", "--manifest", score_csv, "--split", "test", "--modes",
           ",".join(modes), "--model-files", ",".join(f"{n}={f}" for n, f in models.items()),
           "--threads", threads, "--out", out, "--no-elastix", "--refine", refine]
    if name == "brains":
        cmd += ["--labels", e2e.SHARED_ASEG]
    run(cmd + ["--skip-done"], out / "study.log")  # what an earlier run scored is kept
    return out


def summary(work, domains, split):
    """Markdown tables of the scores: mean Dice (folding %, register seconds) per method and
    domain, and what ftm and finetune closed of the gap between the unadapted model and
    instance optimisation."""
    rows = {}
    for name in domains:
        path = work / "scores" / f"{name}-{split}.jsonl"
        if not path.exists():
            continue
        for line in open(path):
            r = json.loads(line)
            rows.setdefault(r["method"].replace("autoreg ", ""), {}).setdefault(name, []).append(r)
    names = [n for n in domains if any(n in v for v in rows.values())]
    print("| method | " + " | ".join(f"{n}: Dice (folding %, s)" for n in names) + " |")
    print("|---|" + "---:|" * len(names))
    def mean(rs, key):
        values = [r[key] for r in rs if key in r]
        return sum(values) / len(values) if values else float("nan")
    # Every mean over the same pairs: those the unadapted model was scored on; a method
    # scored on fewer says on how many.
    pairs = {n: {r["pair"] for r in rows.get("model", {}).get(n, [])} for n in names}
    for n in names:
        for by in rows.values():
            if n in by:
                by[n] = [r for r in by[n] if r["pair"] in pairs[n]]

    def cell(rs, n):
        if not rs:
            return ""
        text = f"{mean(rs, 'dice'):.3f} ({mean(rs, 'fold_percent'):.3f}, {mean(rs, 'seconds'):.1f})"
        return text + (f" [{len(rs)} of {len(pairs[n])} pairs]" if len(rs) < len(pairs[n]) else "")
    for method, by in rows.items():
        print(f"| {method} | " + " | ".join(cell(by.get(n, []), n) for n in names) + " |")
    print()
    for n in names:
        d = {m: mean(by[n], "dice") for m, by in rows.items() if len(by.get(n, [])) == len(pairs[n])}
        if "full" not in d or "model" not in d or d["full"] == d["model"]:
            continue
        gap = d["full"] - d["model"]
        closed = ", ".join(f"{m} {100 * (v - d['model']) / gap:+.0f} %" for m, v in d.items()
                           if m.split("-")[0] in ("ftm", "finetune", "scratch") and not m.endswith("refine"))
        print(f"- {n}: gap model -> instance optimisation {gap:.3f}; closed: {closed}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default=str(Path.home() / ".cache" / "autoreg" / "adapt-study"))
    ap.add_argument("--domains", default="clinical,t2like,brains")
    ap.add_argument("--ks", default="1,3,5")
    ap.add_argument("--methods", default="ftm,finetune")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--scratch-steps", type=int, default=500)
    ap.add_argument("--split", default="test", choices=["val", "test"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--refine", type=int, default=10)
    ap.add_argument("--refine-ks", default="", help="score --refine on the models of these K only (default: all)")
    ap.add_argument("--base", help="adapt this model instead of the default one (scored too; e.g. one trained "
                    "with --feature-noise)")
    ap.add_argument("--base-name", default="base", help="the name of --base's rows and runs")
    ap.add_argument("--no-score", action="store_true", help="adapt only")
    ap.add_argument("--summary", action="store_true", help="print the tables of the scores so far, run nothing")
    a = ap.parse_args()
    work = Path(a.work)
    if a.summary:
        return summary(work, a.domains.split(","), a.split)
    work.mkdir(parents=True, exist_ok=True)
    ks = [int(k) for k in a.ks.split(",")]
    methods = a.methods.split(",")
    for name in a.domains.split(","):
        subjects = make_domain(name, work)
        adapt, score_csv = manifests(name, subjects, work, ks, a.split)
        if name == "brains":
            adapt = {k: v for k, v in adapt.items() if k in ks}
        models = adapt_models(name, adapt, work, methods, a.steps, a.scratch_steps, a.threads, a.base, a.base_name)
        for n, f in models.items():
            notes = notes_of(f)
            print(f"{name} {n}: adaptation {float(notes.get('adapt_seconds', notes.get('training_seconds', 'nan'))):.0f} s, "
                  f"{notes.get('adapt_parameters', 'all')} parameters, best step {notes.get('adapt_steps', notes.get('steps'))}, "
                  f"validation Dice {notes.get('adapt_validation_dice', '-') if 'adapt_method' in notes else notes.get('validation_dice', '-')}", flush=True)
        if not a.no_score:
            out = score(name, score_csv, models, work, a.threads, a.split, a.refine,
                        [int(k) for k in a.refine_ks.split(",")] if a.refine_ks else ks)
            print(f"{name}: scores in {out}", flush=True)


if __name__ == "__main__":
    main()
