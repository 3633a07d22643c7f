#!/usr/bin/env python3
"""Timeline of a cross-host fault (`hugepages_drift`) of a kept evaluation run: the stand-in
hosts' memory utilization and 1 GiB HugePages pool, read from the stand-ins' Prometheus
(OUT/cluster-prometheus-data), and below them each host's `reveal_host_deviation` for memory
as the analyzer wrote it (its receiver's data) against the alert threshold 3.5, with the
injected interval shaded and the `RevealHostDeviation` alerts Alertmanager held as bars.

    deviation_timeline.py DIR [--analyzer NAME] [--out DIR] [--before 40] [--after 60]

Writes OUT/timeline-FAULT.png (OUT defaults to DIR). Needs matplotlib and prometheus; the run
must have been made with --keep-data. timeline.py draws the faults of the evaluated host.
"""

import json
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli import parser  # noqa: E402
from replay import start_prometheus  # noqa: E402
from timeline import alert_bars  # noqa: E402

THRESHOLD = 3.5  # rules/anomaly-alerts.rules.yml's reveal_host_deviation > 3.5
UTIL = "1 - reveal_memory_mem_available_bytes / reveal_memory_mem_total_bytes"
POOL = 'reveal_memory_hugepages_pool{size="1073741824",state="total"}'


def by_instance(url, expr, lo, hi, step):
    """A range query's series as (instance, times, values), one per host."""
    q = urllib.parse.urlencode({"query": expr, "start": "%.3f" % lo, "end": "%.3f" % hi, "step": step})
    with urllib.request.urlopen("%s/api/v1/query_range?%s" % (url, q), timeout=60) as r:
        body = json.load(r)
    return sorted((s["metric"].get("instance", "?"), [float(t) for t, _ in s["values"]],
                   [float(v) for _, v in s["values"]]) for s in body["data"]["result"])


def main():
    ap = parser(__doc__)
    ap.add_argument("dir", metavar="DIR", help="a kept evaluate.sh run")
    ap.add_argument("--analyzer", metavar="NAME", help="the analyzer of the run (default: its first)")
    ap.add_argument("--out", metavar="DIR", help="where the PNGs go (default: DIR)")
    ap.add_argument("--before", type=float, default=40.0, metavar="S", help="seconds before the fault (40)")
    ap.add_argument("--after", type=float, default=60.0, metavar="S", help="seconds after it (60)")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("deviation_timeline: needs matplotlib (apt-get install python3-matplotlib)")
    analyzer, before, after, out_dir, d = args.analyzer, args.before, args.after, args.out, args.dir
    run = json.load(open(os.path.join(d, "run.json")))
    faults = [f for f in json.load(open(os.path.join(d, "faults.json"))) if f.get("instance")]
    if not faults:
        sys.exit("deviation_timeline: %s has no cross-host fault" % d)
    a = next((x for x in run["analyzers"] if analyzer in (None, x["name"])), None)
    if a is None:
        sys.exit("deviation_timeline: no analyzer %s in %s" % (analyzer, d))
    adir = os.path.join(d, "analyzers", a["name"])
    alerts = [x for x in json.load(open(os.path.join(adir, "alerts.json")))
              if x["alertname"] == "RevealHostDeviation"]
    sources = {"cluster": os.path.join(d, "cluster-prometheus-data"), "receiver": os.path.join(adir, "receiver-data")}
    for name, path in sources.items():
        if not os.path.isdir(path):
            sys.exit("deviation_timeline: no %s (run evaluate.sh with --keep-data)" % path)
    out_dir = out_dir or d
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="reveal-deviation-timeline-")
    procs = []
    try:
        urls = {}
        for name, path in sources.items():
            copy = os.path.join(tmp, name, "data")
            shutil.copytree(path, copy)
            proc, urls[name] = start_prometheus(copy)
            procs.append(proc)
        for f in faults:
            s0, e0 = f["start_ms"] / 1000, f["end_ms"] / 1000
            lo, hi = s0 - before, e0 + after
            fig, axes = plt.subplots(3, 1, figsize=(10.5, 6.4), sharex=True, dpi=80,
                                     gridspec_kw={"height_ratios": [1, 0.8, 1.2]})
            for ax, expr, title in ((axes[0], UTIL, "memory utilization"),
                                    (axes[1], POOL, "1 GiB HugePages reserved")):
                for inst, ts, vs in by_instance(urls["cluster"], expr, lo, hi, 0.5):
                    mark = " (fault)" if inst == f["instance"] else ""
                    ax.plot([t - s0 for t in ts], vs, lw=1.2 if mark else 0.8, label=inst + mark)
                ax.set_title("%s — %s, per stand-in host" % (f["name"], title), fontsize=10)
                ax.legend(fontsize=7, loc="upper right")
            top = THRESHOLD * 1.5
            for inst, ts, vs in by_instance(urls["receiver"], 'reveal_host_deviation{subsystem="memory"}', lo, hi, 1):
                axes[2].plot([t - s0 for t in ts], vs, lw=1, label=inst)
                top = max([top] + vs)
            axes[2].axhline(THRESHOLD, color="grey", ls="--", lw=0.8, label="alert threshold")
            alert_bars(axes[2], alerts, lo, hi, s0, top, "RevealHostDeviation")
            axes[2].set_ylim(0, top * 1.3)
            axes[2].set_ylabel("memory deviation, robust z", fontsize=8)
            axes[2].set_xlabel("seconds from the fault's start (shaded: injected)", fontsize=8)
            axes[2].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            for ax in axes:
                ax.axvspan(0, e0 - s0, color="orange", alpha=0.15)
            fig.tight_layout()
            path = os.path.join(out_dir, "timeline-%s.png" % f["name"])
            fig.savefig(path)
            plt.close(fig)
            print(path)
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
