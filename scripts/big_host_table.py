#!/usr/bin/env python3
"""Big-host table: what the exporter and the analyzer cost on a big GPU host, beside this one.

    scripts/big_host_table.py [--scrapes 200] [--baseline 30m] [--passes 40] [--out DIR]
                              [--selection FILE] [--metric-set FILE] [--no-build]
                              [--compare-families] [--before-bench PATH] [--fast FILE]
                              [--before-metric-set FILE]

Generates a fixture root of a 2-socket, 96-CPU host with 2 NUMA nodes, 8 NVMe disks, 4
InfiniBand ports and 8 GPUs (scripts/big_host_fixture.py) into a temporary directory, and
measures the same things on it and on this machine's own /proc and /sys, in one run:

- **Exporter**: the fixture is served by exporter/examples/fixture_exporter.rs (the release
  exporter's code and flags, its GPUs replayed from the fixture's nvml.json), this machine by
  target/release/reveal-exporter. Each is scraped --scrapes times, one every 100 ms on one
  keep-alive connection as Prometheus does, after 20 unmeasured scrapes: series and bytes per
  scrape, latency from request to last byte (median, p99), the exporter's CPU per scrape
  (/proc/PID/stat), its slowest collectors (their own duration series, median); then again
  with --metrics.selection (deploy/selection.yml when it exists, else
  exporter/examples/selection.yml). The perf and msr collectors are off on the fixture: they
  read the running kernel's counters, not the root, and would count this machine's CPUs.
- **Analyzer**: the full page of each host is the template of scripts/scale_bench.py's run for
  one host (cluster_load writes it into a fresh Prometheus with noise and faults, cluster_bench
  learns --baseline, fits, and runs --passes one-second passes with the metric set of
  --metric-set, deploy/analyzer.yml by default, as it is when run). With --fast FILE
  (deploy/selection-fast.yml) the template is the page the stack stores at 100 ms instead,
  `/metrics?cadence=fast` of an exporter started with `--metrics.fast FILE`, and the full
  page's run is printed beside it (full → fast). For the fixture, what the
  perf and msr collectors would serve on a real host of its size (hardware perf counters, APERF/MPERF/TSC per CPU, C-state
  residency: the metric set's IPC, miss ratios, Busy% and Bzy_MHz) is added to the template.
  Reported: series stored, channels, feature columns, pass wall time (p50, p99; fetch and
  engine means), analyzer CPU per pass, fit time and baseline windows, memory (resident, and
  as the allocator counts it: what the host holds after the passes, the most a fit adds).
  The memory target is read on what the host holds: a fit's working copies exist once per fit
  running (one per three CPUs of the analyzer), not once per host, so across a cluster they
  are shared, while the resident size of this one-host run counts them (and what the
  allocator kept of them) whole.

Prints the table (Markdown) and writes it with every figure to DIR/table.md and
DIR/results.json, beside the selection and metric set it used, copied at the start
(DIR/selection.yml, DIR/analyzer.yml). Needs prometheus (2.42 here) and Rust; builds the
release binaries first unless --no-build. About 15 minutes on 2 cores, most of it writing
and learning the big host's 30-minute baseline. A measurement, asserts nothing;
docs/benchmarks.md ("Big host") has its figures. Standard library only.
"""

import argparse
import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import scale_bench  # noqa: E402  (free_port, run_one)

ROOT = scale_bench.ROOT
RELEASE = os.path.join(ROOT, "target", "release")
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
          "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # Prometheus 2.42's
DURATION = re.compile(r'^reveal_exporter_collector_duration_seconds\{collector="([^"]+)"\} (\S+)$', re.M)
PERF = [("instructions", 2.0e9), ("cycles", 2.6e9), ("branch_instructions", 4.0e8),
        ("branch_misses", 4.0e6), ("cache_references", 5.0e7), ("cache_misses", 1.0e7)]


