#!/usr/bin/env python3
"""Replays recorded evaluation runs at several fit phases and sums what they show.

    phases.py CONFIG DIR [DIR ...] [--replay BIN] [--phases 0,60,120,180,240] [--label NAME]

Each DIR is a finished `scripts/evaluate.sh --keep-data` run; CONFIG an analyzer
configuration (`deploy/analyzer.yml` for the deploy defaults: the replay points its source at
the recording). Every DIR is replayed once per phase (`replay.py --phase`): learning starts
that many seconds after the live analyzer's did, so the warm-up's end and every refit fall
elsewhere in the same telemetry. One live run is one draw of where its fits fell; a young
baseline's bars are set by a handful of windows, and whether an ordinary moment of the host
lands in one changes what is flagged later. Five phases of a recording are five draws.

Prints one line per replay and the totals: faults alerted within 10 s and attributed, false
episodes in the fault-free periods and per hour, fault-free windows flagged by two
detectors, the median of the replays' median latencies, and how soon the alerted faults'
episodes closed after their end (median, how many after more than 30 s, how many never).

Then, per recording, where its fault-free flags come from: of the windows every phase scored,
how many were flagged in k of the phases. A window flagged at every phase is flagged whatever
the fits saw: the host did something there (a write-back, a storage stall). A window flagged
at one phase only is the fits' part: one draw of a young baseline's bars. Last, the flagged
share by the baseline's age when each window was scored (5-minute bins from the replay's start
of learning: without `evaluate.sh --baseline-age` the fault-free period starts at the end of
the 5-minute warm-up, so its baseline grows from 5 to the full 30 minutes during it).
"""

import argparse
import collections
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from replay import read_raw  # noqa: E402  (same folder)


def replay(dir_, config, binary, phase):
    run = json.load(open(os.path.join(dir_, "run.json")))
    with tempfile.NamedTemporaryFile(prefix="reveal-phase-", suffix=".txt") as raw:
        out = subprocess.run(
            [sys.executable, os.path.join(HERE, "replay.py"), dir_, config, "--replay", binary,
             "--phase", str(phase), "--raw", raw.name], capture_output=True, text=True)
        flagged_at = fault_free_flags(run, raw.name) if out.returncode == 0 else {}
    learn_from = run["analyzers_started_ms"] // 1000 + phase
    text = out.stdout + out.stderr
    faults = re.search(r"attributed: (\d+) of (\d+); median latency ([0-9.–]+)", text)
    free = re.search(r"fault-free: (\d+) episodes in ([0-9.]+) min .*?, (\d+) of (\d+) windows", text)
    if out.returncode != 0 or not faults or not free:
        sys.exit("phases: replay of %s at phase %d failed:\n%s" % (dir_, phase, text[-2000:]))
    # Per fault (by name and place in the run): alerted within 10 s and attributed; and, where
    # alerted, seconds from its end until the episode closed (None: not closed).
    per_fault, resolves = [], []
    for row in re.finditer(r"^\| ([\w.]+) \| [\w/]+ \| ([^|]+) \| ([^|]+) \| [^|]* \| [^|]* \| ([^|]+) \|",
                           text, re.M):
        if row.group(1) != "fault":
            name = row.group(1)
            if any(n.split(" ")[0] == name for n, _ in per_fault):
                name += " (again)"
            per_fault.append((name, row.group(2).strip() == "yes" and row.group(3).strip() == "yes"))
            res = row.group(4).strip()
            if res != "–":
                resolves.append(None if res == "not resolved" else float(res))
    return {
        "per_fault": per_fault, "resolves": resolves,
        "found": int(faults.group(1)), "faults": int(faults.group(2)),
        "latency": None if faults.group(3) == "–" else float(faults.group(3)),
        "episodes": int(free.group(1)), "minutes": float(free.group(2)),
        "flagged": int(free.group(3)), "windows": int(free.group(4)),
        "flagged_at": flagged_at, "learn_from": learn_from,
    }


def fault_free_flags(run, raw):
    """Each fault-free window of `run` (its run.json) the replay scored (its end, in s) and
    whether two detectors flagged it, from the replay's own output (`replay.py --raw`)."""
    lo, hi = run["fault_free"]["start_ms"] // 1000, run["fault_free"]["end_ms"] // 1000
    windows, _ = read_raw(raw)
    return {w["end_s"]: w["agreement"] >= 2 for w in windows if lo < w["end_s"] <= hi}


