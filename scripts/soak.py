#!/usr/bin/env python3
"""Soak: the exporter and the analyzer left running under load, watched for growth and errors.

    scripts/soak.py [--minutes M] [--hosts N] [--scrapers S] [--exporter BIN] [--analyzer BIN]

Starts, on loopback ports, N real exporters (N hosts: each its own instance label), one
Prometheus scraping all of them every 100 ms (with the remote-write receiver on), and one
analyzer with the deploy configuration following every host and writing back to Prometheus;
S extra clients scrape the first exporter every 100 ms, each on its own connection. Every
10 s it samples each process's resident memory (VmRSS) and CPU time (/proc/PID/stat), and at
the end prints a table per process: RSS at start and end and its largest, CPU as a share of
one core, and errors: scrapes that failed or were refused (the S clients), the analyzer's
query failures, failed deliveries and checkpoints (its /metrics), and ERROR lines in each log.
The analyzer's warm-up is part of the run, and its memory grows until its trailing
baseline is full (30 minutes by default): for a run that reaches the steady state in
minutes, shorten both (`--baseline 3m --warmup 1m`).

Defaults: 10 minutes, 20 hosts, 10 scrapers, target/release binaries. Needs Prometheus.
It asserts nothing (a measurement, like the benchmarks); docs/benchmarks.md has its figures.
Standard library only.
"""

import argparse
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, what, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("soak: %s exited at start (see its log)" % what)
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("soak: %s not ready at %s" % (what, url))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scraper(port, until, counts, lock):
    conn = None
    nxt = time.monotonic()
    while time.monotonic() < until:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            r.read()
            key = "ok" if r.status == 200 else "refused" if r.status == 503 else "failed"
        except (OSError, http.client.HTTPException):
            key, conn = "failed", None
        with lock:
            counts[key] = counts.get(key, 0) + 1
        nxt += 0.1
        time.sleep(max(0.0, nxt - time.monotonic()))


