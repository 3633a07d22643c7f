#!/usr/bin/env bash
# Records real telemetry of this machine with two real faults in it, for the analyzer's
# regression test (analyzer/tests/online_real.rs, fixture in analyzer/tests/fixtures/real/).
#
# reveal-exporter (release build) is scraped every 100 ms by Debian's Prometheus, both on
# loopback at random ports, with the scrape job of rules/prometheus.yml. After QUIET seconds
# of quiet come a CPU hog (`stress-ng --cpu 2 --timeout 20s`), GAP seconds of quiet, a write
# burst (16 MiB `dd` with O_DIRECT every 50 ms for BURST seconds, to a temporary file that is
# removed after), and GAP seconds of quiet. Then every expression of the metric set in
# deploy/analyzer.yml is evaluated with `query_range` at the analyzer's 100 ms step, and the
# result is written as:
#
#   trace.csv.gz    time column `t_ms`, one column per returned series (see below)
#   metric-set.yml  subsystem and kind of each column, from the expression it came from
#   faults.json     each fault's command and [start_ms, end_ms], load averages, the host
#
# Column names: a series that keeps its `__name__` is named by it; a series without one (the
# result of a function) takes the entry's `name:`, else the counter inside `rate(x_total[1s])`
# as `x:rate1s` — the CSV format reads any `_total` column as a raw counter, and these are
# already rates. Labels are kept (the `instance` label tells the host). Values carry 6
# significant digits; series with no value at all are left out.
#
#   scripts/record_fault_trace.sh [OUT_DIR]   # default analyzer/tests/fixtures/real
#
# QUIET (210), GAP (40), BURST (15) override the durations in seconds, for a dry run.
# Nothing else should run on the machine meanwhile: everything else is recorded as well.
# Needs: cargo, prometheus, stress-ng, dd, curl, python3 with PyYAML
# (scripts/requirements-record.txt).
set -euo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) echo "record_fault_trace: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "record_fault_trace: one OUT_DIR at most (see --help)" >&2; exit 2; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${1:-$ROOT/analyzer/tests/fixtures/real}
QUIET=${QUIET:-210}
GAP=${GAP:-40}
BURST=${BURST:-15}
for t in prometheus stress-ng dd curl python3; do
  command -v "$t" >/dev/null || { echo "record_fault_trace: $t not found" >&2; exit 2; }
done
python3 -c 'import yaml' 2>/dev/null ||
  { echo "record_fault_trace: python3 lacks PyYAML (pip install -r scripts/requirements-record.txt)" >&2; exit 2; }

