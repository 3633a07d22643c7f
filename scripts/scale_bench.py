#!/usr/bin/env python3
"""How the analyzer's cost grows with the hosts it follows: N = 10, 100, 500 generated hosts.

    scripts/scale_bench.py [--hosts 10,100,500] [--baseline 3m] [--passes 40] [--compare]
                           [--refit-every 10s --compare-fit]
                           [--template exporter/tests/golden/vm-debian.prom] [--out DIR]
                           [--metric-set FILE] [--before-metric-set FILE]

For each N: a fresh Prometheus 2.42 (remote-write receiver on, loopback, its own data
directory); `cluster_load` writes N hosts' 100 ms series into it (history only, as fast as
Prometheus takes them: the baseline, then the passes), a 6 s fault every 12 s on some host
during the passes (none in the baseline), and 2 hosts whose HugePages pool is half their
peers'; then `cluster_bench` learns the
baseline and runs PASSES one-second passes the way `reveal-analyzer run` does, with the
metric set of deploy/analyzer.yml (--metric-set). Prometheus' own counters give the query side:
CPU seconds and bytes of `query_range` answers during the passes. With --before-metric-set
FILE, each N first runs the passes with that metric set on the same data (before → after a
change to the metric set's expressions).

Prints a table (and writes DIR/results.md and DIR/N.json): per-pass wall time and its split,
analyzer CPU per pass and per host, hosts per core, lag (delay + pass time, when a pass fits
in a stride), memory per host, fit time per host, query bytes and Prometheus CPU per pass,
faults found, cross-host findings.

With --compare-fit the passes are paced (one per second of real time, as the service runs
them) and each N runs twice on the same data: refits fitted inline, holding their pass back,
then in the background as the service fits them; a second table gives per mode the refits
during the passes, the pass wall time (p50, p99, max) and the passes longer than a stride.
--refit-every sets `analysis.refit_every` (the deploy default is 5m: use a few seconds so
refits fall inside the passes).

Build first: cargo build --release -p reveal-analyzer --example cluster_load --example cluster_bench
It asserts nothing (a measurement, like the benchmarks); docs/benchmarks.md has its figures.
Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "target", "release", "examples")
# `analysis.delay`'s default (analyzer/src/config.rs): the lag column adds it to the pass time.
DELAY_S = 0.2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seconds(d):
    m = re.fullmatch(r"(\d+)([smh])", d)
    if not m:
        sys.exit("scale_bench: durations are like 90s, 3m, 1h")
    return int(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


def prom_value(url, query):
    q = urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen("%s/api/v1/query?%s" % (url, q), timeout=10) as r:
        res = json.load(r)["data"]["result"]
    return float(res[0]["value"][1]) if res else 0.0


def scraped(url, name):
    """Sum of a metric's samples on Prometheus' own /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


def write_config(args, url, metric_set, path):
    """The analyzer's configuration for a run: METRIC_SET's file with the run's Prometheus,
    baseline and analysis keys."""
    with open(metric_set) as f:
        text = f.read()
    # A minute of history for 500 hosts takes Prometheus on 2 cores longer than the
    # default 10 s to answer.
    text = re.sub(r"(?m)^    url: .*$", "    url: %s\n    timeout: 60s" % url, text, count=1)
    text = text.split("\noutputs:")[0]
    text += "\nanalysis:\n  baseline: %s\n  warmup: %s\n" % (args.baseline, args.baseline)
    if args.refit_every:
        text += "  refit_every: %s\n" % args.refit_every
    # More `analysis:` keys, indented as that section's (big_host_table.py --compare-families).
    text += getattr(args, "analysis_extra", "") or ""
    with open(path, "w") as f:
        f.write(text)
    return path


