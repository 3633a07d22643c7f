#!/usr/bin/env python3
"""What the fault-free flagged windows of an evaluate.sh run are.

    python3 scripts/evaluate/fault_free.py DIR [ANALYZER] [REFIT_SECONDS]

Reads DIR/run.json (the fault-free span) and DIR/analyzers/ANALYZER/state/reports/windows.jsonl
(ANALYZER defaults to reveal) and prints, for the fault-free period: each detector's flags, the
windows two detectors agree on and which detectors those are, their stretches of consecutive
windows, the claims that lead them, and when they fall: by minute of the refit cycle
(REFIT_SECONDS, default 300, counted from the fault-free start, which follows the warm-up's
first fit) and by minute of the period (a young baseline flags more). Standard library only;
docs/evaluation/history.md (run 16) shows its use.
"""
import argparse
import collections
import json
import os
import sys

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("out", metavar="DIR", help="an evaluate.sh run")
ap.add_argument("name", metavar="ANALYZER", nargs="?", default="reveal", help="its analyzer (reveal)")
ap.add_argument("refit_s", metavar="REFIT_SECONDS", nargs="?", type=int, default=300,
                help="the refit cycle (300)")
_args = ap.parse_args()
out, name, refit_s = _args.out, _args.name, _args.refit_s
run = json.load(open(os.path.join(out, "run.json")))
ff_s, ff_e = run["fault_free"]["start_ms"], run["fault_free"]["end_ms"]
rows = []
with open(os.path.join(out, "analyzers", name, "state", "reports", "windows.jsonl")) as f:
    for line in f:
        w = json.loads(line)
        if ff_s < w["end_ms"] <= ff_e:
            rows.append(w)
total = (ff_e - ff_s) // 1000
print("fault-free windows: %d s; flagged by any detector: %d" % (total, len(rows)))
by = collections.Counter()
for w in rows:
    for d in w["detectors"]:
        by[d] += 1
print("per detector flags: %s" % ", ".join("%s %d (%.2f %%)" % (d, n, 100 * n / total) for d, n in by.items()))
agree = [w for w in rows if w["agreement"] >= 2]
print("agreement >= 2: %d (%.2f %%)" % (len(agree), 100 * len(agree) / total))
pairs = collections.Counter(",".join(sorted(w["detectors"])) for w in agree)
print("detector sets of those:", dict(pairs))
# Stretches of consecutive agreeing windows.
ends = sorted(w["end_ms"] for w in agree)
stretches, cur = [], []
for e in ends:
    if cur and e - cur[-1] > 1000:
        stretches.append(cur)
        cur = []
    cur.append(e)
if cur:
    stretches.append(cur)
hist = collections.Counter(len(s) for s in stretches)
print("stretches (length: count):", dict(sorted(hist.items())))
lead = collections.Counter()
for w in agree:
    lead[w["summary"][:90]] += 1
print("leading claims:")
for c, n in lead.most_common(15):
    print("  %3d  %s" % (n, c))
# When in the refit cycle (from the fault-free start, which follows the warm-up's first fit).
cyc = collections.Counter(((w["end_ms"] - ff_s) // 1000 % refit_s) // 60 for w in agree)
print("minute of the 5-minute refit cycle:", dict(sorted(cyc.items())))
mins = collections.Counter((w["end_ms"] - ff_s) // 60000 for w in agree)
print("minute of the fault-free period:", dict(sorted(mins.items())))
print("stretch starts (s after the fault-free start) and lengths:",
      [((s[0] - ff_s) // 1000, len(s)) for s in stretches])
