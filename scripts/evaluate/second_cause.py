#!/usr/bin/env python3
"""Replays a live run's flagged windows through the episode tracker's rules, with and without a
rule that splits a second cause off an open episode (history.md, run 38).

    second_cause.py RUN_DIR ANALYZER

RUN_DIR is a finished `scripts/evaluate.sh` run; ANALYZER one of its analyzers, whose
`state/reports/windows.jsonl` holds every flagged window with its scores and evidence. The
tracker's rules (analyzer/src/core/episodes/tracker.rs, deploy defaults: two detectors agree,
open after 4 clear or 8 counted windows, clear at 3x a bar, close after 5 quiet windows, a
subsystem joins after 4 windows as the heaviest) are followed window by window, in three
variants of what a second cause is, once the episode is open and the window is clear and led
by a channel of an alerted subsystem:

  none    no second cause (the tracker as shipped)
  leads   the lead is a channel that led none of the episode's windows
  named   the lead is a channel none of the episode's windows named among its five strongest

Four such windows in a row close the episode and open a new one. It prints the episodes of
the run as it was, then the same for each ordered pair of faults laid one inside the other
(the second fault's windows 10 or 20 s after the first's began), which a live run cannot
produce at will. Standard library only.
"""

import json
import os

from cli import live_faults, parser

MIN_AGREEMENT, OPEN_AFTER, CONFIRM_AFTER, CLEAR, CLOSE_AFTER, STRONG = 2, 4, 8, 3.0, 5, 3.0
ALERT_SHARE, NAMED = 0.25, 5
STRIDE_MS = 1000
VARIANTS = ("none", "leads", "named")


def load(path):
    with open(path) as f:
        return {w["end_ms"]: w for w in map(json.loads, f)}


def is_clear(w):
    flagging = [s for d, s in w["scores"] if d in w["detectors"]]
    strength = min(flagging) if flagging else 0.0
    critical = w["agreement"] >= 3 or (w["agreement"] == 2 and strength >= STRONG)
    return critical or any(s >= CLEAR for _, s in w["scores"])


def lead(w):
    ev = w.get("evidence") or []
    return (ev[0]["subsystem"], ev[0]["channel"]) if ev else None


def heaviest(w):
    subs = [(s, v) for s, v in w["subsystems"] if v > 0]
    return max(subs, key=lambda x: x[1])[0] if subs else None


class Episode:
    def __init__(self, windows, split):
        weight = {}
        for w in windows:
            for s, v in w["subsystems"]:
                weight[s] = weight.get(s, 0.0) + v
        total = sum(weight.values())
        ranked = sorted((x for x in weight.items() if x[1] > 0), key=lambda x: -x[1])
        self.subsystems = [s for i, (s, v) in enumerate(ranked) if i == 0 or v >= ALERT_SHARE * total]
        self.start_ms = windows[0]["end_ms"]
        self.split = split
        self.leads, self.named = set(), set()
        self.summary = windows[-1]["summary"]
        for w in windows:
            self.add(w)

    def add(self, w):
        if lead(w):
            self.leads.add(lead(w)[1])
        self.named.update(e["channel"] for e in (w.get("evidence") or [])[:NAMED])


def episodes(ws, variant):
    out, pending, fresh = [], [], []
    ep, quiet, joining = None, 0, None

    def extend(w):
        nonlocal joining
        ep.add(w)
        h = heaviest(w)
        if h is None or h in ep.subsystems:
            joining = None
        else:
            joining = (h, joining[1] + 1 if joining and joining[0] == h else 1)
            if joining[1] >= OPEN_AFTER:
                ep.subsystems.append(h)
                joining = None

    t, end = min(ws), max(ws)
    while t <= end:
        w = ws.get(t)
        flagged = w is not None and w["agreement"] >= MIN_AGREEMENT
        t += STRIDE_MS
        if ep is None:
            if not flagged:
                pending = []
                continue
            pending.append(w)
            clear_run = len(pending) >= OPEN_AFTER and all(map(is_clear, pending[-OPEN_AFTER:]))
            if clear_run or len(pending) >= CONFIRM_AFTER:
                ep = Episode(pending, False)
                out.append(ep)
                pending = []
            continue
        if not flagged:
            for f in fresh:
                extend(f)
            fresh, joining, quiet = [], None, quiet + 1
            if quiet >= CLOSE_AFTER:
                ep, quiet = None, 0
            continue
        quiet = 0
        known = ep.leads if variant == "leads" else ep.named
        ld = lead(w)
        if variant != "none" and ld and is_clear(w) and ld[0] in ep.subsystems and ld[1] not in known:
            fresh.append(w)
            if len(fresh) >= OPEN_AFTER:
                ep = Episode(fresh, True)
                out.append(ep)
                fresh, joining = [], None
            continue
        for f in fresh + [w]:
            extend(f)
        fresh = []
    return out


def nested(ws, first, second, lag_ms, pre_ms=5000, post_ms=40000):
    """The windows of `first`, with those of `second` laid from `lag_ms` after its start."""
    def part(f):
        a, b = f["start_ms"] - pre_ms, f["end_ms"] + post_ms
        ts = [t for t in ws if a <= t <= b]
        return {t - min(ts): ws[t] for t in ts} if ts else {}
    out = {t: dict(w, end_ms=t) for t, w in part(first).items()}
    for t, w in part(second).items():
        t += lag_ms + pre_ms
        if t not in out or out[t]["agreement"] < w["agreement"]:
            out[t] = dict(w, end_ms=t)
    return out


def main():
    ap = parser(__doc__)
    ap.add_argument("run", metavar="RUN_DIR", help="a finished scripts/evaluate.sh run")
    ap.add_argument("analyzer", metavar="ANALYZER", help="one of its analyzers (analyzers/NAME)")
    args = ap.parse_args()
    ws = load(os.path.join(args.run, "analyzers", args.analyzer, "state", "reports", "windows.jsonl"))
    if not ws:
        ap.exit(1, "%s: no flagged windows in its reports\n" % args.analyzer)
    faults = live_faults(args.run)
    print("The run as it was:")
    for v in VARIANTS:
        eps = episodes(ws, v)
        print("  %-5s %d episodes, %d of them a second cause" % (v, len(eps), sum(e.split for e in eps)))
        for e in (x for x in eps if x.split):
            fault = next((f["name"] for f in faults if f["start_ms"] - 10000 <= e.start_ms <= f["end_ms"] + 10000), "-")
            print("        split in %s: %s" % (fault, e.summary[:100]))
    print("Faults laid one inside another (episodes, of them a second cause):")
    for a in faults:
        for b in faults:
            if a is b:
                continue
            for lag in (10000, 20000):
                syn = nested(ws, a, b, lag)
                if not syn:
                    continue
                cells = []
                for v in VARIANTS:
                    eps = episodes(syn, v)
                    cells.append("%s %d (%d)" % (v, len(eps), sum(e.split for e in eps)))
                print("  %s, then %s at +%d s: %s" % (a["name"], b["name"], lag // 1000, "; ".join(cells)))


if __name__ == "__main__":
    main()
