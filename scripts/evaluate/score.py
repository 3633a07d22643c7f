#!/usr/bin/env python3
"""Scores a run of scripts/evaluate.sh: prints Markdown tables and writes OUT/results.md.

    score.py OUT_DIR [--offline]

Reads OUT/run.json (phases, analyzers), OUT/faults.json (each fault's name, expected
subsystems, start_ms, end_ms) and, per analyzer, OUT/analyzers/NAME/alerts.json (from poll.py),
its JSON-lines reports (state/reports/windows.jsonl) and its anomaly series from its receiver
Prometheus. The series are cached in OUT/analyzers/NAME/series.json on the first run, so the
scoring can be run again after the stack is gone (--offline: never query, use the cache).
Standard library only. See docs/evaluation/method.md for the definitions.
"""

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
import urllib.parse
import urllib.request

EARLY_S = 10  # "alerted" means first seen within this many seconds of the fault's start
MARGIN_S = 10  # an alert within a fault +- this margin is not a false alert
GRACE_S = 10  # an alert first seen up to this long after a fault's end still belongs to it
DETECTORS = ("zscore", "pca", "iforest")


def hms(ms):
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def fetch_series(recv_url, start_ms, end_ms):
    """Raw samples of the anomaly series over [start, end]: {metric key: [(ms, value)]}."""
    rng = max(1, math.ceil((end_ms - start_ms) / 1000)) + 1
    out = {}
    for metric in ("reveal_anomaly_score", "reveal_anomaly_agreement"):
        q = urllib.parse.urlencode({"query": "%s[%ds]" % (metric, rng), "time": "%.3f" % (end_ms / 1000)})
        with urllib.request.urlopen("%s/api/v1/query?%s" % (recv_url.rstrip("/"), q), timeout=60) as r:
            body = json.load(r)
        for s in body["data"]["result"]:
            m = s["metric"]
            key = metric if metric == "reveal_anomaly_agreement" else "score:" + m.get("detector", "?")
            if m.get("instance"):
                key += "@" + m["instance"]
            out.setdefault(key, []).extend((int(round(float(t) * 1000)), float(v)) for t, v in s["values"])
    return out


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(a, b):
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = statistics.fmean(ra), statistics.fmean(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None  # a constant score: no rank order at all
    return cov / math.sqrt(va * vb)


def f1(x, unit=""):
    return "–" if x is None else ("%.1f%s" % (x, unit))


def pct(n, d):
    return "–" if not d else "%.2f%% (%d/%d)" % (100.0 * n / d, n, d)


def short_claim(summary):
    """An alert's leading claim without the scrape job's label: `metric{labels}: feature`; a
    cross-host claim (a sentence, not `metric{labels} (subsystem): …`) as its first sentence."""
    if not re.match(r"^[A-Za-z_:][\w:]*(\{[^}]*\})? \(", summary):
        return summary.replace(" (job reveal)", "").replace("job reveal, ", "").split(". ")[0].replace("|", "\\|")[:120]
    s = re.sub(r'job="[^"]*",?', "", summary).replace(",}", "}").replace("{}", "")
    head, _, rest = s.partition(" (")
    what = rest.partition("): ")[2] if "): " in rest else rest
    return ("%s: %s" % (head, what)).replace("|", "\\|")[:120]


def score_analyzer(run, faults, a, offline):
    d = a["dir"]
    ff_s, ff_e = run["fault_free"]["start_ms"], run["fault_free"]["end_ms"]
    end_ms = run["end_ms"]
    alerts = load(os.path.join(d, "alerts.json"), []) or []
    anomaly = [x for x in alerts if x["alertname"] == "RevealAnomaly"]
    other = [x for x in alerts if x["alertname"] != "RevealAnomaly"]

    def gone(x):
        return x["gone_ms"] if x.get("gone_ms") else None

    def recurring(x):
        """Told as recurring (`recurring="true"`)."""
        return (x.get("labels") or {}).get("recurring") == "true"

    def told_as_routine(x):
        """A recurring alert at severity info: not paged (builds b1f7724 to 45ae843 told
        recurring episodes so; later ones keep the episode's severity)."""
        return recurring(x) and x.get("severity") == "info"

    lines = []
    rows = []
    hints = []
    latencies, resolves, alerted, attributed = [], [], 0, 0
    unresolved = 0
    series_path = os.path.join(d, "series.json")
    series = load(series_path)
    err = None
    if series is None and not offline:
        try:
            series = fetch_series(a["receiver_url"], run["analyzers_started_ms"], end_ms)
            with open(series_path, "w") as f:
                json.dump(series, f)
        except Exception as e:  # receiver gone: score what the alerts and reports show
            err = "series not available from %s: %s" % (a["receiver_url"], e)
    series = series or {}
    # The evaluated host's series only: with `hugepages_drift` the analyzers also follow the
    # stand-in hosts (run.json's `instance` names the evaluated one; older runs had no other).
    host = run.get("instance")

    def of(k, inst):
        return inst is None or k.endswith("@" + inst)

    scores = {}
    for k, v in series.items():
        if k.startswith("score:") and of(k, host):
            det = k[len("score:"):].split("@")[0]
            scores.setdefault(det, {}).update({t: x for t, x in v})

    for i, f in enumerate(faults):
        s, e = f["start_ms"], f["end_ms"]
        nxt = faults[i + 1]["start_ms"] if i + 1 < len(faults) else end_ms
        # The fault's alerts: first seen from its start to GRACE_S after its end (an alert
        # needs a few windows after the evidence starts), never past the next fault's start.
        until = min(e + GRACE_S * 1000, nxt)
        # A fault on one of the stand-in hosts (`hugepages_drift`) names the alert it must raise
        # and the host; the others must raise a RevealAnomaly, on the evaluated host.
        pool = [x for x in alerts if x["alertname"] == f.get("alertname", "RevealAnomaly")
                and (not f.get("instance") or (x.get("labels") or {}).get("instance") == f["instance"])]
        mine = [x for x in pool if s <= x["first_seen_ms"] <= until]
        # A fault told as the host's routine (info) was not alerted.
        early = [x for x in mine if x["first_seen_ms"] <= s + EARLY_S * 1000 and not told_as_routine(x)]
        later = [x for x in mine if x["first_seen_ms"] > s + EARLY_S * 1000]
        carried = [x for x in pool if x["first_seen_ms"] < s and (gone(x) is None or gone(x) > s)]
        subs = []
        for x in sorted(mine, key=lambda x: x["first_seen_ms"]):
            if x["subsystem"] not in subs:
                subs.append(x["subsystem"] or "?")
        attr = any(x["subsystem"] in f["expected"] for x in mine)
        lat = (min(x["first_seen_ms"] for x in mine) - s) / 1000 if mine else None
        if early:
            alerted += 1
        if attr:
            attributed += 1
        if lat is not None:
            latencies.append(lat)
        res = None
        if mine:
            gs = [gone(x) for x in mine]
            if any(g is None or g > nxt for g in gs):
                res = "not resolved"
                unresolved += 1
            else:
                r = (max(gs) - e) / 1000
                resolves.append(r)
                res = "%.1f" % r
        fw = [(t, v) for k, vs in series.items() if k.startswith("reveal_anomaly_agreement")
              and of(k, f.get("instance") or host) for t, v in vs if s < t <= e + 3000]
        # The evidence the fault's first alert of an expected subsystem names (or its first).
        lead = sorted(mine, key=lambda x: (x["subsystem"] not in f["expected"], x["first_seen_ms"]))
        evidence = short_claim(lead[0].get("summary", "")) if lead else ""
        hints.extend("%s: %s" % (f["name"], x["remediation"]) for x in lead[:1] if x.get("remediation"))
        name = f["name"] + (" (%s on %s)" % (f.get("alertname"), f["instance"]) if f.get("instance") else "")
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, "/".join(f["expected"]),
            "yes" if early else ("later" if later else
                                 "**no** (told as recurring)" if mine else "**no**"),
            "yes" if attr else ("**no**" if mine else "–"),
            f1(lat), ", ".join(subs) or "–", res or "–",
            "%d/%d" % (sum(1 for _, v in fw if v >= 2), len(fw)) if fw else "–",
            "yes (%s)" % ", ".join(sorted({x["subsystem"] for x in carried})) if carried else "",
            evidence or "–",
        ))

    lines.append("### %s (`%s`)" % (a["name"], a["path"]))
    lines.append("")
    lines.append("| fault | expected | alerted ≤ %d s | attributed | latency s | alert subsystems | resolved s after end | windows flagged (agreement ≥ 2) | alert open at start | leading evidence |" % EARLY_S)
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    lines.extend(rows)
    lines.append("")
    if hints:
        lines.append("Remediation hints of those alerts:")
        lines.append("")
        lines.extend("- " + h for h in hints)
        lines.append("")

    # Fault-free period.
    hours = max(1e-9, (ff_e - ff_s) / 3_600_000)
    ff_alerts = [x for x in anomaly if ff_s <= x["first_seen_ms"] <= ff_e]
    ff_other = [x for x in other if ff_s <= x["first_seen_ms"] <= ff_e and x["alertname"].startswith("Reveal")
                and x.get("subsystem")]
    ff_w = [(t, v) for k, vs in series.items() if k.startswith("reveal_anomaly_agreement")
            and of(k, host) for t, v in vs if ff_s <= t <= ff_e]
    flagged = sum(1 for _, v in ff_w if v >= 2)
    rep_flagged = 0
    rep_path = os.path.join(d, "state", "reports", "windows.jsonl")
    try:
        with open(rep_path) as fh:
            for ln in fh:
                try:
                    w = json.loads(ln)
                except ValueError:
                    continue
                if ff_s <= w.get("end_ms", 0) <= ff_e and w.get("agreement", 0) >= 2:
                    rep_flagged += 1
    except OSError:
        rep_flagged = None
    per_det = []
    for det in sorted(scores, key=lambda k: (DETECTORS.index(k) if k in DETECTORS else 9, k)):
        vals = [v for t, v in scores[det].items() if ff_s <= t <= ff_e]
        per_det.append("%s %s" % (det, pct(sum(1 for v in vals if v > 1), len(vals))))
    dets = sorted(scores, key=lambda k: (DETECTORS.index(k) if k in DETECTORS else 9, k))
    common = sorted(set.intersection(*[{t for t in scores[k] if ff_s <= t <= ff_e} for k in dets])) if dets else []
    rho = []
    for i in range(len(dets)):
        for j in range(i + 1, len(dets)):
            r = spearman([scores[dets[i]][t] for t in common], [scores[dets[j]][t] for t in common])
            rho.append("%s–%s %s" % (dets[i], dets[j], "n/a" if r is None else "%.2f" % r))
    const = [k for k in dets if len(common) > 1 and len({scores[k][t] for t in common}) == 1]
    if const:
        rho.append("n/a: constant score of %s over the period" % ", ".join(const))

    # False alerts during the fault phase: active at no time within any fault +- margin.
    fp_s = faults[0]["start_ms"] if faults else end_ms
    false = []
    for x in anomaly:
        if x["first_seen_ms"] < fp_s:
            continue
        x_end = gone(x) or end_ms
        if not any(x["first_seen_ms"] <= f["end_ms"] + MARGIN_S * 1000 and x_end >= f["start_ms"] - MARGIN_S * 1000
                   for f in faults):
            false.append(x)
    fault_phase_h = max(1e-9, (end_ms - fp_s) / 3_600_000)

    lines.append("Fault-free period: %.1f min (%s–%s)" % ((ff_e - ff_s) / 60000, hms(ff_s), hms(ff_e)))
    lines.append("")
    ff_recurring = sum(1 for x in ff_alerts if recurring(x))
    lines.append("- RevealAnomaly alerts: %d (%.1f per hour)%s%s" % (
        len(ff_alerts), len(ff_alerts) / hours,
        "; of them recurring: %d" % ff_recurring if ff_recurring else "",
        (": " + ", ".join("%s %s%s" % (hms(x["first_seen_ms"]), x["subsystem"] or "?",
                                       " (recurring)" if recurring(x) else "") for x in ff_alerts[:12])
         + (" …" if len(ff_alerts) > 12 else "")) if ff_alerts else ""))
    if ff_other:
        lines.append("- other Reveal alerts: " + ", ".join("%s %s %s" % (hms(x["first_seen_ms"]), x["alertname"], x["subsystem"]) for x in ff_other[:12]))
    lines.append("- windows flagged (agreement ≥ 2): %s%s" % (
        pct(flagged, len(ff_w)),
        "" if rep_flagged is None else "; in the JSON-lines reports: %d" % rep_flagged))
    lines.append("- windows with score > 1, per detector: %s" % ("; ".join(per_det) or "–"))
    lines.append("- Spearman rank correlation of the detectors' scores (%d windows): %s" % (
        len(common), "; ".join(rho) or "–"))
    lines.append("- false RevealAnomaly alerts in the fault phase (none of a fault ± %d s): %d (%.1f per hour)%s" % (
        MARGIN_S, len(false), len(false) / fault_phase_h,
        (": " + ", ".join("%s %s" % (hms(x["first_seen_ms"]), x["subsystem"] or "?") for x in false[:12])) if false else ""))
    med = statistics.median(latencies) if latencies else None
    lines.append("- **summary**: alerted ≤ %d s %d/%d, attributed %d/%d, median latency %s, max resolve %s%s" % (
        EARLY_S, alerted, len(faults), attributed, len(faults), f1(med, " s"),
        f1(max(resolves) if resolves else None, " s"),
        ", %d not resolved before the next fault" % unresolved if unresolved else ""))
    if err:
        lines.append("- note: " + err)
    lines.append("")
    summary = {
        "name": a["name"], "alerted": alerted, "attributed": attributed, "faults": len(faults),
        "median_latency_s": med, "max_resolve_s": max(resolves) if resolves else None,
        "unresolved": unresolved, "ff_alerts_per_hour": len(ff_alerts) / hours,
        "ff_flagged": (flagged, len(ff_w)), "false_alerts": len(false),
    }
    return lines, summary


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUT_DIR", help="an evaluate.sh run")
    ap.add_argument("--offline", action="store_true", help="never query; use the cached series")
    args = ap.parse_args(argv)
    out, offline = args.out, args.offline
    run = load(os.path.join(out, "run.json"))
    if run is None:
        sys.exit("no %s/run.json: not an evaluate.sh output directory" % out)
    faults = load(os.path.join(out, "faults.json"), []) or []
    doc = ["## Reveal live evaluation: %s" % time.strftime("%Y-%m-%d %H:%M", time.localtime(run["started_ms"] / 1000)), ""]
    doc.append("Host %s (%s CPUs, %s), %s; faults of %s s with %s s gaps%s." % (
        run.get("host", "?"), run.get("nproc", "?"), run.get("kernel", "?"), run.get("mode", ""),
        run.get("fault_seconds", "?"), run.get("gap", "?"),
        "" if faults else "; no fault was injected (interrupted?)"))
    doc.append("")
    for sk in run.get("skipped", []):
        doc.append("**Skipped: %s** (%s)." % (sk["name"], sk["reason"]))
    if run.get("skipped"):
        doc.append("")
    sums = []
    for a in run["analyzers"]:
        lines, s = score_analyzer(run, faults, a, offline)
        doc.extend(lines)
        sums.append(s)
    if len(sums) > 1:
        doc.append("### Side by side")
        doc.append("")
        doc.append("| analyzer | alerted ≤ %d s | attributed | median latency s | max resolve s | fault-free alerts/h | fault-free windows flagged | false alerts (fault phase) |" % EARLY_S)
        doc.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for s in sums:
            doc.append("| %s | %d/%d | %d/%d | %s | %s%s | %.1f | %s | %d |" % (
                s["name"], s["alerted"], s["faults"], s["attributed"], s["faults"],
                f1(s["median_latency_s"]), f1(s["max_resolve_s"]),
                " (+%d not resolved)" % s["unresolved"] if s["unresolved"] else "",
                s["ff_alerts_per_hour"], pct(*s["ff_flagged"]), s["false_alerts"]))
        doc.append("")
    text = "\n".join(doc)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(sums, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
