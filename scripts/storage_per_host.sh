#!/usr/bin/env bash
# Prometheus storage cost of one host's exporter scraped at 100 ms: runs the exporter and a
# Prometheus on loopback for DURATION seconds (default 300), then snapshots the TSDB (the head
# written out as a block, compressed as it is kept on disk) and divides its size by the run.
#
#   scripts/storage_per_host.sh            # default collectors
#   EXTRA_ARGS="--metrics.selection sel.yml" scripts/storage_per_host.sh
#   FAST=deploy/selection-fast.yml scripts/storage_per_host.sh   # two cadences, as the stack
#
# With FAST, the exporter gets --metrics.fast FAST and Prometheus scrapes it as the stack does
# (rules/prometheus.yml): /metrics?cadence=fast every 100 ms, ?cadence=slow every SLOW (15s).
# EXPORTER may be any command taking the exporter's flags (a wrapper around
# exporter/examples/fixture_exporter for a fixture root).
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  ?*) echo "storage_per_host: takes no arguments, $1 given (see --help)" >&2; exit 2 ;;
esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DURATION=${DURATION:-300}
FAST=${FAST:-}
SLOW=${SLOW:-15s}
EXPORTER=${EXPORTER:-$ROOT/target/release/reveal-exporter}
[ -x "$EXPORTER" ] || { echo "build it first: cargo build --release -p reveal-exporter" >&2; exit 2; }
command -v prometheus >/dev/null || { echo "prometheus not found (apt-get install prometheus)" >&2; exit 2; }
TMP=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
EP=$(free_port); PP=$(free_port)
# shellcheck disable=SC2086
"$EXPORTER" --web.listen-address=127.0.0.1:$EP --log.level=warn ${EXTRA_ARGS:-} \
  ${FAST:+--metrics.fast "$FAST"} &
PIDS+=($!)
if [ -n "$FAST" ]; then
  cat > "$TMP/prometheus.yml" <<CFG
global: { scrape_interval: 100ms, scrape_timeout: 100ms }
scrape_configs:
  - job_name: reveal
    params: { cadence: [fast] }
    static_configs: [{ targets: ["127.0.0.1:$EP"] }]
  - job_name: reveal-slow
    scrape_interval: $SLOW
    scrape_timeout: 5s
    params: { cadence: [slow] }
    static_configs: [{ targets: ["127.0.0.1:$EP"] }]
CFG
else
  cat > "$TMP/prometheus.yml" <<CFG
global: { scrape_interval: 100ms, scrape_timeout: 100ms }
scrape_configs:
  - job_name: reveal
    static_configs: [{ targets: ["127.0.0.1:$EP"] }]
CFG
fi
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
  --web.listen-address=127.0.0.1:$PP --web.enable-admin-api --log.level=warn &
PIDS+=($!)
q() { curl -sG "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" |
  python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "nan")'; }
echo "scraping 127.0.0.1:$EP every 100 ms for ${DURATION}s ..." >&2
sleep "$DURATION"
SERIES=$(q 'sum(scrape_samples_scraped{job=~"reveal|reveal-slow"})')
FAST_SERIES=$(q 'scrape_samples_scraped{job="reveal"}')
SAMPLES=$(q "sum(sum_over_time(scrape_samples_scraped{job=~\"reveal|reveal-slow\"}[$((DURATION + 30))s]))")
# A snapshot writes the head as a block: its chunks and index are what the data costs on disk.
SNAP=$(curl -s -XPOST "http://127.0.0.1:$PP/api/v1/admin/tsdb/snapshot" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["name"])')
BYTES=$(du -sb "$TMP/data/snapshots/$SNAP" | cut -f1)
SPS=$(python3 -c "print($SAMPLES / $DURATION)")
BPS=$(python3 -c "print($BYTES / $DURATION)")
python3 - "$SERIES" "$FAST_SERIES" "$SPS" "$BPS" <<'PY'
import sys
series, fast, sps, bps = (float(x) for x in sys.argv[1:])
print("| series (at 100 ms) | samples/s | block bytes/s (chunks + index) | bytes per sample |")
print("| ---: | ---: | ---: | ---: |")
print(f"| {series:.0f} ({fast:.0f}) | {sps:.0f} | {bps/1000:.1f} KB/s | {bps/sps if sps else float('nan'):.2f} |")
PY