def run_one(args, n, out):
    work = tempfile.mkdtemp(prefix="reveal-scale-%d-" % n)
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    with open(os.path.join(work, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1h\n")
    log = open(os.path.join(out, "prometheus-%d.log" % n), "w")
    prom = subprocess.Popen(
        ["prometheus", "--config.file=" + os.path.join(work, "prometheus.yml"),
         "--storage.tsdb.path=" + os.path.join(work, "data"),
         "--web.listen-address=127.0.0.1:%d" % port, "--web.enable-remote-write-receiver"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/-/ready", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        baseline = seconds(args.baseline)
        now = int(time.time())
        until = now - 2
        learn_from = until - (10 + baseline + args.passes + 5)
        score_from = learn_from + baseline
        metric_set = getattr(args, "metric_set", None) or os.path.join(ROOT, "deploy", "analyzer.yml")
        config = write_config(args, url, metric_set, os.path.join(work, "analyzer.yml"))
        faults = os.path.join(out, "faults-%d.jsonl" % n)
        t0 = time.monotonic()
        print("N=%d: writing %d s of %d hosts ..." % (n, until - learn_from + 5, n), flush=True)
        subprocess.run(
            [os.path.join(EXAMPLES, "cluster_load"), "--write", url + "/api/v1/write",
             "--hosts", str(n), "--template", args.template,
             "--metric-set", metric_set,
             "--from", str(learn_from - 5), "--until", str(until),
             "--fault-every", "12", "--faults-from", str(score_from), "--fault-seconds", "6",
             "--deviant", "2",
             "--faults-out", faults],
            check=True, stderr=open(os.path.join(out, "load-%d.log" % n), "w"))
        load_s = time.monotonic() - t0
        series = scraped(url, "prometheus_tsdb_head_series ")
        print("N=%d: written in %.0f s (%d series); analyzing ..." % (n, load_s, series), flush=True)
        results = []
        # With --compare, first as the analyzer fetched before it kept its answers, then as now,
        # on the same data.
        runs = [(True, False), (False, False)] if args.compare else [(False, False)]
        if args.compare_fit:
            runs = [(False, True), (False, False)]
        # An older build's cluster_bench first, on the same data (big_host_table.py --before-bench).
        benches = [(os.path.join(EXAMPLES, "cluster_bench"), w, i, config) for w, i in runs]
        if getattr(args, "before_bench", None):
            benches.insert(0, (args.before_bench, False, False, config))
        # An older metric set first, on the same data (--before-metric-set).
        before_set = getattr(args, "before_metric_set", None)
        if before_set:
            benches.insert(0, (os.path.join(EXAMPLES, "cluster_bench"), False, False,
                               write_config(args, url, before_set, os.path.join(work, "before.yml"))))
        for bench_bin, whole, inline, bench_config in benches:
            env = dict(os.environ, REVEAL_BENCH_WHOLE_SPAN="1" if whole else "0",
                       REVEAL_BENCH_INLINE_FIT="1" if inline else "0",
                       REVEAL_BENCH_PACE="1" if args.compare_fit else "0")
            bench = subprocess.run(
                [bench_bin, bench_config, str(learn_from),
                 str(score_from), str(args.passes), faults],
                check=True, stdout=subprocess.PIPE, env=env,
                stderr=open(os.path.join(out, "bench-%d.log" % n), "a"))
            r = json.loads(bench.stdout)
            r["prom_series"] = series
            r["metric_set"] = before_set if bench_config != config else metric_set
            r["load_s"] = load_s
            results.append(r)
        with open(os.path.join(out, "%d.json" % n), "w") as f:
            json.dump(results, f, indent=1)
        return results
    finally:
        os.killpg(prom.pid, 15)
        prom.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", default="10,100,500")
    ap.add_argument("--baseline", default="3m")
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--template", default=os.path.join(ROOT, "exporter", "tests", "golden", "vm-debian.prom"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--compare", action="store_true",
                    help="also run each N with every pass asking for its whole span (as before "
                         "the analyzer kept its answers), on the same data")
    ap.add_argument("--refit-every", default=None,
                    help="analysis.refit_every for the run (e.g. 10s)")
    ap.add_argument("--compare-fit", action="store_true",
                    help="paced passes, refits inline then in the background, on the same data")
    ap.add_argument("--metric-set", default=None,
                    help="the analyzer's metric set (default deploy/analyzer.yml)")
    ap.add_argument("--before-metric-set", default=None, metavar="FILE",
                    help="also run each N with this metric set first, on the same data (an older "
                         "deploy/analyzer.yml: before → after)")
    args = ap.parse_args()
    for b in ("cluster_load", "cluster_bench"):
        if not os.path.exists(os.path.join(EXAMPLES, b)):
            sys.exit("scale_bench: build first: cargo build --release -p reveal-analyzer "
                     "--example cluster_load --example cluster_bench")
    if not shutil.which("prometheus"):
        sys.exit("scale_bench: needs prometheus (apt-get install prometheus)")
    out = args.out or tempfile.mkdtemp(prefix="reveal-scale-")
    os.makedirs(out, exist_ok=True)
    rows = []
    for n in [int(x) for x in args.hosts.split(",")]:
        for r in run_one(args, n, out):
            rows.append(r)
            print(json.dumps(r), flush=True)
    head = ("| hosts | fetch | channels/host | pass wall s (p50 / p99) | fetch / engine / cross-host s "
            "| analyzer CPU s/pass | CPU ms/host/pass | hosts per core | lag s (p50 / p99) | MB/host "
            "| fit CPU s/host | query MB/pass | Prometheus CPU s/pass | faults found | cross-host findings |")
    lines = [head, "|" + " --- |" * 15]
    for r in rows:
        # The newest window ends `delay` plus the pass behind real time; a pass over the
        # stride is caught up by the next, so only a mean pass over the stride falls behind.
        lag = "%.2f / %.2f" % (DELAY_S + r["pass_wall_p50_s"], DELAY_S + r["pass_wall_p99_s"])
        lines.append("| %d | %s | %.0f | %.3f / %.3f | %.3f / %.3f / %.3f | %.3f | %.2f | %.0f | %s | %.2f | %.3f | %.2f | %.2f | %d/%d | %s |" % (
            r["hosts"], r["fetch"] + ("" if not args.before_metric_set else (
                ", before" if r["metric_set"] == args.before_metric_set else ", after")),
            r["channels_per_host"], r["pass_wall_p50_s"], r["pass_wall_p99_s"],
            r["fetch_mean_s"], r["engine_mean_s"], r["crosshost_mean_s"], r["cpu_s_per_pass"],
            r["cpu_ms_per_host_pass"], r["hosts_per_core"],
            lag if r["pass_wall_mean_s"] < 1 else "falls behind",
            r["mb_per_host"], r["fit_cpu_s_per_host"], r["query_bytes_per_pass"] / 1e6,
            r["store_cpu_s_per_pass"], r["faults_found"], r["faults_due"],
            ", ".join(r["deviations"]) or "none"))
    if args.compare_fit:
        lines += ["", "| hosts | refits | refits during the passes | pass wall s (p50 / p99 / max) "
                  "| passes longer than a stride |", "|" + " --- |" * 5]
        for r in rows:
            lines.append("| %d | %s | %d | %.3f / %.3f / %.3f | %d of %d |" % (
                r["hosts"], "background" if r["fit_in_background"] else "inline",
                r["refits_during_passes"], r["pass_wall_p50_s"], r["pass_wall_p99_s"],
                r["pass_wall_max_s"], r["passes_over_a_stride"], r["passes"]))
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(table + "\n")
    print("scale_bench: results in %s" % out)


if __name__ == "__main__":
    main()
