#!/usr/bin/env python3
"""Scrapes exporters at a fixed interval for a bounded time, like Prometheus would, and
reports per target: series and bytes per scrape, scrape latency, and the exporter process's
CPU time per scrape (utime + stime from /proc/<pid>/stat, before and after).

Usage: scrape_loop.py --interval 0.1 --duration 60 NAME=PID=URL [NAME=PID=URL ...]
Standard library only (see requirements.txt). All targets are scraped in the same minute,
each from its own thread, with the Accept header Prometheus 2.x sends.
"""
import argparse
import http.client
import os
import statistics
import threading
import time
import urllib.parse

ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
          "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        # The command name may contain spaces; fields after the closing parenthesis are fixed.
        rest = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(rest[11]), int(rest[12])
    return (utime + stime) / CLK_TCK


class Target:
    def __init__(self, spec):
        self.name, pid, self.url = spec.split("=", 2)
        self.pid = int(pid)
        u = urllib.parse.urlsplit(self.url)
        self.host, self.port, self.path = u.hostname, u.port, u.path or "/metrics"
        self.latencies, self.bytes, self.series, self.errors = [], [], [], 0
        self.content_type = ""

    def scrape(self, conn):
        t0 = time.perf_counter()
        conn.request("GET", self.path, headers={"Accept": ACCEPT})
        resp = conn.getresponse()
        body = resp.read()
        dt = time.perf_counter() - t0
        if resp.status != 200:
            raise RuntimeError(f"{self.name}: HTTP {resp.status}")
        self.content_type = resp.getheader("Content-Type", "")
        self.latencies.append(dt)
        self.bytes.append(len(body))
        self.series.append(sum(1 for l in body.split(b"\n") if l and not l.startswith(b"#")))

    def run(self, interval, duration, start_barrier):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        self.scrape(conn)  # warm up: connection, first-scrape allocations
        start_barrier.wait()
        self.cpu0, self.t0 = cpu_seconds(self.pid), time.monotonic()
        next_at = self.t0
        end = self.t0 + duration
        while True:
            next_at += interval
            if next_at > end:
                break
            try:
                self.scrape(conn)
            except Exception:  # count and reconnect; a failed scrape is reported, not fatal
                self.errors += 1
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        self.cpu1, self.t1 = cpu_seconds(self.pid), time.monotonic()
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--interval", type=float, default=0.1)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("targets", nargs="+")
    a = ap.parse_args()
    targets = [Target(s) for s in a.targets]
    barrier = threading.Barrier(len(targets))
    threads = [threading.Thread(target=t.run, args=(a.interval, a.duration, barrier)) for t in targets]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    rows = []
    for t in targets:
        n = len(t.latencies) - 1  # the warm-up scrape is outside the CPU window
        cpu = t.cpu1 - t.cpu0
        wall = t.t1 - t.t0
        lat = sorted(t.latencies[1:])
        rows.append(dict(
            name=t.name, scrapes=n, errors=t.errors, series=statistics.median(t.series),
            bytes=statistics.median(t.bytes), median_ms=statistics.median(lat) * 1e3,
            p99_ms=lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))] * 1e3,
            cpu_ms=cpu / n * 1e3 if n else float("nan"), core_pct=cpu / wall * 100,
            ctype=t.content_type.split(";")[0]))
    print(f"\n{a.interval * 1e3:.0f} ms scraping for {a.duration:.0f} s, all targets at once "
          f"(CPU from /proc/<pid>/stat, {CLK_TCK} ticks/s)\n")
    print("| exporter | scrapes | failed | series/scrape | bytes/scrape | median ms | p99 ms | CPU ms/scrape | % of one core | format |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for r in rows:
        print(f"| {r['name']} | {r['scrapes']} | {r['errors']} | {r['series']:.0f} | {r['bytes']:.0f} | "
              f"{r['median_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_ms']:.2f} | {r['core_pct']:.2f} | {r['ctype']} |")
    if len(rows) >= 2:
        a0, b0 = rows[0], rows[1]
        def ratio(k):
            return a0[k] / b0[k] if b0[k] else float("nan")
        print(f"\n{a0['name']} / {b0['name']}: series {ratio('series'):.2f}x, bytes {ratio('bytes'):.2f}x, "
              f"median latency {ratio('median_ms'):.2f}x, CPU per scrape {ratio('cpu_ms'):.2f}x, "
              f"% core {ratio('core_pct'):.2f}x")


if __name__ == "__main__":
    main()
