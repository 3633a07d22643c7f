"""Responsiveness of reveal-exporter binaries under many scrapers, measured side by side.

For each binary (default collectors, 127.0.0.1, a free port), in turn:

1. unloaded: one client scrapes every 100 ms and another asks /-/healthy every 50 ms for
   SECONDS; the latency of each request (send to last byte) is recorded;
2. loaded: the same two probes while a separate process runs SCRAPERS clients, each scraping
   every 100 ms over its own keep-alive connection, and holds IDLE connections open that send
   nothing (reopened when the exporter closes them).

It prints, per binary, scrape and health latency (p50, p99, max) unloaded and loaded, the
ratio of loaded to unloaded scrape p99, the scrapes refused with 503, failed requests, and
the exporter's CPU (share of one core, from /proc/PID/task/*/schedstat) in each phase.
Binaries run one after the other in the same invocation, alternating phases, so the host's
noise touches each alike. It asserts nothing (a benchmark, not a test). Standard library
only.

    python3 exporter/benches/serving_under_load.py [SECONDS] [SCRAPERS] [IDLE] BINARY...
    # e.g. the previous commit against the working tree:
    git worktree add /tmp/reveal-old HEAD~1 && cargo build --release -p reveal-exporter \\
      --manifest-path /tmp/reveal-old/Cargo.toml --target-dir /tmp/reveal-old-target
    python3 exporter/benches/serving_under_load.py 20 50 200 \\
      /tmp/reveal-old-target/release/reveal-exporter target/release/reveal-exporter
"""

import http.client
import multiprocessing
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_side_by_side import ACCEPT, cpu_ns, start as start_exporter  # noqa: E402  (same folder)



def start(binary):
    """Starts `binary` (as cpu_side_by_side does) and returns it with its port."""
    p, conn = start_exporter(binary)
    threading.Thread(target=p.stderr.read, daemon=True).start()  # keep its log pipe drained
    return p, conn.port


def probe(port, path, every, until, out, refused, failed):
    """Requests `path` every `every` seconds until `until`, appending latencies to `out`."""
    conn = None
    nxt = time.monotonic()
    while time.monotonic() < until:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            t0 = time.monotonic()
            conn.request("GET", path, headers={"Accept": ACCEPT})
            r = conn.getresponse()
            r.read()
            dt = time.monotonic() - t0
            if r.status == 503:
                refused.append(1)
            elif r.status == 200:
                out.append(dt)
            else:
                failed.append(r.status)
        except (OSError, http.client.HTTPException):
            failed.append("conn")
            conn = None
        nxt += every
        time.sleep(max(0.0, nxt - time.monotonic()))


def load(port, scrapers, idle, seconds, counts):
    """The load, in its own process: `scrapers` threads at 100 ms and `idle` silent sockets."""
    until = time.monotonic() + seconds
    lat, refused, failed = [], [], []
    threads = [
        threading.Thread(
            target=probe, args=(port, "/metrics", 0.1, until, lat, refused, failed), daemon=True
        )
        for _ in range(scrapers)
    ]
    for i, t in enumerate(threads):
        time.sleep(0.1 / max(1, scrapers))  # spread over one interval, as Prometheus would
        t.start()
    socks = []
    while time.monotonic() < until:
        socks = [s for s in socks if alive(s)]
        while len(socks) < idle:
            try:
                socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(0.5)
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    counts.put((len(lat), len(refused), len(failed)))


def alive(s):
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q / 100 * (len(v) - 1))))]


def phase(pid, port, seconds, scrapers, idle):
    until = time.monotonic() + seconds
    scrape, health, refused, failed = [], [], [], []
    counts = multiprocessing.Queue()
    loader = None
    if scrapers or idle:
        loader = multiprocessing.Process(target=load, args=(port, scrapers, idle, seconds, counts))
        loader.start()
        time.sleep(1.0)  # let the load build up before measuring
        until = time.monotonic() + seconds - 1.5
    c0, t0 = cpu_ns(pid), time.monotonic()
    ts = [
        threading.Thread(target=probe, args=(port, "/metrics", 0.1, until, scrape, refused, failed)),
        threading.Thread(target=probe, args=(port, "/-/healthy", 0.05, until, health, [], failed)),
    ]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    cpu = (cpu_ns(pid) - c0) / 1e9 / (time.monotonic() - t0)
    load_counts = (0, 0, 0)
    if loader:
        loader.join()
        load_counts = counts.get()
    return {
        "scrape": scrape,
        "health": health,
        "refused": len(refused) + load_counts[1],
        "failed": len(failed) + load_counts[2],
        "load_scrapes": load_counts[0],
        "cpu": cpu,
    }


def main():
    args = sys.argv[1:]
    nums = []
    while args and args[0].isdigit():
        nums.append(int(args.pop(0)))
    seconds, scrapers, idle = (nums + [20, 50, 200][len(nums):])[:3]
    if not args:
        sys.exit(__doc__)
    results = {}
    for b in args:
        p, port = start(b)
        try:
            time.sleep(1)
            results[b] = (phase(p.pid, port, seconds, 0, 0), phase(p.pid, port, seconds, scrapers, idle))
        finally:
            p.kill()
            p.wait()
    ms = lambda v: "%.1f" % (v * 1000)
    print("\n%d s per phase; loaded: %d scrapers at 100 ms + %d idle connections\n" % (seconds, scrapers, idle))
    print("| binary | scrape p50 / p99 / max ms, unloaded | loaded | p99 loaded / unloaded | /-/healthy p50 / p99 / max ms, unloaded | loaded | 503s | failed | load scrapes served | CPU, unloaded / loaded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for b, (u, l) in results.items():
        trio = lambda v: " / ".join(ms(pct(v, q)) for q in (50, 99, 100))
        ratio = pct(l["scrape"], 99) / pct(u["scrape"], 99) if u["scrape"] else float("nan")
        print(
            "| %s | %s | %s | %.2f | %s | %s | %d | %d | %d | %.1f%% / %.1f%% |"
            % (b, trio(u["scrape"]), trio(l["scrape"]), ratio, trio(u["health"]), trio(l["health"]),
               l["refused"], u["failed"] + l["failed"], l["load_scrapes"], u["cpu"] * 100, l["cpu"] * 100)
        )


if __name__ == "__main__":
    main()