say() { printf '%s record_fault_trace: %s\n' "$(date -u +%T)" "$*" >&2; }
now_ms() { date +%s%3N; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/reveal-record.XXXXXX")
PIDS=()
# Stops what this script started, politely and then for good, within about 5 s.
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building reveal-exporter (release)"
(cd "$ROOT" && cargo build --release -q -p reveal-exporter)
TARGET=$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
EXPORTER="$TARGET/release/reveal-exporter"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
EP=$(free_port)
PP=$(free_port)

# The stack's 100 ms scrape job for the exporter (interval, timeout), pointed at this run's port.
python3 - "$ROOT/rules/prometheus.yml" "127.0.0.1:$EP" >"$TMP/prometheus.yml" <<'PY'
import sys, yaml
conf = yaml.safe_load(open(sys.argv[1]))
job = next(j for j in conf["scrape_configs"] if j["job_name"] == "reveal")
job["static_configs"] = [{"targets": [sys.argv[2]]}]
# Every series at 100 ms: this exporter serves one page (no --metrics.fast).
job.pop("params", None)
yaml.safe_dump({"global": conf["global"], "scrape_configs": [job]}, sys.stdout)
PY

"$EXPORTER" --web.listen-address="127.0.0.1:$EP" >"$TMP/exporter.log" 2>&1 &
PIDS+=($!)
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data" \
  --storage.tsdb.retention.time=1d --web.listen-address="127.0.0.1:$PP" \
  >"$TMP/prometheus.log" 2>&1 &
PIDS+=($!)

PROM="http://127.0.0.1:$PP"
# Waits until Prometheus holds a successful scrape of the exporter (at most 60 s).
for i in $(seq 600); do
  if curl -sfG "$PROM/api/v1/query" --data-urlencode 'query=up{job="reveal"} == 1' 2>/dev/null |
    grep -q '"value"'; then
    break
  fi
  [ "$i" = 600 ] && { tail -n 20 "$TMP"/*.log >&2; say "no successful scrape within 60 s"; exit 1; }
  sleep 0.1
done
START_MS=$(now_ms)
LOAD_START=$(loadavg)
say "scraping 127.0.0.1:$EP every 100 ms into 127.0.0.1:$PP; ${QUIET}s of quiet (load $LOAD_START)"
sleep "$QUIET"

LOAD_CPU=$(loadavg)
CPU_START=$(now_ms)
say "fault 1: stress-ng --cpu 2 --timeout 20s (load before $LOAD_CPU)"
timeout 40 stress-ng --cpu 2 --timeout 20s --quiet &
PIDS+=($!)
wait "${PIDS[-1]}" || say "stress-ng exited with $?"
unset 'PIDS[-1]' # finished: its pid may be reused, so cleanup must not signal it
CPU_END=$(now_ms)
say "${GAP}s of quiet"
sleep "$GAP"

LOAD_BURST=$(loadavg)
BURST_FILE="$TMP/burst.bin"
say "fault 2: 16 MiB O_DIRECT writes every 50 ms for ${BURST}s (load before $LOAD_BURST)"
BURST_START=$(now_ms)
timeout "$BURST" bash -c 'while :; do
  dd if=/dev/zero of="$0" bs=1M count=16 oflag=direct conv=notrunc status=none || exit 1
  sleep 0.05
done' "$BURST_FILE" &
PIDS+=($!)
wait "${PIDS[-1]}" || true # timeout ends the loop with 124
unset 'PIDS[-1]'
BURST_END=$(now_ms)
rm -f "$BURST_FILE"
say "${GAP}s of quiet"
sleep "$GAP"
END_MS=$(now_ms)
LOAD_END=$(loadavg)
say "recorded $(((END_MS - START_MS) / 1000))s (load at the end $LOAD_END); exporting"

mkdir -p "$TMP/out"
python3 "$ROOT/scripts/export_trace.py" "$ROOT/deploy/analyzer.yml" "$PROM" "$START_MS" "$END_MS" "$TMP/out"

python3 - "$TMP/out/faults.json" <<PY
import json, sys
json.dump({
    "recorded_by": "scripts/record_fault_trace.sh",
    "host": {"kernel": "$(uname -r)", "cpus": $(nproc)},
    "exporter_commit": "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)",
    "start_ms": $START_MS,
    "end_ms": $END_MS,
    "faults": [
        {"name": "cpu_hog", "command": "stress-ng --cpu 2 --timeout 20s",
         "start_ms": $CPU_START, "end_ms": $CPU_END},
        {"name": "write_burst",
         "command": "dd if=/dev/zero of=FILE bs=1M count=16 oflag=direct conv=notrunc, every 50 ms for ${BURST}s",
         "start_ms": $BURST_START, "end_ms": $BURST_END},
    ],
    "load_average": {"start": "$LOAD_START", "before_cpu_hog": "$LOAD_CPU",
                     "before_write_burst": "$LOAD_BURST", "end": "$LOAD_END"},
}, open(sys.argv[1], "w"), indent=2)
PY

mkdir -p "$OUT_DIR"
cp "$TMP/out/trace.csv.gz" "$TMP/out/metric-set.yml" "$TMP/out/faults.json" "$OUT_DIR/"
say "wrote $OUT_DIR: $(du -b "$OUT_DIR/trace.csv.gz" | cut -f1) bytes of trace.csv.gz"
