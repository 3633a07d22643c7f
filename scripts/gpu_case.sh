#!/usr/bin/env bash
# Reveal's GPU case (issue: the paper's case studies), recorded on a host with an NVIDIA GPU and
# its driver: a steady GPU job runs throughout (scripts/gpu_load.py: bf16 matrix products fed
# by host-to-device copies); after the warm-up the GPU's power is capped at its lowest allowed
# limit for a while (`nvidia-smi -pl`), then its SM clock is locked at half its maximum
# (`nvidia-smi -lgc`). The job keeps the GPU fully busy through both: only power, clocks,
# throttle reasons and the job's own step rate change. A fault the driver refuses is skipped
# and listed as such. Last, a neighbour keeps every host CPU busy (one bounded busy loop per
# CPU) while the job runs: a CPU fault on a many-core GPU host, which the job's own thread
# competes with.
#
# The real exporter is scraped every 100 ms by a real Prometheus (series of the metric names
# the analyzer's metric set uses are kept). The run is written in scripts/evaluate.sh's
# --keep-data format, so it is scored offline by the analyzer build of your choice:
#
#   scripts/gpu_case.sh --out DIR [--exporter BIN] [--record BIN] [--warmup S] [--fault-free S]
#                       [--fault-seconds N] [--gap S] [--config FILE]
#   python3 scripts/evaluate/replay.py DIR deploy/analyzer.yml     # on any host, no GPU needed
#
# Defaults: exporter target/release/reveal-exporter, warm-up 320 s (the deploy default's first
# fit is at 5 min), 40 s fault-free, 20 s faults, 40 s gaps: about 9 minutes. --record BIN is
# the exporter's `gpu_record` example: NVML fixtures are then recorded idle, under the job and
# during each fault (DIR/nvml-*.json, the format of exporter/tests/fixtures/nvml/).
# DIR also holds host.txt (driver, GPU, NUMA nodes, cpufreq, PMUs), the exporter's exposition
# (exposition-*.prom), job.log (the job's steps per second), progress.log, run.json,
# faults.json and prometheus-data/. Needs root (the faults), nvidia-smi, prometheus, curl,
# python3 with PyTorch.
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT="" EXPORTER="$ROOT/target/release/reveal-exporter" RECORD="" CONFIG="$ROOT/deploy/analyzer.yml"
WARMUP=320 FAULT_FREE=40 FAULT_SECONDS=20 GAP=40
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift ;;
    --exporter) EXPORTER=$2; shift ;;
    --record) RECORD=$2; shift ;;
    --config) CONFIG=$2; shift ;;
    --warmup) WARMUP=$2; shift ;;
    --fault-free) FAULT_FREE=$2; shift ;;
    --fault-seconds) FAULT_SECONDS=$2; shift ;;
    --gap) GAP=$2; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_case: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$OUT" ] || { echo "gpu_case: --out DIR is required" >&2; exit 2; }
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
now_ms() { date +%s%3N; }
log() { printf '%s gpu_case: %s\n' "$(date -u +%T)" "$*" | tee -a "$OUT/progress.log" >&2; }
die() { log "ERROR: $*"; exit 1; }
for t in nvidia-smi prometheus curl python3; do
  command -v "$t" >/dev/null || die "$t not found"
done
[ -x "$EXPORTER" ] || die "no exporter binary at $EXPORTER"
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
  die "python3's PyTorch sees no CUDA device"

