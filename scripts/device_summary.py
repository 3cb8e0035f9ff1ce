#!/usr/bin/env python3
"""The device check's summary (scripts/device-check.sh): reads what its steps left
(BUILD/steps.jsonl, BUILD/gtest/*.json, OUT/measure.json, OUT/train.json) and writes
OUT/summary.md (the tables), OUT/summary.json (everything) and OUT/tests.json (every
CUDA test's result). Standard library only: it runs on the GPU machine's python3.

    python3 scripts/device_summary.py --build BUILD --out OUT [--rehearse]

It is the one judge of the run (device-check.sh exits with its verdict): what failed is
listed in summary.md's Result line and summary.json's "failures" ("ok" is true when none
did), and it exits 0 when nothing failed, 1 when something did (after writing every
file). Failed: a step that exited non-zero (or none recorded at all), a CUDA test binary
without a report (crashed or not built), a failed CUDA test, every CUDA test skipped, a
measurement row with an error.
"""
import argparse
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def steps(build):
    out = []
    try:
        with open(os.path.join(build, "steps.jsonl")) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


# The test binaries device-check.sh runs: one without a report crashed or was not built.
BINARIES = ("autoreg_ops_tests", "autoreg_search_tests", "autoreg_parallel_tests")


def tests(build):
    cases = []
    for binary in BINARIES:
        path = os.path.join(build, "gtest", binary + ".json")
        report = load(path)
        if not report:
            cases.append({"binary": binary, "name": "(no report: crashed or not built)", "result": "failed"})
            continue
        for suite in report.get("testsuites", []):
            for t in suite.get("testsuite", []):
                if t.get("failures"):
                    result = "failed"
                elif t.get("result") == "SKIPPED" or t.get("status") == "NOTRUN":
                    result = "skipped"
                else:
                    result = "passed"
                cases.append({"binary": os.path.basename(path)[:-5], "name": f"{suite['name']}.{t['name']}",
                              "result": result, "seconds": float(str(t.get("time", "0")).rstrip("s") or 0),
                              "failure": "\n".join(f.get("failure", "") for f in t.get("failures", []))[:2000]})
    return cases


def failures(done, cases, counts, measure):
    """What failed, one line each: the summary's verdict (empty when everything passed)."""
    out = [f"step {s.get('step', '?')} (exit {s.get('exit', '?')})" for s in done if not s.get("ok")]
    if not done:
        out.append("no step recorded (BUILD/steps.jsonl missing or empty)")
    out += [f"test {c['binary']} {c['name']}" for c in cases if c["result"] == "failed"]
    if not counts["passed"] and not counts["failed"]:
        out.append("no CUDA test passed (all skipped)")
    out += [f"measurement {r.get('name', '?')}: {str(r['error'])[:120]}"
            for r in (measure or {}).get("rows", []) if "error" in r]
    return out


def seconds_text(s):
    return f"{s * 1000:.1f} ms" if s < 1 else f"{s:.2f} s"


def measurement_rows(measure):
    rows = {r["name"]: r for r in (measure or {}).get("rows", [])}
    # The paper's figures are at 160x192x224: a rehearsal's small sizes are not compared.
    paper_size = (measure or {}).get("size") == [160, 192, 224]
    lines = []
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error'][:120]} | | |")
            continue
        if "seconds" not in r:  # reading an input: listed only when it failed
            continue
        ref = ""
        if name.startswith("warp_"):
            other = rows.get(name.replace("warp_", "grid_sample_", 1))
            if other and "seconds" in other:
                ref = f"grid_sample {seconds_text(other['seconds'])}: {other['seconds'] / r['seconds']:.2f}x faster"
        elif "paper_seconds" in r and paper_size:
            ref = f"paper {r['paper_seconds']:.3f} s: {r['paper_seconds'] / r['seconds']:.2f}x faster"
        lines.append(f"| {name} | {seconds_text(r['seconds'])} | {r['peak_mib']:.0f} | {ref} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rehearse", action="store_true")
    args = ap.parse_args()
    done = steps(args.build)
    cases = tests(args.build)
    measure = load(os.path.join(args.out, "measure.json"))
    train = load(os.path.join(args.out, "train.json"))
    counts = {k: sum(c["result"] == k for c in cases) for k in ("passed", "failed", "skipped")}
    failed = failures(done, cases, counts, measure)

    md = [f"# autoreg device check{' (rehearsal, CPU)' if args.rehearse else ''}", ""]
    if failed:
        shown = failed if len(failed) <= 12 else failed[:10] + [f"{len(failed) - 10} more (summary.json)"]
        md += [f"Result: FAILED, {len(failed)} failure{'s' if len(failed) > 1 else ''}: " + "; ".join(shown) + ".", ""]
    else:
        md += [f"Result: passed: every step ({len(done)}), {counts['passed']} CUDA tests passed"
               f"{'' if train else ' (no training: no time left of the budget)'}.", ""]
    if measure:
        md += [f"Device: {measure.get('device')}; sizes {'x'.join(map(str, measure.get('size', [])))}; "
               f"{measure.get('threads')} CPU threads.", ""]
    md += ["| step | result | seconds |", "|---|---|---:|"]
    md += [f"| {s['step']} | {'ok' if s['ok'] else 'FAILED'} | {s['seconds']:.0f} |" for s in done]
    md += ["", f"CUDA tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped.", ""]
    for c in cases:
        if c["result"] == "failed":
            md += [f"- FAILED {c['binary']} {c['name']}: {c.get('failure', '').splitlines()[0] if c.get('failure') else ''}"]
    md += ["", "| measurement | median | peak MiB | against |", "|---|---:|---:|---|"]
    md += measurement_rows(measure)
    if train:
        md += ["", "| training (the default model's recipe) | |", "|---|---|",
               f"| steps | {train['steps']} in {train['seconds']:.0f} s ({train['steps_per_second']:.2f} steps/s) |",
               f"| validation Dice (OASIS-TRT 06-07) | {train['validation_dice'] if train['validation_dice'] is None else round(train['validation_dice'], 4)} |",
               f"| folding | {'-' if train.get('folding_percent') is None else format(train['folding_percent'], '.3f')} % |",
               f"| peak memory | {train['peak_mib']:.0f} MiB |",
               f"| model | {os.path.basename(train['model'])} |"]
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.out, "tests.json"), "w") as f:
        json.dump(cases, f, indent=1)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"rehearsal": args.rehearse, "ran": True, "ok": not failed, "failures": failed, "steps": done,
                   "tests": counts, "measure": measure, "train": train}, f, indent=1)
    print("\n".join(md))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