def self_metric(port, name):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2) as r:
            text = r.read().decode()
    except OSError:
        return None
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith("#"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--hosts", type=int, default=20)
    ap.add_argument("--scrapers", type=int, default=10)
    ap.add_argument("--baseline", help="analysis.baseline (default: the deploy default, 30m); "
                    "the analyzer's memory grows until its baseline is full")
    ap.add_argument("--warmup", help="analysis.warmup (default: the deploy default, 5m)")
    ap.add_argument("--exporter", default=os.path.join(ROOT, "target/release/reveal-exporter"))
    ap.add_argument("--analyzer", default=os.path.join(ROOT, "target/release/reveal-analyzer"))
    a = ap.parse_args()
    if not shutil.which("prometheus"):
        sys.exit("soak: prometheus is not installed (Debian package prometheus)")
    tmp = tempfile.mkdtemp(prefix="reveal-soak-")
    procs = {}
    logs = {}

    def start(name, cmd, cwd=tmp):
        log = open(os.path.join(tmp, name + ".log"), "w")
        logs[name] = log.name
        procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                       start_new_session=True)
        return procs[name]

    try:
        ports = [free_port() for _ in range(a.hosts)]
        for i, p in enumerate(ports):
            start("exporter-%d" % i, [a.exporter, "--web.listen-address=127.0.0.1:%d" % p,
                                      "--log.level=warn"])
        for i, p in enumerate(ports):
            wait_ready("http://127.0.0.1:%d/-/healthy" % p, "exporter %d" % i, procs["exporter-%d" % i])
        prom_port = free_port()
        targets = ", ".join("'127.0.0.1:%d'" % p for p in ports)
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\n"
                    "scrape_configs:\n  - job_name: reveal\n    static_configs:\n"
                    "      - targets: [%s]\n" % targets)
        prom = start("prometheus", ["prometheus", "--config.file=prometheus.yml",
                                    "--storage.tsdb.path=data", "--web.enable-remote-write-receiver",
                                    "--web.listen-address=127.0.0.1:%d" % prom_port])
        wait_ready("http://127.0.0.1:%d/-/ready" % prom_port, "prometheus", prom)
        an_port = free_port()
        cfg = open(os.path.join(ROOT, "deploy/analyzer.yml")).read()
        cfg = cfg.replace("127.0.0.1:19191", "127.0.0.1:%d" % an_port)
        cfg = cfg.replace("127.0.0.1:19090", "127.0.0.1:%d" % prom_port)
        cfg = re.sub(r"  alertmanager:\n    urls: \[[^\]]*\]\n", "", cfg)
        analysis = "".join("  %s: %s\n" % (k, v) for k, v in
                           (("baseline", a.baseline), ("warmup", a.warmup)) if v)
        if analysis:
            cfg += "\nanalysis:\n" + analysis
        with open(os.path.join(tmp, "analyzer.yml"), "w") as f:
            f.write(cfg)
        an = start("analyzer", [a.analyzer, "run", "--config.file=analyzer.yml"])
        wait_ready("http://127.0.0.1:%d/-/healthy" % an_port, "analyzer", an)

        watched = {"exporter-0 (scraped by %d more)" % a.scrapers: procs["exporter-0"].pid,
                   "exporter-1": procs["exporter-1"].pid,
                   "prometheus": prom.pid, "analyzer": an.pid}
        until = time.monotonic() + a.minutes * 60
        counts, lock = {}, threading.Lock()
        ts = [threading.Thread(target=scraper, args=(ports[0], until, counts, lock), daemon=True)
              for _ in range(a.scrapers)]
        for t in ts:
            t.start()
        samples = {k: [] for k in watched}
        t0 = time.monotonic()
        cpu0 = {k: cpu_s(p) for k, p in watched.items()}
        while time.monotonic() < until:
            for k, p in watched.items():
                samples[k].append(rss_kb(p))
            left = until - time.monotonic()
            done = a.minutes * 60 - left
            print("soak: %3.0f%%  analyzer RSS %.1f MB, hosts %s" % (
                100 * done / (a.minutes * 60), samples["analyzer"][-1] / 1024,
                self_metric(an_port, "reveal_analyzer_hosts")), file=sys.stderr, flush=True)
            time.sleep(min(10, max(0.1, left)))
        for t in ts:
            t.join()
        took = time.monotonic() - t0
        for k, p in watched.items():
            samples[k].append(rss_kb(p))
        cpu = {k: (cpu_s(p) - cpu0[k]) / took for k, p in watched.items()}
        errors = {}
        for name, path in logs.items():
            n = sum(1 for line in open(path, errors="replace") if " ERROR " in line or "level=error" in line)
            errors[name] = n
        an_errors = {m: self_metric(an_port, "reveal_analyzer_" + m) for m in
                     ("query_failures_total", "delivery_failures_total", "checkpoint_failures_total")}
        analyzed = self_metric(an_port, "reveal_analyzer_windows_analyzed_total")
        lag = self_metric(an_port, "reveal_analyzer_lag_seconds")
        exited = [n for n, p in procs.items() if p.poll() is not None]

        print("\n%.1f minutes, %d hosts, %d extra scrapers on exporter-0, analyzer baseline %s, warm-up %s\n" % (
            took / 60, a.hosts, a.scrapers, a.baseline or "30m", a.warmup or "5m"))
        print("analyzer RSS every minute (MB): %s\n" % " ".join(
            "%.0f" % (v / 1024) for v in samples["analyzer"][::6]))
        print("| process | RSS start MB | RSS end MB | RSS max MB | CPU (share of one core) | ERROR log lines |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for k in watched:
            s = samples[k]
            name = k.split(" ")[0]
            print("| %s | %.1f | %.1f | %.1f | %.1f %% | %d |" % (
                k, s[0] / 1024, s[-1] / 1024, max(s) / 1024, cpu[k] * 100, errors.get(name, 0)))
        print("\nextra scrapes: %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
        print("analyzer: windows analyzed %s, lag %s s, %s" % (
            analyzed, lag, ", ".join("%s %s" % kv for kv in an_errors.items())))
        print("exporter ERROR lines over all %d exporters: %d" % (
            a.hosts, sum(v for k, v in errors.items() if k.startswith("exporter"))))
        print("processes that exited early: %s" % (", ".join(exited) or "none"))
    finally:
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