def build():
    for cmd in (["cargo", "build", "--release", "-p", "reveal-exporter", "--bin", "reveal-exporter",
                 "--example", "fixture_exporter"],
                ["cargo", "build", "--release", "-p", "reveal-analyzer", "--example", "cluster_load",
                 "--example", "cluster_bench"]):
        subprocess.run(cmd, cwd=ROOT, check=True)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(values, q):
    s = sorted(values)
    return s[round((len(s) - 1) * q)]


def measure(cmd, n, log, path="/metrics"):
    """Serves `cmd` on a free port and scrapes `path` n times at 100 ms."""
    port = scale_bench.free_port()
    proc = subprocess.Popen(cmd + ["--web.listen-address=127.0.0.1:%d" % port],
                            stdout=log, stderr=log, start_new_session=True)
    try:
        for _ in range(100):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                conn.request("GET", "/-/healthy")
                conn.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        lat, durations, cpu0 = [], {}, None
        start = time.monotonic()
        for i in range(20 + n):
            time.sleep(max(0.0, start + 0.1 * i - time.monotonic()))
            if i == 20:
                cpu0 = cpu_seconds(proc.pid)
            t = time.perf_counter()
            conn.request("GET", path, headers={"Accept": ACCEPT})
            body = conn.getresponse().read()
            dt = time.perf_counter() - t
            if i >= 20:
                lat.append(dt * 1e3)
                for name, v in DURATION.findall(body.decode()):
                    durations.setdefault(name, []).append(float(v) * 1e3)
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait()
    page = body.decode()
    return {
        "series": sum(1 for line in page.splitlines() if line and not line.startswith("#")),
        "bytes": len(body),
        "p50_ms": pct(lat, 0.5),
        "p99_ms": pct(lat, 0.99),
        "cpu_ms_per_scrape": 1e3 * cpu / n,
        "collectors_ms": {k: statistics.median(v) for k, v in durations.items()},
        "page": page,
    }


def shape(page):
    """What the page says about the host: distinct label values of a few metrics."""
    def count(metric, labels):
        pat = re.compile(r"^(?:%s)\{([^}]*)\}" % metric, re.M)
        seen = set()
        for body in pat.findall(page):
            kv = dict(re.findall(r'(\w+)="([^"]*)"', body))
            seen.add(tuple(kv.get(k) for k in labels))
        return len(seen)
    return {
        "cpus": count("reveal_cpu_busy_seconds_total", ["cpu"]),
        "numa_nodes": count("reveal_memory_numa_events_total", ["node"]),
        "disks": count("reveal_storage_read_bytes_total", ["device"]),
        "ib_ports": count("reveal_network_infiniband_port_state", ["device", "port"]),
        "gpus": count(r"reveal_gpu_\w+", ["gpu"]),
    }


