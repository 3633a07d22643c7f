#!/usr/bin/env python3
"""The paper's Table 2 on recorded evaluation runs: how the anomalies found change with the
window size and stride.

    granularity.py CONFIG DIR [DIR ...] [--replay BIN] [--analyzer BIN]
                   [--settings 3s/1s,1500ms/500ms,5s/2s] [--keep DIR]

Each DIR is a finished `scripts/evaluate.sh --keep-data` run; CONFIG an analyzer configuration
(`deploy/analyzer.yml` for the deploy defaults). Every DIR is replayed once per setting
(`replay.py`, with `analysis.window` and `analysis.stride` set in a copy of CONFIG). The
anomaly segments of a replay are its windows flagged by at least two detectors, each the
span `[end − window, end)` it covers; `reveal-analyzer compare` merges them and reports, for
each pair of settings, the length-based IoU and the hit rates byCount (segments of A that
meet any of B) and byLength (A's length covered by B), as the paper's §5.5 defines them.

The paper averages over application runs; here a "run" is each fault's stretch of a
recording (from 30 s before the fault to 60 s after it, the stretch an operator would look
at) and the fault-free period, so the mean, median and standard deviation are over those
stretches. A stretch where A flagged nothing has no hit rate and is left out of that pair's
statistics (the count says how many were used).

BIN for --replay is the analyzer to replay through (default target/release/reveal-analyzer,
run as `reveal-analyzer replay`; an `online_replay` example of an earlier build is taken too),
for --analyzer the analyzer (default
target/release/reveal-analyzer, for `compare`). --keep DIR keeps each replay's raw output and
the segments as CSV. Prints a Markdown table.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from cli import live_faults, parser  # noqa: E402  (same folder)
from replay import read_raw  # noqa: E402  (same folder)

HERE = os.path.dirname(os.path.abspath(__file__))
BEFORE_S = 30
AFTER_S = 60


def ms(text):
    """`3s`, `1500ms`, `0.5s` → milliseconds."""
    text = text.strip()
    if text.endswith("ms"):
        return int(float(text[:-2]))
    if text.endswith("s"):
        return int(round(float(text[:-1]) * 1000))
    raise ValueError("duration %r: use ms or s" % text)


def with_windows(config, window, stride, path):
    text = open(config).read()
    if any(line.startswith("analysis:") for line in text.splitlines()):
        sys.exit("granularity: %s already has an analysis section; give one without it" % config)
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n\n# granularity.py\nanalysis:\n  window: %dms\n  stride: %dms\n" % (window, stride))


def segments(raw_path, window_ms):
    """Windows flagged by two detectors or more, as [start, end) in ms."""
    windows, _ = read_raw(raw_path)
    return [(w["end_ms"] - window_ms, w["end_ms"]) for w in windows if w["agreement"] >= 2]


def clip(segs, lo, hi):
    return [(max(s, lo), min(e, hi)) for s, e in segs if e > lo and s < hi]


def compare(analyzer, a, b, tmp):
    paths = []
    for name, segs in (("a", a), ("b", b)):
        p = os.path.join(tmp, name + ".csv")
        with open(p, "w") as f:
            f.write("start,end\n")
            f.writelines("%d,%d\n" % s for s in segs)
        paths.append(p)
    out = subprocess.run([analyzer, "compare", "--json"] + paths, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("granularity: compare failed: " + out.stderr.strip())
    return json.loads(out.stdout)["overall"]


def stats(xs):
    if not xs:
        return "– / – / –"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return "%.2f / %.2f / %.2f" % (statistics.mean(xs), statistics.median(xs), sd)


def main():
    ap = parser(__doc__)
    ap.add_argument("config", metavar="CONFIG", help="an analyzer configuration")
    ap.add_argument("dirs", metavar="DIR", nargs="+", help="kept evaluate.sh runs")
    ap.add_argument("--replay", metavar="BIN", default="target/release/reveal-analyzer")
    ap.add_argument("--analyzer", metavar="BIN", default="target/release/reveal-analyzer")
    ap.add_argument("--settings", metavar="W/S,...", default="3s/1s,1500ms/500ms,5s/2s")
    ap.add_argument("--keep", metavar="DIR", help="keep each replay's output and segments here")
    args = ap.parse_intermixed_args()

    replay_bin, analyzer, keep = args.replay, args.analyzer, args.keep
    settings = [tuple(ms(x) for x in s.split("/")) for s in args.settings.split(",")]
    config, dirs = args.config, args.dirs
    for b in (replay_bin, analyzer):
        if not os.access(b, os.X_OK):
            sys.exit("granularity: no binary at %s (cargo build --release -p reveal-analyzer)" % b)
    tmp = keep or tempfile.mkdtemp(prefix="reveal-granularity-")
    os.makedirs(tmp, exist_ok=True)
    name = lambda s: "%g s/%g s" % (s[0] / 1000, s[1] / 1000)  # noqa: E731
    # stretches[(dir, label)] = (lo, hi); segs[(dir, setting)] = [...]
    stretches, segs = [], {}
    for d in dirs:
        run = json.load(open(os.path.join(d, "run.json")))
        faults = live_faults(d)
        ff = run["fault_free"]
        stretches.append((d, "fault-free", ff["start_ms"], ff["end_ms"]))
        for f in faults:
            stretches.append((d, f["name"], f["start_ms"] - BEFORE_S * 1000, f["end_ms"] + AFTER_S * 1000))
        for s in settings:
            cfg = os.path.join(tmp, "analyzer-%d-%d.yml" % s)
            with_windows(config, s[0], s[1], cfg)
            raw = os.path.join(tmp, "%s-%d-%d.raw" % (os.path.basename(os.path.abspath(d)), s[0], s[1]))
            print("replaying %s at %s ..." % (d, name(s)), file=sys.stderr, flush=True)
            r = subprocess.run([sys.executable, os.path.join(HERE, "replay.py"), d, cfg, "--replay", replay_bin,
                                "--raw", raw, "--label", name(s)], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("granularity: replay of %s at %s failed: %s" % (d, name(s), r.stderr.strip()[-2000:]))
            segs[(d, s)] = segments(raw, s[0])
    print("| pair (size/stride) | stretches | IoU mean / median / std | byCount mean / median / std | byLength mean / median / std |")
    print("| --- | --- | --- | --- | --- |")
    for i, a in enumerate(settings):
        for b in settings[i + 1:]:
            iou, count, length, used = [], [], [], 0
            for d, _, lo, hi in stretches:
                c = compare(analyzer, clip(segs[(d, a)], lo, hi), clip(segs[(d, b)], lo, hi), tmp)
                if c.get("iou") is not None:
                    iou.append(c["iou"])
                if c.get("hit_by_count") is not None:
                    used += 1
                    count.append(c["hit_by_count"])
                    length.append(c["hit_by_length"])
            print("| %s vs %s | %d of %d | %s | %s | %s |" % (
                name(a), name(b), used, len(stretches), stats(iou), stats(count), stats(length)))
    print()
    for s in settings:
        total = sum(e - st for d in dirs for st, e in segs[(d, s)])
        print("- %s: %d flagged windows, %.0f s covered before merging" % (
            name(s), sum(len(segs[(d, s)]) for d in dirs), total / 1000))


if __name__ == "__main__":
    main()
