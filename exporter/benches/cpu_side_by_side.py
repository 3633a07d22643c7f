"""CPU per scrape of two or more reveal-exporter binaries, measured side by side.

Starts each binary (default collectors, 127.0.0.1, a free port), then scrapes them in
interleaved rounds, so a busy host slows every binary alike: ROUNDS rounds, each scraping
every binary N times over one keep-alive connection, either every PACE seconds (as Prometheus
would, PACE=0.1) or back to back (PACE=0). A round's CPU is the sum of the process's threads'
run time from /proc/PID/task/*/schedstat (nanoseconds, user and kernel), divided by N; the
median over rounds is reported, with the share of one core that scraping every 100 ms costs.
It asserts nothing (a benchmark, not a test). Standard library only.

    # build the binary of a commit to compare with, beside the working tree:
    git worktree add /tmp/reveal-old <commit> && \\
      cargo build --release -p reveal-exporter --manifest-path /tmp/reveal-old/Cargo.toml \\
        --target-dir /tmp/reveal-old-target
    PACE=0.1 python3 exporter/benches/cpu_side_by_side.py 100 3 \\
      /tmp/reveal-old-target/release/reveal-exporter target/release/reveal-exporter
"""

import http.client
import os
import re
import statistics
import subprocess
import sys
import time

PACE = float(os.environ.get("PACE", "0"))
ACCEPT = os.environ.get(
    "ACCEPT", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
)


def start(binary):
    p = subprocess.Popen(
        [binary, "--web.listen-address", "127.0.0.1:0", "--log.level", "info"],
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = re.sub(r"\x1b\[[0-9;]*m", "", p.stderr.readline())
        m = re.search(r"listening on ([0-9.]+):([0-9]+)", line)
        if m:
            return p, http.client.HTTPConnection(m.group(1), int(m.group(2)), timeout=10)
    p.kill()
    sys.exit(f"{binary} did not start")


def scrape(conn):
    try:
        return scrape_once(conn)
    except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
        # The exporter closes a keep-alive connection idle for 10 s (while others ran).
        conn.close()
        return scrape_once(conn)


def scrape_once(conn):
    conn.request("GET", "/metrics", headers={"Accept": ACCEPT})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    return body


def cpu_ns(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except FileNotFoundError:
            pass  # a thread that ended between listing and reading
    return total


def main():
    n, rounds, binaries = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    procs = [(b, *start(b)) for b in binaries]
    try:
        for b, _, conn in procs:
            for _ in range(20):
                body = scrape(conn)
            series = sum(1 for l in body.decode().splitlines() if l and l[0] != "#")
            print(f"{b}: {series} series, {len(body)} bytes")
        per = {i: [] for i in range(len(procs))}
        for _ in range(rounds):
            for i, (_, p, conn) in enumerate(procs):
                c0 = cpu_ns(p.pid)
                nxt = time.monotonic()
                for _ in range(n):
                    scrape(conn)
                    if PACE:
                        nxt += PACE
                        time.sleep(max(0.0, nxt - time.monotonic()))
                per[i].append((cpu_ns(p.pid) - c0) / n / 1e3)
        how = f"every {PACE * 1000:.0f} ms" if PACE else "back to back"
        print(f"\n{rounds} rounds x {n} scrapes {how}, load average {os.getloadavg()[0]:.1f}\n")
        print("| binary | CPU per scrape, median (rounds) | share of one core at 100 ms |")
        print("| --- | --- | --- |")
        for i, (b, _, _) in enumerate(procs):
            v = per[i]
            rs = ", ".join(f"{x:.0f}" for x in v)
            med = statistics.median(v)
            print(f"| {b} | {med:.0f} µs ({rs}) | {med / 1e3 / 100 * 100:.2f} % |")
    finally:
        for _, p, _ in procs:
            p.kill()


if __name__ == "__main__":
    main()