def with_cpu_counters(page, cpus):
    """The page plus what the perf and msr collectors serve on a real host of `cpus` CPUs
    (CAP_PERFMON, the msr and cstate PMUs): hardware perf counters, APERF/MPERF/TSC per CPU,
    core C-state residency per core (reported by its first CPU) and package C-states."""
    rng = random.Random(96)
    lines = []
    for name, per_s in PERF:
        for c in range(cpus):
            lines.append('reveal_cpu_%s_total{cpu="%d"} %.1f' % (name, c, per_s * rng.uniform(0.5, 1.5) * 86400))
    for c in range(cpus):
        busy = rng.uniform(0.2, 0.9)
        for reg, per_s in (("tsc", 2.0e9), ("mperf", 2.0e9 * busy), ("aperf", 2.6e9 * busy)):
            lines.append('reveal_cpu_%s_cycles_total{cpu="%d"} %.1f' % (reg, c, per_s * 86400))
    for c in range(cpus // 2):  # first CPU of each core: hyperthreads are numbered after the cores
        for state, share in (("c1", 0.1), ("c6", 0.4)):
            lines.append('reveal_cpu_cstate_residency_cycles_total{cpu="%d",scope="core",state="%s"} %.1f'
                         % (c, state, 2.0e9 * share * rng.uniform(0.5, 1.5) * 86400))
    for c in (0, cpus // 4):  # one reporting CPU per package
        for state in ("c2", "c6"):
            lines.append('reveal_cpu_cstate_residency_cycles_total{cpu="%d",scope="package",state="%s"} %.1f'
                         % (c, state, 2.0e8 * 86400))
    return page.replace("# EOF\n", "") + "\n".join(lines) + "\n"


def analyze(label, page, args, out, analysis_extra="", before=False):
    d = os.path.join(out, label)
    os.makedirs(d, exist_ok=True)
    template = os.path.join(d, "template.prom")
    with open(template, "w") as f:
        f.write(page)
    ns = argparse.Namespace(baseline=args.baseline, passes=args.passes, template=template, compare=False,
                            compare_fit=False, refit_every=None, metric_set=os.path.join(out, "analyzer.yml"),
                            analysis_extra=analysis_extra,
                            before_bench=args.before_bench if before else None,
                            before_metric_set=args.before_metric_set if before else None)
    runs = scale_bench.run_one(ns, 1, d)
    return (runs[0], runs[1]) if before else runs[0]


# Device families off: every per-device channel in the host's model, as before families.
FAMILIES_OFF = "  families:\n    min_devices: 0\n"


def families_table(hosts, base="analyzer_off", heading="families off → on"):
    """The analyzer's cost with device families off and on (or an older build's, `base`, and
    this one's), per host, from one run."""
    def cells(a):
        return ["%d / %d" % (a["channels_per_host"], a["features_per_host"]),
                "%.0f / %.0f" % (1e3 * a["pass_wall_p50_s"], 1e3 * a["pass_wall_p99_s"]),
                "%.0f / %.0f" % (1e3 * a["fetch_mean_s"], 1e3 * a["engine_mean_s"]),
                "%.0f" % (1e3 * a["cpu_s_per_pass"]),
                "%.2f" % a["fit_s"],
                "%.0f" % a["mb_per_host"],
                "%s / %s" % (mb(a, "allocated_end_mb_per_host"), mb(a, "fit_peak_allocated_mb"))]
    names = ["channels / feature columns", "pass wall p50 / p99 ms (target ≤ 50)",
             "of it, mean: fetch / engine ms", "analyzer CPU per pass, ms", "fit, s (target ≤ 5)",
             "analyzer memory for the host, resident MB",
             "of it allocated, MB: held after the passes (target ≤ 50) / the fit's peak above "
             "the baseline"]
    head = "| | " + " | ".join("%s: %s" % (k, heading) for k in hosts) + " |\n"
    head += "| --- |" + " --- |" * len(hosts) + "\n"
    rows = []
    for i, n in enumerate(names):
        rows.append("| %s | %s |" % (n, " | ".join(
            "%s → %s" % (cells(h[base])[i], cells(h["analyzer"])[i]) for h in hosts.values())))
    return head + "\n".join(rows) + "\n"


def mb(a, key):
    """A figure of cluster_bench in MB, or "—" from a build that did not count it."""
    return "%.0f" % a[key] if key in a else "—"


def table(hosts, selection, metric_set, entries):
    b, v = hosts["big"], hosts["vm"]
    sel = os.path.relpath(selection, ROOT)
    metric_set = os.path.relpath(metric_set, ROOT)

    def both(f):
        return "| %s | %s |" % (f(b), f(v))

    def top(h):
        c = sorted(h["exporter"]["collectors_ms"].items(), key=lambda kv: -kv[1])[:4]
        return ", ".join("%s %.2f" % kv for kv in c)

    def host(h):
        s = h["shape"]
        return "%d CPUs, %d NUMA node(s), %d disk(s), %d IB port(s), %d GPU(s)" % (
            s["cpus"], s["numa_nodes"], s["disks"], s["ib_ports"], s["gpus"])

    n = b["scrapes"]
    rows = [
        ("host (from its exporter page)", both(host)),
        ("exporter series per scrape (bytes)",
         both(lambda h: "%d (%.0f KB)" % (h["exporter"]["series"], h["exporter"]["bytes"] / 1e3))),
        ("series with `--metrics.selection %s`" % sel, both(lambda h: "%d" % h["selected"]["series"])),
        ("scrape latency, median / p99 ms (%d scrapes at 100 ms)" % n,
         both(lambda h: "%.2f / %.2f" % (h["exporter"]["p50_ms"], h["exporter"]["p99_ms"]))),
        ("same, with the selection", both(lambda h: "%.2f / %.2f" % (h["selected"]["p50_ms"], h["selected"]["p99_ms"]))),
        ("exporter CPU per scrape, ms (share of a core at 100 ms)",
         both(lambda h: "%.2f (%.2f %%)" % ((h["exporter"]["cpu_ms_per_scrape"],) * 2))),
        ("slowest collectors, median ms", both(top)),
        ("analyzer: entries of the metric set (%s, copied at the start)" % metric_set,
         both(lambda h: "%d" % entries)),
        ("analyzer: series stored (what the metric set selects)", both(lambda h: "%d" % h["analyzer"]["prom_series"])),
        ("analyzer: channels / feature columns",
         both(lambda h: "%d / %d" % (h["analyzer"]["channels_per_host"], h["analyzer"]["features_per_host"]))),
        ("analyzer pass (query + features + scoring), wall p50 / p99 ms (target ≤ 50)",
         both(lambda h: "%.0f / %.0f" % (1e3 * h["analyzer"]["pass_wall_p50_s"], 1e3 * h["analyzer"]["pass_wall_p99_s"]))),
        ("of it, mean: fetch / engine ms",
         both(lambda h: "%.0f / %.0f" % (1e3 * h["analyzer"]["fetch_mean_s"], 1e3 * h["analyzer"]["engine_mean_s"]))),
        ("analyzer CPU per pass, ms", both(lambda h: "%.0f" % (1e3 * h["analyzer"]["cpu_s_per_pass"]))),
        ("fit, s (target ≤ 5), on baseline windows",
         both(lambda h: "%.2f on %d" % (h["analyzer"]["fit_s"], h["analyzer"]["baseline_windows_per_host"]))),
        ("analyzer memory for the host, resident MB",
         both(lambda h: "%.0f" % h["analyzer"]["mb_per_host"])),
        ("of it allocated, MB: held after the passes (target ≤ 50) / the fit's peak above the "
         "baseline",
         both(lambda h: "%s / %s" % (mb(h["analyzer"], "allocated_end_mb_per_host"),
                                     mb(h["analyzer"], "fit_peak_allocated_mb")))),
    ]
    head = "| | big host (generated fixture) | this machine |\n| --- | --- | --- |\n"
    return head + "\n".join("| %s %s" % (k, v) for k, v in rows) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--baseline", default="30m", help="the analyzer's baseline (deploy default 30m)")
    ap.add_argument("--passes", type=int, default=40)
    ap.add_argument("--selection", default=None)
    ap.add_argument("--metric-set", default=os.path.join(ROOT, "deploy", "analyzer.yml"),
                    help="the analyzer's metric set (deploy/analyzer.yml; deploy/analyzer-pruned.yml "
                         "for the generated one)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--compare-families", action="store_true",
                    help="also run each host's analyzer with device families off (analysis.families."
                         "min_devices: 0) and print both, side by side")
    ap.add_argument("--before-bench", default=None,
                    help="an older build's cluster_bench (copied out of target/release/examples): "
                         "run first on the same Prometheus data, and both printed, before → after")
    ap.add_argument("--before-metric-set", default=None, metavar="FILE",
                    help="an older metric set: run first on the same Prometheus data, and both "
                         "printed, before → after")
    ap.add_argument("--fast", default=None, metavar="FILE",
                    help="the analyzer reads what the stack stores at 100 ms: the fast page of "
                         "--metrics.fast FILE (deploy/selection-fast.yml); the full page's run "
                         "is printed beside it")
    args = ap.parse_args()
    if args.before_bench and args.before_metric_set:
        ap.error("--before-bench and --before-metric-set compare one thing each: give one")
    if not args.no_build:
        build()
    selection = args.selection or next(p for p in (os.path.join(ROOT, "deploy", "selection.yml"),
                                                   os.path.join(ROOT, "exporter", "examples", "selection.yml"))
                                       if os.path.exists(p))
    out = args.out or tempfile.mkdtemp(prefix="reveal-big-host-")
    os.makedirs(out, exist_ok=True)
    # Both hosts get the selection and the metric set as they are now.
    shutil.copy(selection, os.path.join(out, "selection.yml"))
    shutil.copy(args.metric_set, os.path.join(out, "analyzer.yml"))
    with open(os.path.join(out, "analyzer.yml")) as f:
        entries = sum(1 for line in f if line.strip().startswith("- expr:"))
    fixture = os.path.join(out, "fixture")
    subprocess.run([sys.executable, os.path.join(HERE, "big_host_fixture.py"), fixture], check=True)
    cmds = {
        "big": [os.path.join(RELEASE, "examples", "fixture_exporter"), os.path.join(fixture, "nvml.json"),
                "--path.procfs=" + os.path.join(fixture, "proc"), "--path.sysfs=" + os.path.join(fixture, "sys"),
                "--no-collector.perf", "--no-collector.msr"],
        "vm": [os.path.join(RELEASE, "reveal-exporter")],
    }
    hosts = {}
    with open(os.path.join(out, "exporters.log"), "w") as log:
        for label, cmd in cmds.items():
            print("%s: %d scrapes, then with %s ..." % (label, args.scrapes, selection), flush=True)
            full = measure(cmd, args.scrapes, log)
            selected = measure(cmd + ["--metrics.selection=" + os.path.join(out, "selection.yml")],
                               args.scrapes, log)
            hosts[label] = {"scrapes": args.scrapes, "shape": shape(full["page"]),
                            "exporter": full, "selected": selected}
            if args.fast:
                hosts[label]["fast"] = measure(cmd + ["--metrics.fast=" + args.fast], args.scrapes, log,
                                               "/metrics?cadence=fast")
    pages = ("exporter", "selected", "fast")
    with open(os.path.join(out, "exporters.json"), "w") as f:  # kept if the analyzer part fails
        json.dump({k: {**h, **{p: {**h[p], "page": None} for p in pages if p in h}}
                   for k, h in hosts.items()}, f, indent=1)
    for label, h in hosts.items():
        page = h["exporter"]["page"]
        if label == "big":
            page = with_cpu_counters(page, h["shape"]["cpus"])
        if args.fast:
            print("%s: analyzer over %s of baseline, the full page ..." % (label, args.baseline), flush=True)
            h["analyzer_full"] = analyze(label + "-full", page, args, out)
            page = h["fast"]["page"]
            if label == "big":
                page = with_cpu_counters(page, h["shape"]["cpus"])
        print("%s: analyzer over %s of baseline ..." % (label, args.baseline), flush=True)
        if args.before_bench or args.before_metric_set:
            h["analyzer_before"], h["analyzer"] = analyze(label, page, args, out, before=True)
        else:
            h["analyzer"] = analyze(label, page, args, out)
        if args.compare_families:
            print("%s: analyzer with device families off ..." % label, flush=True)
            h["analyzer_off"] = analyze(label + "-families-off", page, args, out, FAMILIES_OFF)
    text = table(hosts, selection, args.metric_set, entries)
    if args.compare_families:
        text += "\n" + families_table(hosts)
    if args.before_bench or args.before_metric_set:
        text += "\n" + families_table(hosts, "analyzer_before", "before → after")
    if args.fast:
        text += "\n" + families_table(hosts, "analyzer_full", "full page → fast page")
        text += "\n| fast page: exporter series (bytes), CPU per scrape ms | %s |\n" % " | ".join(
            "%s: %d (%.0f KB), %.2f" % (k, h["fast"]["series"], h["fast"]["bytes"] / 1e3,
                                         h["fast"]["cpu_ms_per_scrape"]) for k, h in hosts.items())
    for h in hosts.values():
        for k in pages:
            if k in h:
                h[k].pop("page")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"selection": selection, "metric_set_entries": entries, "args": vars(args),
                   "hosts": hosts}, f, indent=1)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(text)
    print(text)
    print("big_host_table: results in %s" % out)


if __name__ == "__main__":
    main()