PIDS=()
cleanup() {
  nvidia-smi -rgc >/dev/null 2>&1
  [ -n "${DEFAULT_PL:-}" ] && nvidia-smi -pl "$DEFAULT_PL" >/dev/null 2>&1
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=0
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # URL SECONDS
  for _ in $(seq $(($2 * 10))); do curl -fs -o /dev/null "$1" && return 0; sleep 0.1; done
  return 1
}
record() { # NAME: an NVML fixture, when --record was given
  [ -n "$RECORD" ] || return 0
  if "$RECORD" > "$OUT/nvml-$1.json" 2>>"$OUT/progress.log"; then log "recorded nvml-$1.json"
  else log "gpu_record failed for $1"; rm -f "$OUT/nvml-$1.json"; fi
}
q() { # FIELD: the first GPU's value, whole numbers (nvidia-smi -pl and -lgc take no decimals)
  local v
  v=$(nvidia-smi --query-gpu="$1" --format=csv,noheader,nounits -i 0 | head -1 | tr -d ' ')
  echo "${v%%.*}"
}

# ---- what the host is ------------------------------------------------------------------------
{
  echo "kernel: $(uname -r)"; echo "cpus: $(nproc)"
  echo "numa nodes: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)"
  echo "cpufreq: $([ -d /sys/devices/system/cpu/cpu0/cpufreq ] && echo yes || echo no)"
  echo "perf PMUs: $(ls /sys/bus/event_source/devices 2>/dev/null | tr '\n' ' ')"
  echo "cpu model: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  nvidia-smi -L
  nvidia-smi -q
  nvidia-smi -q -d POWER,CLOCK,PERFORMANCE
} > "$OUT/host.txt" 2>&1
log "host: $(nvidia-smi -L | head -1); $(nproc) CPUs; $(grep '^numa nodes' "$OUT/host.txt")"
DEFAULT_PL=$(q power.default_limit); MIN_PL=$(q power.min_limit); MAX_SM=$(q clocks.max.sm)
log "power limit default ${DEFAULT_PL} W, min ${MIN_PL} W; max SM clock ${MAX_SM} MHz"

# ---- the exporter and Prometheus ---------------------------------------------------------------
"$EXPORTER" --once > "$OUT/exposition-all.prom" 2>"$OUT/exporter-once.log" ||
  die "the exporter failed once (see exporter-once.log)"
"$EXPORTER" --once --collector.disable-defaults --collector.gpu --collector.gpu.pcie-throughput \
  > "$OUT/exposition-gpu-pcie.prom" 2>>"$OUT/exporter-once.log"
grep -q '^reveal_gpu_power_watts' "$OUT/exposition-all.prom" ||
  die "the exporter exposes no reveal_gpu_power_watts: NVML not loaded? (exporter-once.log)"
record idle
EPORT=$(free_port); PPORT=$(free_port)
"$EXPORTER" --web.listen-address="127.0.0.1:$EPORT" > "$OUT/exporter.log" 2>&1 &
PIDS+=($!)
wait_http "http://127.0.0.1:$EPORT/metrics" 30 || die "exporter not serving (exporter.log)"
# Keep the series of the metric names the analyzer's metric set uses, and the exporter's own.
KEEP=$( (grep -o 'reveal_[a-z0-9_]*' "$CONFIG"; echo 'reveal_exporter_[a-z_]*') | sort -u | paste -sd'|')
cat > "$OUT/prometheus.yml" <<EOF
global: {scrape_interval: 15s}
scrape_configs:
  - job_name: reveal
    scrape_interval: 100ms
    scrape_timeout: 100ms
    static_configs: [{targets: ["127.0.0.1:$EPORT"]}]
    metric_relabel_configs:
      - {source_labels: [__name__], regex: "$KEEP", action: keep}
EOF
prometheus --config.file="$OUT/prometheus.yml" --storage.tsdb.path="$OUT/prometheus-data" \
  --web.listen-address="127.0.0.1:$PPORT" > "$OUT/prometheus.log" 2>&1 &
PROM=$!
PIDS+=($PROM)
wait_http "http://127.0.0.1:$PPORT/-/ready" 60 || die "prometheus not ready (prometheus.log)"
STARTED=$(now_ms)
log "exporter :$EPORT, prometheus :$PPORT scraping every 100 ms"

