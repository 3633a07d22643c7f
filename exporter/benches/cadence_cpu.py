#!/usr/bin/env python3
"""Exporter CPU per scrape of each cadence's page, two or more builds side by side.

    python3 exporter/benches/cadence_cpu.py [--host vm|big] [--scrapes 100] [--rounds 3]
        [--fast deploy/selection-fast.yml] [--fixture DIR] BUILD_DIR[+FLAG...] ...

Each BUILD_DIR holds `reveal-exporter` (the VM, --host vm: this machine's /proc and /sys)
or `fixture_exporter` (--host big: the big-host fixture of scripts/big_host_fixture.py in
DIR, served with its GPUs replayed, perf and msr off, as scripts/big_host_table.py does;
run scripts/big_host_mover.py DIR beside it to move its counters); flags after a `+` are
added to that build's command (`after+--collector.interrupts.min-interval-ms=1000`). Every build is started
with `--metrics.fast FAST` unless its flags name its own (`before+--metrics.fast=OLD.yml`: a
build measured with the fast file of its release), and scraped in interleaved rounds, so that a busy host slows
every build alike: each round scrapes each build's `?cadence=fast` page --scrapes times,
one every 100 ms on one keep-alive connection as Prometheus does, then its `?cadence=slow`
page --scrapes/10 times, every 100 ms too (the stack scrapes it every 15 s; back to back
would measure the same work). CPU is the process's user + system time, its threads' run time from
/proc/PID/task/*/schedstat (as exporter/benches/cpu_side_by_side.py), per scrape; the median over rounds is
printed, with what the stack pays at 100 ms: the fast page plus the slow page's cost / 150.
A measurement, asserts nothing. Standard library only.
"""

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
          "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # Prometheus 2.42's


def cpu_s(pid):
    """The process's CPU time so far: its threads' run time from /proc/PID/task/*/schedstat
    (nanoseconds, user and kernel; /proc/PID/stat counts in 10 ms ticks)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended between listing and reading
    return total / 1e9


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(cmd):
    port = free_port()
    p = subprocess.Popen(cmd + ["--web.listen-address=127.0.0.1:%d" % port],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(200):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/-/healthy")
            conn.getresponse().read()
            return p, port
        except OSError:
            if p.poll() is not None:
                sys.exit("%s exited: %s" % (cmd[0], p.returncode))
            time.sleep(0.1)
    p.kill()
    sys.exit("%s did not start" % cmd[0])


def scrape(conn, port, cadence):
    for attempt in (0, 1):
        try:
            conn.request("GET", "/metrics?cadence=" + cadence, headers={"Accept": ACCEPT})
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200, (r.status, body[:200])
            return conn, body
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # the exporter closes a keep-alive connection left idle while the others ran
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    raise RuntimeError("scrape failed")


def paced(pid, conn, port, cadence, n):
    """CPU seconds per scrape of n scrapes every 100 ms."""
    c0 = cpu_s(pid)
    nxt = time.monotonic()
    body = b""
    for _ in range(n):
        conn, body = scrape(conn, port, cadence)
        nxt += 0.1
        time.sleep(max(0.0, nxt - time.monotonic()))
    return conn, (cpu_s(pid) - c0) / n, body


def series(body):
    return sum(1 for line in body.decode().splitlines() if line and line[0] != "#")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", choices=["vm", "big"], default="vm")
    ap.add_argument("--fixture", default="/tmp/big")
    ap.add_argument("--fast", default=os.path.join(ROOT, "deploy", "selection-fast.yml"))
    ap.add_argument("--scrapes", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("builds", nargs="+")
    args = ap.parse_args()
    procs = []
    for spec in args.builds:
        b, *flags = spec.split("+")
        if args.host == "vm":
            cmd = [os.path.join(b, "reveal-exporter")]
        else:
            f = args.fixture
            cmd = [os.path.join(b, "fixture_exporter"), os.path.join(f, "nvml.json"),
                   "--path.procfs=" + os.path.join(f, "proc"), "--path.sysfs=" + os.path.join(f, "sys"),
                   "--no-collector.perf", "--no-collector.msr"]
        own = any(fl.startswith("--metrics.fast") for fl in flags)
        p, port = start(cmd + flags + ([] if own else ["--metrics.fast=" + args.fast]))
        procs.append([spec, p, port, http.client.HTTPConnection("127.0.0.1", port, timeout=10)])
    try:
        shape = {}
        for entry in procs:
            for cadence in ("fast", "slow"):
                for _ in range(10):
                    entry[3], body = scrape(entry[3], entry[2], cadence)
                shape[(entry[0], cadence)] = (series(body), len(body))
        fast = {e[0]: [] for e in procs}
        slow = {e[0]: [] for e in procs}
        load0 = os.getloadavg()[0]
        t0 = time.strftime("%H:%M:%S", time.gmtime())
        for _ in range(args.rounds):
            for entry in procs:
                b, p, port, conn = entry
                conn, c, _ = paced(p.pid, conn, port, "fast", args.scrapes)
                fast[b].append(c)
                conn, c, _ = paced(p.pid, conn, port, "slow", max(10, args.scrapes // 10))
                slow[b].append(c)
                entry[3] = conn
        t1 = time.strftime("%H:%M:%S", time.gmtime())
        print("\n%s, %s–%s UTC, load average %.1f at the start, %.1f at the end; %d rounds of %d fast "
              "and %d slow scrapes every 100 ms\n" % (args.host, t0, t1, load0, os.getloadavg()[0],
                                                      args.rounds, args.scrapes, max(10, args.scrapes // 10)))
        print("| build | fast page: series (bytes) | fast: CPU per scrape, ms (rounds) | slow page: series (bytes) "
              "| slow: CPU per scrape, ms | at 100 ms: fast + slow / 150, ms (share of a core) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for b, *_ in procs:
            f, s = statistics.median(fast[b]), statistics.median(slow[b])
            total = f + s / 150
            print("| %s | %d (%.0f KB) | %.2f (%s) | %d (%.0f KB) | %.2f | %.2f (%.2f %%) |" % (
                b, shape[(b, "fast")][0], shape[(b, "fast")][1] / 1e3, f * 1e3,
                ", ".join("%.2f" % (x * 1e3) for x in fast[b]), shape[(b, "slow")][0],
                shape[(b, "slow")][1] / 1e3, s * 1e3, total * 1e3, total * 1e3 / 100 * 100))
    finally:
        for _, p, _, _ in procs:
            p.terminate()
            p.wait()


if __name__ == "__main__":
    main()
