#!/usr/bin/env python3
"""Timeline plots of a recorded evaluation run: one PNG per fault.

    timeline.py DIR [--analyzer NAME] [--faults a,b] [--out DIR] [--before 40] [--after 60]
                    [--replay-raw FILE]

DIR is a finished `scripts/evaluate.sh --keep-data` run. For each fault, from `--before`
seconds before it to `--after` seconds after it, two panels:

- the raw channels the fault moves (the PromQL in CHANNELS below), read from a Prometheus
  started on a copy of the recorded data;
- each detector's score as the analyzer wrote it (`reveal_anomaly_score`: score over its
  threshold, so the threshold is the line at 1; from OUT/analyzers/NAME/series.json, which
  `score.py` caches), and the windows flagged by two detectors or more.

The injected interval is shaded, and the `RevealAnomaly` alerts Alertmanager held (first
seen to gone, from alerts.json) are drawn as bars above the scores, labelled with their
subsystem. A run with no live analyzer (`scripts/gpu_case.sh`) is drawn from a replay instead:
`--replay-raw FILE` is `replay.py --raw FILE`'s output, whose window lines give the scores and
whose episodes (opened to closed) stand for the alerts. Needs matplotlib (python3-matplotlib) and Prometheus. Writes
OUT/timeline-FAULT.png (OUT defaults to DIR), numbering repeats of a fault.
"""

import json
import os
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli import live_faults, parser  # noqa: E402
from replay import read_raw, start_prometheus  # noqa: E402

# The channels each fault is expected to move, as an operator would chart them. A fault not
# listed gets the busiest-CPU chart.
BUSY = 'sum without (cpu) (rate(reveal_cpu_time_seconds_total{mode!="idle"}[1s]))'
NET_RX = 'rate(reveal_cpu_softirqs_total{type="NET_RX"}[1s])'
RETRANS = 'rate(reveal_network_protocol_events_total{field="RetransSegs"}[1s])'
TX = 'rate(reveal_network_transmit_bytes_total{device=~"rve.*"}[1s])'
GPU = 'sum by (gpu) (reveal_gpu_power_watts) or sum by (gpu, clock) (reveal_gpu_clock_hertz{clock="sm"}) / 1e6'
CHANNELS = {
    "cpu_saturation": (BUSY, "CPU time by mode, cores"),
    "memory_bandwidth": (BUSY, "CPU time by mode, cores"),
    "memory_hog": ("1 - reveal_memory_mem_available_bytes / reveal_memory_mem_total_bytes", "memory utilization"),
    "dirty_page_flood": ('{__name__=~"reveal_memory_(dirty|writeback)_bytes"}', "dirty and writeback bytes"),
    "storage_read_burst": ("rate(reveal_storage_read_bytes_total[1s])", "read bytes/s per device"),
    "softirq_flood_one_cpu": (NET_RX, "NET_RX softirqs/s per CPU"),
    "irq_imbalance": (NET_RX, "NET_RX softirqs/s per CPU"),
    "packet_loss": (RETRANS, "TCP retransmitted segments/s"),
    "packet_loss_0.5pct": (RETRANS, "TCP retransmitted segments/s"),
    "packet_loss_0.1pct": (RETRANS, "TCP retransmitted segments/s"),
    "one_flow": (TX, "background transfer, bytes/s sent"),
    "gpu_power_cap": (GPU, "GPU power (W: gpu=0) and SM clock (MHz: clock=sm)"),
    "gpu_clock_lock": (GPU, "GPU power (W: gpu=0) and SM clock (MHz: clock=sm)"),
}
DETECTORS = ("zscore", "pca", "iforest")


def query_range(url, expr, start_s, end_s, step=0.1):
    q = urllib.parse.urlencode({"query": expr, "start": "%.3f" % start_s, "end": "%.3f" % end_s, "step": step})
    with urllib.request.urlopen("%s/api/v1/query_range?%s" % (url, q), timeout=60) as r:
        body = json.load(r)
    out = []
    for s in body["data"]["result"]:
        labels = {k: v for k, v in s["metric"].items() if k not in ("job", "instance")}
        name = ",".join("%s=%s" % kv for kv in sorted(labels.items())) or expr[:30]
        out.append((name, [float(t) for t, _ in s["values"]], [float(v) for _, v in s["values"]]))
    return out


def alert_bars(ax, alerts, lo, hi, s0, top, label):
    """The alerts open within [lo, hi] (unix s) as red bars above `top`, one row each,
    labelled `label: subsystem`; x in seconds from s0."""
    for i, x in enumerate(al for al in alerts if al["first_seen_ms"] / 1000 <= hi
                          and (al.get("gone_ms") or hi * 1000) / 1000 >= lo):
        x0 = x["first_seen_ms"] / 1000 - s0
        x1 = min((x.get("gone_ms") or hi * 1000) / 1000, hi) - s0
        y = top * (1.08 + 0.07 * i)
        ax.plot([x0, x1], [y, y], lw=4, color="tab:red")
        ax.text(x0, y, " %s: %s" % (label, x["subsystem"] or "?"), fontsize=7, va="bottom")


def from_replay(path):
    """Scores and episodes of a replay's raw output, in the shapes of series.json and
    alerts.json."""
    series, alerts = {}, []
    windows, episodes = read_raw(path)
    for w in windows:
        t = float(w["end_ms"])
        series.setdefault("reveal_anomaly_agreement", []).append((t, w["agreement"]))
        for k, v in w["scores"].items():
            series.setdefault("score:%s@replay" % k, []).append((t, v))
    for e in episodes:
        alerts.append({"alertname": "RevealAnomaly", "first_seen_ms": e["open_s"] * 1000,
                       "gone_ms": e["close_s"] * 1000 if e["close_s"] is not None else None,
                       "subsystem": ",".join(e["subsystems"])})
    return series, alerts