# ---- the job, the warm-up, the faults ----------------------------------------------------------
TOTAL=$((15 + WARMUP + FAULT_FREE + 3 * (FAULT_SECONDS + GAP) + 5))
python3 "$ROOT/scripts/gpu_load.py" "$TOTAL" "$OUT/job.log" > "$OUT/job.err" 2>&1 &
PIDS+=($!)
JOB=$!
for _ in $(seq 300); do [ -s "$OUT/job.log" ] && break; kill -0 $JOB 2>/dev/null || break; sleep 0.1; done
[ -s "$OUT/job.log" ] || die "the GPU job did not start (job.err: $(tail -3 "$OUT/job.err"))"
sleep 5
LEARN=$(now_ms)
log "job running ($(tail -1 "$OUT/job.log" | cut -d' ' -f2) steps/s); warm-up ${WARMUP}s"
sleep $((WARMUP / 2)); record load; sleep $((WARMUP - WARMUP / 2))
FF_START=$(now_ms); sleep "$FAULT_FREE"; FF_END=$(now_ms)

FAULTS="[" SKIPPED="[" SEP="" SSEP=""
fault() { # NAME APPLY_CMD RESTORE_CMD DESCRIPTION [EXPECTED_SUBSYSTEM]
  local s e
  s=$(now_ms)
  if ! out=$(eval "$2" 2>&1); then
    log "fault $1 refused by the driver: $out"
    SKIPPED+="$SSEP\"$1\""; SSEP=","
    return
  fi
  log "fault $1: $4"
  sleep $((FAULT_SECONDS / 2)); record "$1"; sleep $((FAULT_SECONDS - FAULT_SECONDS / 2))
  eval "$3" >/dev/null 2>&1 || log "restoring after $1 failed: $3"
  e=$(now_ms)
  FAULTS+="$SEP{\"name\":\"$1\",\"expected\":[\"${5:-gpu}\"],\"start_ms\":$s,\"end_ms\":$e,\"command\":\"$4\"}"
  SEP=","
  sleep "$GAP"
}
fault gpu_power_cap "nvidia-smi -pl $MIN_PL" "nvidia-smi -pl $DEFAULT_PL" \
  "nvidia-smi -pl $MIN_PL (default $DEFAULT_PL W) during the job"
HALF=$((MAX_SM / 2))
fault gpu_clock_lock "nvidia-smi -lgc $HALF,$HALF" "nvidia-smi -rgc" \
  "nvidia-smi -lgc $HALF,$HALF (max $MAX_SM MHz) during the job"
# Each loop also ends by itself 5 s past the fault's length (timeout), if the restore fails.
BURN="for _ in \$(seq $(nproc)); do timeout $((FAULT_SECONDS + 5)) sh -c 'while :; do :; done' reveal_cpu_burn >/dev/null 2>&1 & done"
fault cpu_contention "$BURN" "pkill -f reveal_cpu_burn" \
  "$(nproc) busy loops, one per CPU, beside the job" cpu
END=$(now_ms)
kill -0 $JOB 2>/dev/null || log "the job ended before the run did (job.err)"
record after
printf '%s]\n' "$FAULTS" | python3 -m json.tool > "$OUT/faults.json"
cat > "$OUT/run.json" <<EOF
{"host": "$(hostname)", "nproc": $(nproc), "kernel": "$(uname -r)",
 "mode": "GPU case: deploy defaults, warm-up ${WARMUP}s of the GPU job",
 "gpu": "$(nvidia-smi -L | head -1)",
 "fault_seconds": $FAULT_SECONDS, "gap": $GAP, "warmup_s": $WARMUP,
 "started_ms": $STARTED, "analyzers_started_ms": $LEARN,
 "fault_free": {"start_ms": $FF_START, "end_ms": $FF_END}, "end_ms": $END,
 "skipped": $SKIPPED], "analyzers": []}
EOF
kill "$PROM"; wait "$PROM" 2>/dev/null
log "done: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT/faults.json") fault(s) in $OUT"
