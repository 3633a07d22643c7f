#!/usr/bin/env bash
# The exporter's scrape cost, side by side with Debian's prometheus-node-exporter:
#  (a) in-process full-scrape latency over N renders (cargo bench target `scrape`);
#  (b) both exporters served on random loopback ports and scraped at the same time every
#      INTERVAL seconds for DURATION seconds: series and bytes per scrape, scrape latency,
#      CPU seconds per scrape and % of one core.
# Usage: exporter/benches/scrape_vs_node_exporter.sh   (env: INTERVAL=0.1 DURATION=60 REVEAL_BENCH_N=2000)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
cd "$(dirname "$0")/../.."
INTERVAL=${INTERVAL:-0.1}
DURATION=${DURATION:-60}
NODE_EXPORTER=${NODE_EXPORTER:-/usr/bin/prometheus-node-exporter}
[ -x "$NODE_EXPORTER" ] || { echo "missing $NODE_EXPORTER (Debian package prometheus-node-exporter)" >&2; exit 1; }

echo "== command: INTERVAL=$INTERVAL DURATION=$DURATION REVEAL_BENCH_N=${REVEAL_BENCH_N:-2000} exporter/benches/scrape_vs_node_exporter.sh ($(git rev-parse --short HEAD 2>/dev/null || echo no-git))"
echo "== host: $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "== node_exporter: $("$NODE_EXPORTER" --version 2>&1 | head -1)"
echo "== (a) in-process renders"
cargo bench -q -p reveal-exporter --bench scrape 2>/dev/null

echo "== (b) served, ${INTERVAL}s scraping for ${DURATION}s"
cargo build -q --release -p reveal-exporter
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
P1=$(free_port); P2=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

REVEAL_CMD=(target/release/reveal-exporter --web.listen-address="127.0.0.1:$P1" --log.level=error)
# node_exporter's collectors closest to Reveal's defaults (1.5 has no softirqs collector;
# tcpstat is off, as Reveal's is by default); its own go_/process_ metrics off.
NODE_CMD=("$NODE_EXPORTER" --web.listen-address="127.0.0.1:$P2" --log.level=warn
  --web.disable-exporter-metrics --collector.disable-defaults
  --collector.cpu --collector.stat --collector.interrupts --collector.cpufreq
  --collector.meminfo --collector.vmstat --collector.meminfo_numa --collector.diskstats
  --collector.netdev --collector.netstat --collector.sockstat
  --collector.infiniband --collector.hwmon --collector.rapl)
"${REVEAL_CMD[@]}" & pids+=($!); REVEAL_PID=$!
"${NODE_CMD[@]}" 2>/dev/null & pids+=($!); NODE_PID=$!
for port in "$P1" "$P2"; do
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/metrics" -o /dev/null && break; sleep 0.1; done
done
echo "reveal-exporter: ${REVEAL_CMD[*]}"
echo "node_exporter:   ${NODE_CMD[*]}"
python3 exporter/benches/scrape_loop.py --interval "$INTERVAL" --duration "$DURATION" \
  "reveal-exporter=$REVEAL_PID=http://127.0.0.1:$P1/metrics" \
  "node_exporter=$NODE_PID=http://127.0.0.1:$P2/metrics"