def main():
    ap = parser(__doc__)
    ap.add_argument("dir", metavar="DIR", help="a kept evaluate.sh run")
    ap.add_argument("--analyzer", metavar="NAME", help="the analyzer of the run (default: its first)")
    ap.add_argument("--faults", metavar="A,B", help="only these faults")
    ap.add_argument("--out", metavar="DIR", help="where the PNGs go (default: DIR)")
    ap.add_argument("--before", type=float, default=40.0, metavar="S", help="seconds before the fault (40)")
    ap.add_argument("--after", type=float, default=60.0, metavar="S", help="seconds after it (60)")
    ap.add_argument("--replay-raw", metavar="FILE", help="replay.py --raw FILE's output, for a run without a live analyzer")
    args = ap.parse_args()

    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("timeline: needs matplotlib (apt-get install python3-matplotlib)")
    want, analyzer, before, after = args.faults, args.analyzer, args.before, args.after
    out_dir, replay_raw, d = args.out, args.replay_raw, args.dir
    run = json.load(open(os.path.join(d, "run.json")))
    faults = live_faults(d)
    if replay_raw:
        series, alerts = from_replay(replay_raw)
    else:
        a = next((x for x in run["analyzers"] if analyzer in (None, x["name"])), None)
        if a is None:
            sys.exit("timeline: no analyzer %s in %s (a run without one: --replay-raw)" % (analyzer, d))
        adir = os.path.join(d, "analyzers", a["name"])
        series = json.load(open(os.path.join(adir, "series.json")))
        # The evaluated host's series only: with `hugepages_drift` the receiver also holds the
        # stand-in hosts' (run.json's `instance`; older runs had no other host).
        if run.get("instance"):
            series = {k: v for k, v in series.items() if "@" not in k or k.endswith("@" + run["instance"])}
        alerts = [x for x in json.load(open(os.path.join(adir, "alerts.json"))) if x["alertname"] == "RevealAnomaly"]
    out_dir = out_dir or d
    os.makedirs(out_dir, exist_ok=True)
    data = os.path.join(d, "prometheus-data")
    if not os.path.isdir(data):
        sys.exit("timeline: %s has no prometheus-data (run evaluate.sh with --keep-data)" % d)
    tmp = tempfile.mkdtemp(prefix="reveal-timeline-")
    proc = None
    seen = {}
    try:
        copy = os.path.join(tmp, "data")
        shutil.copytree(data, copy)
        proc, url = start_prometheus(copy)
        for f in faults:
            if want and f["name"] not in want.split(","):
                continue
            seen[f["name"]] = seen.get(f["name"], 0) + 1
            s0, e0 = f["start_ms"] / 1000, f["end_ms"] / 1000
            lo, hi = s0 - before, e0 + after
            expr, title = CHANNELS.get(f["name"], CHANNELS["cpu_saturation"])
            fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10.5, 5.2), sharex=True, dpi=80,
                                           gridspec_kw={"height_ratios": [1, 1.2]})
            for name, ts, vs in query_range(url, expr, lo, hi):
                ax1.plot([t - s0 for t in ts], vs, lw=1, label=name)
            ax1.set_title("%s — %s" % (f["name"], title), fontsize=10)
            if ax1.get_legend_handles_labels()[0]:
                ax1.legend(fontsize=7, loc="upper right")
            for det in DETECTORS:
                pts = sorted((t / 1000, v) for k, vs in series.items() if k.startswith("score:%s@" % det)
                             for t, v in vs if lo * 1000 <= t <= hi * 1000)
                if pts:
                    ax2.plot([t - s0 for t, _ in pts], [v for _, v in pts], lw=1, label=det)
            flagged = sorted(t / 1000 for k, vs in series.items() if k.startswith("reveal_anomaly_agreement")
                             for t, v in vs if v >= 2 and lo * 1000 <= t <= hi * 1000)
            ax2.scatter([t - s0 for t in flagged], [0.05] * len(flagged), marker="|", color="k", s=40,
                        label="flagged (agreement ≥ 2)")
            ax2.axhline(1.0, color="grey", ls="--", lw=0.8, label="threshold")
            top = max([1.5] + [v for k, vs in series.items() if k.startswith("score:")
                               for t, v in vs if lo * 1000 <= t <= hi * 1000])
            alert_bars(ax2, alerts, lo, hi, s0, top, "alert")
            for ax in (ax1, ax2):
                ax.axvspan(0, e0 - s0, color="orange", alpha=0.15)
            # Linear up to twice the threshold, logarithmic beyond: a fault's score can be a
            # hundred times its bar, and the bar must stay readable.
            ax2.set_yscale("symlog", linthresh=2)
            ax2.set_ylim(0, max(2.5, top * 1.6))
            ax2.set_yticks([t for t in (0, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= top * 1.6])
            ax2.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: "%g" % v))
            ax2.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax2.set_ylabel("score / threshold", fontsize=8)
            ax2.set_xlabel("seconds from the fault's start (shaded: injected)", fontsize=8)
            ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            fig.tight_layout()
            suffix = "" if seen[f["name"]] == 1 else "-%d" % seen[f["name"]]
            path = os.path.join(out_dir, "timeline-%s%s.png" % (f["name"], suffix))
            fig.savefig(path)
            plt.close(fig)
            print(path)
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