def by_phase_count(replays):
    """Of the fault-free windows every replay of one recording scored: how many were flagged in
    k of the replays (k → windows), and how many there were."""
    common = set.intersection(*(set(r["flagged_at"]) for r in replays))
    counts = collections.Counter(sum(r["flagged_at"][t] for r in replays) for t in common)
    return counts, len(common)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", metavar="CONFIG", help="an analyzer configuration")
    ap.add_argument("dirs", metavar="DIR", nargs="+", help="kept evaluate.sh runs")
    ap.add_argument("--replay", metavar="BIN", default="target/release/reveal-analyzer")
    ap.add_argument("--phases", metavar="S,...", default="0,60,120,180,240")
    ap.add_argument("--label", metavar="NAME", help="(default: CONFIG's file name)")
    args = ap.parse_intermixed_args()
    config, dirs = args.config, args.dirs
    phases = [int(p) for p in args.phases.split(",")]
    label = args.label or os.path.basename(config)
    rows, per_dir = [], []
    for d in dirs:
        mine = []
        for p in phases:
            r = replay(d, config, args.replay, p)
            rows.append(r)
            mine.append(r)
            print("%s %s +%ds: faults %d/%d, median latency %s s | fault-free: %d episodes in %.0f min, "
                  "%d of %d windows flagged (%.2f%%)" % (
                      label, os.path.basename(os.path.normpath(d)), p, r["found"], r["faults"],
                      "%.1f" % r["latency"] if r["latency"] is not None else "–", r["episodes"],
                      r["minutes"], r["flagged"], r["windows"], 100.0 * r["flagged"] / max(1, r["windows"])),
                  flush=True)
        per_dir.append((d, mine))
    # Where the fault-free flags come from, per recording.
    for d, mine in per_dir:
        counts, n = by_phase_count(mine)
        k = len(mine)
        if not n:
            continue
        flags = sum(j * c for j, c in counts.items())
        every = counts.get(k, 0) * k
        print("%s %s fault-free windows scored at every phase: %d; flagged in k of %d phases: %s; "
              "flags on windows flagged at every phase: %d of %d; the rest: %.2f%% of windows" % (
                  label, os.path.basename(os.path.normpath(d)), n, k,
                  ", ".join("%d: %d" % (j, counts.get(j, 0)) for j in range(1, k + 1)),
                  every, flags, 100.0 * (flags - every) / (n * k)))
    # Flagged share by the baseline's age.
    ages = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        for end, flagged in r["flagged_at"].items():
            a = ages[(end - r["learn_from"]) // 300 * 5]
            a[0] += flagged
            a[1] += 1
    print("%s flagged by the baseline's age: %s" % (label, "; ".join(
        "%d-%d min %d of %d (%.2f%%)" % (m, m + 5, f, n, 100.0 * f / n) for m, (f, n) in sorted(ages.items()))))
    # Faults missed (not alerted within 10 s and attributed), by name.
    missed = {}
    for r in rows:
        for name, ok in r["per_fault"]:
            missed.setdefault(name, [0, 0])
            missed[name][1] += 1
            if not ok:
                missed[name][0] += 1
    print("%s faults missed: %s" % (label, ", ".join(
        "%s %d of %d" % (n, m, t) for n, (m, t) in missed.items()) or "none"))
    res = [v for r in rows for v in r["resolves"]]
    done = sorted(v for v in res if v is not None)
    print("%s resolves of the %d faults alerted: median %s s, over 30 s %d, not closed %d" % (
        label, len(res), "%.1f" % statistics.median(done) if done else "–",
        sum(1 for v in done if v > 30), sum(1 for v in res if v is None)))
    hours = sum(r["minutes"] for r in rows) / 60
    lat = [r["latency"] for r in rows if r["latency"] is not None]
    print("%s total over %d replays: faults %d/%d; false episodes %d in %.1f h (%.1f per hour); "
          "windows flagged %.2f%%; median latency %s s" % (
              label, len(rows), sum(r["found"] for r in rows), sum(r["faults"] for r in rows),
              sum(r["episodes"] for r in rows), hours, sum(r["episodes"] for r in rows) / hours if hours else 0,
              100.0 * sum(r["flagged"] for r in rows) / max(1, sum(r["windows"] for r in rows)),
              "%.1f" % statistics.median(lat) if lat else "–"))


if __name__ == "__main__":
    main()
