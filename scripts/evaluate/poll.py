#!/usr/bin/env python3
"""Polls Alertmanagers' API v2 (GET /api/v2/alerts) every --interval (0.1 s) for
scripts/evaluate.sh and scripts/big_host_case.py.

Each poll falls at a random moment of its interval. The analyzer delivers on a fixed schedule
(each window's end plus its read delay, every second), so a poller on a fixed grid sees every
alert after the same fraction of an interval: in run 22 a one-second grid fell 0.05 s before
the analyzer's deliveries, and every latency carried 0.95 s of polling. At a random moment the
poll adds half an interval on average, whatever the two schedules are: 0.5 s with the
one-second polls of runs 23–31 and big-host cases 1–5, 0.05 s at the default 0.1 s.

    poll.py [--interval 0.1] --deadline UNIX_S NAME=URL=DIR [NAME=URL=DIR ...]

For each Alertmanager it keeps, in DIR:
  alerts.json   every alert occurrence seen so far (rewritten atomically when what is listed
                changes, every 10 s, and at the end):
                fingerprint, alertname, subsystem, severity, labels, startsAt, endsAt (as last
                seen), first_seen_ms, last_seen_ms (polls that listed it), gone_ms (first poll
                that no longer listed it, null while listed)
  alerts.log    one line per change: FIRING / RESOLVED, with the poll time
  polls.jsonl   the raw polls, compact: {"t": ms, "ok": bool, "alerts": [[fp, alertname,
                subsystem, severity, startsAt, endsAt, state], ...]}

An occurrence is keyed by (fingerprint, startsAt): the analyzer keeps startsAt for the life of
an episode, and a later episode with the same labels starts a new occurrence. Standard
library only. Stops at the deadline or on SIGTERM/SIGINT (after writing its files).
"""

import argparse
import json
import os
import random
import signal
import sys
import time
import urllib.request

STOP = False


def _stop(*_):
    global STOP
    STOP = True


def now_ms():
    return int(time.time() * 1000)


def fmt(ms):
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000)) + ".%03d" % (ms % 1000)


class Tracker:
    def __init__(self, name, url, out):
        self.name, self.url, self.out = name, url.rstrip("/"), out
        os.makedirs(out, exist_ok=True)
        self.occ = {}  # (fp, startsAt) -> record
        self.listed = set()
        self.saved_listed, self.saved_ms = None, 0
        self.polls = open(os.path.join(out, "polls.jsonl"), "a", buffering=1)
        self.log = open(os.path.join(out, "alerts.log"), "a", buffering=1)

    def poll(self):
        t = now_ms()
        try:
            with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=0.9) as r:
                alerts = json.load(r)
            ok = True
        except Exception:  # Alertmanager down or slow: recorded as a failed poll
            alerts, ok = [], False
        compact = []
        seen = set()
        for a in alerts:
            labels = a.get("labels", {})
            fp = a.get("fingerprint", "")
            key = (fp, a.get("startsAt", ""))
            state = (a.get("status") or {}).get("state", "")
            compact.append([fp, labels.get("alertname", ""), labels.get("subsystem", ""),
                            labels.get("severity", ""), a.get("startsAt", ""),
                            a.get("endsAt", ""), state])
            seen.add(key)
            rec = self.occ.get(key)
            if rec is None:
                rec = self.occ[key] = {
                    "fingerprint": fp,
                    "alertname": labels.get("alertname", ""),
                    "subsystem": labels.get("subsystem", ""),
                    "severity": labels.get("severity", ""),
                    "labels": labels,
                    "summary": (a.get("annotations") or {}).get("summary", ""),
                    "remediation": (a.get("annotations") or {}).get("remediation", ""),
                    "startsAt": a.get("startsAt", ""),
                    "first_seen_ms": t,
                }
                self.log.write("%s FIRING   %s subsystem=%s severity=%s startsAt=%s: %s\n" % (
                    fmt(t), rec["alertname"], rec["subsystem"] or "-", rec["severity"] or "-",
                    rec["startsAt"], rec["summary"][:200]))
            rec["endsAt"] = a.get("endsAt", "")
            rec["state"] = state
            rec["last_seen_ms"] = t
            rec["gone_ms"] = None
        if ok:
            for key in self.listed - seen:
                rec = self.occ[key]
                rec["gone_ms"] = t
                self.log.write("%s RESOLVED %s subsystem=%s (listed %.0f s, endsAt=%s)\n" % (
                    fmt(t), rec["alertname"], rec["subsystem"] or "-",
                    (rec["last_seen_ms"] - rec["first_seen_ms"]) / 1000, rec.get("endsAt")))
            self.listed = seen
        else:
            self.listed |= seen
        self.polls.write(json.dumps({"t": t, "ok": ok, "alerts": compact},
                                    separators=(",", ":")) + "\n")
        # Rewritten when what is listed changes (a new or a gone occurrence), and every 10 s
        # for the endsAt and last_seen_ms of the listed ones.
        if seen != self.saved_listed or t - self.saved_ms >= 10000:
            self.save()
            self.saved_listed, self.saved_ms = set(seen), t

    def save(self):
        path = os.path.join(self.out, "alerts.json")
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(sorted(self.occ.values(), key=lambda r: r["first_seen_ms"]), f, indent=1)
        os.replace(tmp, path)


def main(argv):
    def target(a):
        parts = a.split("=", 2)
        if len(parts) != 3:
            raise argparse.ArgumentTypeError("%r is not NAME=URL=DIR" % a)
        return parts

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deadline", metavar="UNIX_S", type=float, help="stop then (default: at SIGTERM)")
    ap.add_argument("--interval", metavar="S", type=float, default=0.1,
                    help="seconds between polls (default 0.1: a latency carries 0.05 s of polling "
                         "on average)")
    ap.add_argument("targets", metavar="NAME=URL=DIR", nargs="+", type=target)
    args = ap.parse_args(argv)
    deadline = args.deadline
    targets = [Tracker(name, url, out) for name, url, out in args.targets]
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if not args.interval > 0:
        ap.error("--interval must be above 0")
    step = args.interval
    tick = time.time()
    while not STOP and (deadline is None or time.time() < deadline):
        delay = tick + random.random() * step - time.time()
        if delay > 0:
            time.sleep(delay)
        for t in targets:
            t.poll()
        tick += step
        if tick < time.time() - 1.0:  # fell behind (a slow Alertmanager): resume from now
            tick = time.time()
    for t in targets:
        t.save()


if __name__ == "__main__":
    main(sys.argv[1:])
