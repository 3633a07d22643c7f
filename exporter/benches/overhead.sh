#!/usr/bin/env bash
# Cost of reveal-exporter on this host, with every collector on (DESIGN.md quality bars):
#   1. full scrape latency: median (and p90, p99) of SCRAPES sequential scrapes over one
#      keep-alive connection, measured by the client (collectors + encoding + HTTP);
#   2. CPU at 100 ms scraping for CPU_SECONDS: the exporter's utime+stime over wall time,
#      in percent of one core (bar: <= 1 %);
#   3. RSS over RSS_SECONDS of 100 ms scraping: VmRSS at start and end, min and max.
# It prints a table; it asserts nothing (a benchmark, not a test). CPU here is utime+stime in
# clock ticks (10 ms each: take 60 s or more); to compare two builds on a busy host, use
# cpu_side_by_side.py, which interleaves them and reads nanosecond run times.
#
#   exporter/benches/overhead.sh                 # 1000 scrapes, 60 s CPU, 600 s RSS
#   SCRAPES=200 CPU_SECONDS=10 RSS_SECONDS=30 exporter/benches/overhead.sh   # quick look
#   MODE=default exporter/benches/overhead.sh    # only the collectors on by default
#
# Needs: cargo, python3 (standard library only). Listens on 127.0.0.1, a free port.
set -euo pipefail
cd "$(dirname "$0")/../.."

SCRAPES=${SCRAPES:-1000}
CPU_SECONDS=${CPU_SECONDS:-60}
RSS_SECONDS=${RSS_SECONDS:-600}
INTERVAL=${INTERVAL:-0.1}
EXTRA_ARGS=${EXTRA_ARGS:-}

cargo build --release -q -p reveal-exporter
BIN=${BIN:-target/release/reveal-exporter}

# MODE=all (default): every collector in the table on, whatever its default;
# MODE=default: the collectors on by default (what a plain `reveal-exporter` runs).
COLLECTORS=()
if [ "${MODE:-all}" = all ]; then
  mapfile -t COLLECTORS < <("$BIN" --help | grep -oE -- '^ +--collector\.[a-z0-9_]+$' | grep -v disable-defaults | tr -d ' ')
fi
LOG=$(mktemp)
# shellcheck disable=SC2086
"$BIN" --web.listen-address 127.0.0.1:0 --log.level info "${COLLECTORS[@]}" $EXTRA_ARGS 2>"$LOG" &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
ADDR=""
for _ in $(seq 100); do
  ADDR=$(sed 's/\x1b\[[0-9;]*m//g' "$LOG" | grep -oE 'listening on [0-9.]+:[0-9]+' | awk '{print $3}' || true)
  [ -n "$ADDR" ] && break
  sleep 0.1
done
[ -n "$ADDR" ] || { echo "exporter did not start:"; cat "$LOG"; exit 1; }

python3 - "$ADDR" "$PID" "$SCRAPES" "$CPU_SECONDS" "$RSS_SECONDS" "$INTERVAL" <<'EOF'
import http.client, os, statistics, sys, time

addr, pid, scrapes, cpu_s, rss_s, interval = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
host, port = addr.rsplit(":", 1)
conn = http.client.HTTPConnection(host, int(port), timeout=10)
tick = os.sysconf("SC_CLK_TCK")
ACCEPT = os.environ.get("ACCEPT", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")

def scrape():
    # What Prometheus sends: OpenMetrics preferred (no text-format rewrite in the exporter).
    conn.request("GET", "/metrics", headers={"Accept": ACCEPT})
    r = conn.getresponse()
    body = r.read()
    assert r.status == 200, r.status
    return body

def cpu_ticks():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]), int(f[12])  # utime, stime (fields 14 and 15)

def rss_kib():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1])

def paced(seconds, on_tick=None):
    """Scrapes every `interval` seconds for `seconds`, as Prometheus would (no catch-up burst)."""
    n, start = 0, time.monotonic()
    nxt = start
    while time.monotonic() - start < seconds:
        scrape(); n += 1
        if on_tick: on_tick()
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
    return n, time.monotonic() - start

for _ in range(20):
    body = scrape()
series = sum(1 for l in body.decode().splitlines() if l and not l.startswith("#"))
size = len(body)
ok = [l for l in body.decode().splitlines() if l.startswith("reveal_exporter_collector_success{")]

lat = []
for _ in range(scrapes):
    t = time.perf_counter(); scrape(); lat.append((time.perf_counter() - t) * 1e3)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]

(u0, s0), w0 = cpu_ticks(), time.monotonic()
n_cpu, _ = paced(cpu_s)
(u1, s1), wall = cpu_ticks(), time.monotonic() - w0
pct = lambda t: t / tick / wall * 100
cpu_pct, user_pct, sys_pct = pct(u1 - u0 + s1 - s0), pct(u1 - u0), pct(s1 - s0)

rss0 = rss_kib(); rss = [rss0]; last = [time.monotonic()]
def sample():
    if time.monotonic() - last[0] >= 10:
        rss.append(rss_kib()); last[0] = time.monotonic()
n_rss, dur = paced(rss_s, sample)
rss1 = rss_kib(); rss.append(rss1)

print(f"| what | value |")
print(f"| --- | --- |")
print(f"| series per scrape | {series} ({size} bytes, Accept: {ACCEPT.split(',')[0]}) |")
succ = ", ".join(l.split('"')[1] + "=" + l.split()[-1][:1] for l in ok)
print(f"| collector success | {succ} |")
print(f"| scrape latency, {scrapes} sequential | median {statistics.median(lat):.3f} ms, p90 {q(0.9):.3f} ms, p99 {q(0.99):.3f} ms, max {lat[-1]:.3f} ms |")
print(f"| CPU at {interval*1000:.0f} ms for {cpu_s:.0f} s ({n_cpu} scrapes) | {cpu_pct:.2f} % of one core (user {user_pct:.2f} %, system {sys_pct:.2f} %); {(u1-u0+s1-s0)/tick/n_cpu*1e3:.2f} ms CPU per scrape |")
print(f"| RSS over {dur:.0f} s at {interval*1000:.0f} ms ({n_rss} scrapes) | start {rss0} KiB, end {rss1} KiB, min {min(rss)} KiB, max {max(rss)} KiB |")
EOF
