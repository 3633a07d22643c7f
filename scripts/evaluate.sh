#!/usr/bin/env bash
# Reveal's live evaluation: the real exporter, Prometheus, Alertmanager and analyzer(s) on this
# host, a background that is never idle, then faults at recorded times; Alertmanager's API is
# polled every 0.1 s and each analyzer is scored (docs/EVALUATION.md). Needs root (network
# namespace, veth, nftables) and: prometheus, prometheus-alertmanager, stress-ng, fio, iperf3,
# nftables, iproute2, ethtool, util-linux (taskset, setsid), curl, python3. Builds nothing: it runs the
# binaries it is given.
#
#   scripts/evaluate.sh                       # deploy defaults: 5 min warm-up, 30 min fault-free, 6 faults
#   scripts/evaluate.sh --quick               # smoke run (~11 min): warm-up 1m, baseline 3m, 3 min fault-free
#   scripts/evaluate.sh --baseline-age 30     # fault-free period scored on a full 30-minute baseline
#   scripts/evaluate.sh --analyzer new=target/release/reveal-analyzer \
#                       --analyzer old=/tmp/reveal-before/reveal-analyzer   # side by side
#
# Options:
#   --analyzer NAME=PATH   an analyzer binary to evaluate (repeatable; default
#                          reveal=target/release/reveal-analyzer). Each gets its own
#                          Alertmanager, receiver-only Prometheus and state directory.
#   --analyzer-config NAME=FILE   that analyzer's configuration instead of deploy/analyzer.yml
#                          (its ports are rewritten the same way); two metric sets side by side
#   --exporter PATH        exporter binary (default target/release/reveal-exporter)
#   --exporter-fast FILE   the exporter's --metrics.fast file, the series stored at 100 ms
#                          (default deploy/selection-fast.yml); two metric sets side by side
#                          that read different fast series need the union of both
#   --fault-free MINUTES   fault-free period after the warm-up (default 30)
#   --baseline-age MINUTES the fault-free period starts once the analyzers have run this long
#                          (default 0: right after the warm-up), so it is scored on a baseline at
#                          least this old. With 30 it is the full deploy baseline, as for an
#                          analyzer that has run a while or joined a Prometheus with history; 0
#                          measures the cold start, where the baseline grows from 5 to 30 minutes
#                          during the fault-free period. What is raised before does not count
#   --gap SECONDS          quiet seconds between faults, and after the last one (default 90)
#   --fault-seconds N      length of each fault (default 20)
#   --faults LIST          comma-separated faults, in the given order (default:
#                          cpu_saturation,memory_hog,dirty_page_flood,storage_read_burst,
#                          softirq_flood_one_cpu,packet_loss; also known: the paper's cases
#                          irq_imbalance,packet_loss_0.5pct,packet_loss_0.1pct,one_flow,
#                          memory_bandwidth, hugepages_drift (stand-in hosts, below),
#                          and where the host has the hardware numa_remote
#                          (two NUMA nodes or more, numactl) and cpu_frequency (cpufreq);
#                          a fault the host cannot run is skipped with a warning and listed
#                          as skipped in run.json and the results)
#   --out DIR              output directory (default /tmp/reveal-eval-<timestamp>)
#   --port-base N          first port to try (default random from 20000 up to 1000 below the
#                          kernel's ephemeral port range); free ports are taken upwards from it
#   --quick                analyzer warm-up 1m and baseline 3m (config rewrite), fault-free 3 min,
#                          gap 45 s (explicit flags given after --quick still win)
#   --keep-data            keep the Prometheus and Alertmanager data directories in DIR
#   -h, --help             this text
#
# Output in DIR: progress.log, run.json, faults.json, results.md (the tables, also printed),
# summary.json, logs of every process, and per analyzer analyzers/NAME/ (its config, log,
# state/reports/*.jsonl, alerts.json, alerts.log, polls.jsonl, series.json).
# Re-score a finished run: python3 scripts/evaluate/score.py DIR --offline
set -euo pipefail

SELF="$(readlink -f "${BASH_SOURCE[0]}")"
ROOT="$(cd "$(dirname "$SELF")/.." && pwd)"
HELPERS="$ROOT/scripts/evaluate"

now_ms() { date +%s%3N; }
now_s() { date +%s; }
log() {
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then printf '%s %s\n' "$(date '+%F %T')" "$*" | tee -a "$OUT/progress.log"
  else printf '%s %s\n' "$(date '+%F %T')" "$*"; fi
}
die() { log "ERROR: $*" >&2; exit 1; }

# ---- background loops (run as `evaluate.sh __bg FUNCTION`, each in its own session) -------------
# Every loop ends at $DEADLINE (unix seconds) at the latest; the EXIT trap stops them before.

bg_ns_server() { # the background stream's receiver, inside the namespace
  while [ "$(now_s)" -lt "$DEADLINE" ]; do
    ip netns exec "$NS" iperf3 -s -B "$NS_IP" -p 5201 --forceflush || true
    sleep 1
  done
}
bg_flood_server() { # the softirq flood's receiver on the host side, pinned to CPU 0
  while [ "$(now_s)" -lt "$DEADLINE" ]; do
    taskset -c 0 iperf3 -s -B "$HOST_IP" -p "$FLOOD_PORT" --forceflush || true
    sleep 1
  done
}
bg_stream() { # steady TCP transfer host -> namespace: two flows, each rate-limited, restarted if it dies
  local n=0 left flows
  sleep 2
  while left=$((DEADLINE - $(now_s))) && [ "$left" -gt 1 ]; do
    n=$((n + 1))
    # The one_flow fault leaves this file for its duration: one flow where two were needed.
    flows=2; [ -e "$TMPD/one-flow" ] && flows=1
    echo "$(date '+%F %T') stream start #$n ($flows x ${STREAM_RATE}, ${left}s)"
    iperf3 -c "$NS_IP" -p 5201 -P "$flows" -b "$STREAM_RATE" -t "$left" -i 60 --forceflush || true
    sleep 0.2
  done
}
# Restarts the background transfer (its loop starts it again at once, with as many flows as
# the one-flow file says).
restart_stream() { pkill -f -- "iperf3 -c $NS_IP -p 5201 " || true; }
# rps_all MASK: receive packet steering of both veth ends to the CPUs of MASK (hex; 0 = off,
# the kernel's default: each packet is processed on the CPU that sent it).
rps_all() {
  echo "$1" >"/sys/class/net/$HOST_DEV/queues/rx-0/rps_cpus"
  ip netns exec "$NS" sh -c "echo $1 >/sys/class/net/$NS_DEV/queues/rx-0/rps_cpus"
}
bg_cpu() { # routine job: one CPU busy for 8 s every 60 s
  local next
  next=$(now_s)
  while [ "$next" -lt "$DEADLINE" ]; do
    echo "$(date '+%F %T') routine cpu job (8 s)"
    timeout -k 2 12 stress-ng --cpu 1 --timeout 8s --quiet || true
    next=$((next + 60))
    while [ "$(now_s)" -lt "$next" ]; do sleep 1; done
  done
}
bg_disk() { # routine buffered writes: 32 MiB every 30 s, each file kept 90 s so it is written back
  local i=0 next
  next=$(( $(now_s) + 15 ))
  while [ "$next" -lt "$DEADLINE" ]; do
    while [ "$(now_s)" -lt "$next" ]; do sleep 1; done
    echo "$(date '+%F %T') routine write routine-$((i % 3)).bin (32 MiB)"
    timeout -k 2 20 dd if=/dev/zero of="$TMPD/routine-$((i % 3)).bin" bs=1M count=32 status=none || true
    i=$((i + 1)); next=$((next + 30))
  done
}

if [ "${1:-}" = __bg ]; then
  "$2"
  exit 0
fi

# ---- arguments ------------------------------------------------------------------------------------

ANALYZERS=()
A_CONFIGS=()
EXPORTER="target/release/reveal-exporter"
EXPORTER_FAST="deploy/selection-fast.yml"
FAULT_FREE_MIN=30
AGE_MIN=0
GAP=90
FAULT_SECONDS=20
OUT=""
PORT_BASE=""
QUICK=0
KEEP_DATA=0
DEFAULT_FAULTS="cpu_saturation,memory_hog,dirty_page_flood,storage_read_burst,softirq_flood_one_cpu,packet_loss"
# The paper's subtler cases (issue 15): chosen with --faults.
CASE_FAULTS="irq_imbalance,packet_loss_0.5pct,packet_loss_0.1pct,one_flow,memory_bandwidth,hugepages_drift,numa_remote,cpu_frequency"
ALL_FAULTS="$DEFAULT_FAULTS,$CASE_FAULTS"
FAULTS="$DEFAULT_FAULTS"
STREAM_RATE=25M  # per flow; two flows
arg() { [ $# -ge 2 ] || die "$1 needs a value (see --help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --analyzer) arg "$@"; ANALYZERS+=("$2"); shift ;;
    --analyzer=*) ANALYZERS+=("${1#*=}") ;;
    --analyzer-config) arg "$@"; A_CONFIGS+=("$2"); shift ;;
    --exporter) arg "$@"; EXPORTER="$2"; shift ;;
    --exporter-fast) arg "$@"; EXPORTER_FAST="$2"; shift ;;
    --fault-free) arg "$@"; FAULT_FREE_MIN="$2"; shift ;;
    --baseline-age) arg "$@"; AGE_MIN="$2"; shift ;;
    --gap) arg "$@"; GAP="$2"; shift ;;
    --fault-seconds) arg "$@"; FAULT_SECONDS="$2"; shift ;;
    --faults) arg "$@"; FAULTS="$2"; shift ;;
    --out) arg "$@"; OUT="$2"; shift ;;
    --port-base) arg "$@"; PORT_BASE="$2"; shift ;;
    --quick) QUICK=1; FAULT_FREE_MIN=3; GAP=45 ;;
    --keep-data) KEEP_DATA=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "evaluate: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#ANALYZERS[@]} -gt 0 ] || ANALYZERS=("reveal=target/release/reveal-analyzer")
[[ "$FAULT_FREE_MIN" =~ ^[0-9]+$ ]] || die "--fault-free takes whole minutes"
[[ "$AGE_MIN" =~ ^[0-9]+$ ]] || die "--baseline-age takes whole minutes"
[[ "$GAP" =~ ^[0-9]+$ ]] && [ "$GAP" -ge 10 ] || die "--gap takes seconds, at least 10"
[[ "$FAULT_SECONDS" =~ ^[0-9]+$ ]] && [ "$FAULT_SECONDS" -ge 1 ] && [ "$FAULT_SECONDS" -le 600 ] ||
  die "--fault-seconds: 1 to 600"
IFS=, read -r -a FAULT_LIST <<<"$FAULTS"
for f in "${FAULT_LIST[@]}"; do
  [[ ",$ALL_FAULTS," == *",$f,"* ]] || die "unknown fault $f (known: $ALL_FAULTS)"
done
# Faults this host cannot run (no second NUMA node, no cpufreq) are skipped, loudly.
numa_nodes() { ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l; }
CPUFREQ=/sys/devices/system/cpu/cpu0/cpufreq
cannot_run() { # prints why fault $1 cannot run here, nothing if it can
  case "$1" in
    numa_remote)
      [ "$(numa_nodes)" -ge 2 ] || { echo "one NUMA node on this host (a remote node is needed)"; return; }
      command -v numactl >/dev/null || echo "numactl not found (apt-get install numactl)" ;;
    cpu_frequency)
      [ -w "$CPUFREQ/scaling_max_freq" ] || echo "no cpufreq on this host ($CPUFREQ/scaling_max_freq)" ;;
  esac
}
SKIPPED=()
RUNNABLE=()
for f in "${FAULT_LIST[@]}"; do
  why="$(cannot_run "$f")"
  if [ -n "$why" ]; then SKIPPED+=("$f: $why"); else RUNNABLE+=("$f"); fi
done
FAULT_LIST=("${RUNNABLE[@]+"${RUNNABLE[@]}"}")
[ "$(id -u)" = 0 ] || die "needs root: network namespace, veth and nftables"
for t in prometheus stress-ng fio iperf3 nft ip ethtool taskset setsid curl python3 timeout; do
  command -v "$t" >/dev/null || die "$t not found (apt-get install prometheus prometheus-alertmanager stress-ng fio iperf3 nftables iproute2 ethtool curl)"
done
ALERTMANAGER="$(command -v prometheus-alertmanager || command -v alertmanager || true)"
[ -n "$ALERTMANAGER" ] || die "alertmanager not found (apt-get install prometheus-alertmanager)"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$ROOT/$1" ;; esac; }
EXPORTER="$(abs "$EXPORTER")"
EXPORTER_FAST="$(abs "$EXPORTER_FAST")"
[ -x "$EXPORTER" ] || die "no exporter binary at $EXPORTER (build it: cargo build --release)"
[ -f "$EXPORTER_FAST" ] || die "no fast selection at $EXPORTER_FAST"
A_NAMES=(); A_BINS=()
for a in "${ANALYZERS[@]}"; do
  name="${a%%=*}"; bin="${a#*=}"
  [[ "$a" == *=* ]] || { name=reveal; bin="$a"; }
  [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || die "analyzer name '$name': letters, digits, _ . - only"
  for n in "${A_NAMES[@]+"${A_NAMES[@]}"}"; do [ "$n" != "$name" ] || die "analyzer name $name given twice"; done
  bin="$(abs "$bin")"
  [ -x "$bin" ] || die "no analyzer binary at $bin"
  A_NAMES+=("$name"); A_BINS+=("$bin")
done
NA=${#A_NAMES[@]}
# --analyzer-config NAME=FILE: that analyzer's configuration instead of deploy/analyzer.yml.
declare -A A_CFG=()
for c in "${A_CONFIGS[@]+"${A_CONFIGS[@]}"}"; do
  [[ "$c" == *=* ]] || die "--analyzer-config takes NAME=FILE"
  name="${c%%=*}"; file="$(abs "${c#*=}")"
  [[ " ${A_NAMES[*]} " == *" $name "* ]] || die "--analyzer-config: no analyzer named $name"
  [ -r "$file" ] || die "--analyzer-config: cannot read $file"
  A_CFG[$name]="$file"
done

OUT="${OUT:-/tmp/reveal-eval-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
[ -z "$(ls -A "$OUT")" ] || die "$OUT is not empty"
TMPD="$OUT/tmp"
START_MS=$(now_ms)
mkdir -p "$TMPD" "$OUT/analyzers"

if [ "$QUICK" = 1 ]; then WARMUP=60; else WARMUP=300; fi
NF=${#FAULT_LIST[@]}
# The HugePages case (paper §6) compares hosts, and this evaluation has one: its hosts are
# stand-ins, copies of the two-socket fixture machine's /proc and /sys
# (exporter/tests/fixtures/numa-2socket), each read by its own exporter and scraped at 100 ms
# by a second Prometheus, which one more analyzer per evaluated analyzer follows (same
# configuration; all hosts of an analyzer are one group, so the stand-ins are not compared
# with this host). The fault reserves 1 GiB huge pages on one of them, as the kernel shows it
# (scripts/evaluate/hugepages.py), and holds them long enough for a persistent deviation
# (24 of 30 windows, about half a minute).
CLUSTER=0
if [[ " ${FAULT_LIST[*]-} " == *" hugepages_drift "* ]]; then CLUSTER=1; fi
HP_HOSTS=4; HP_PAGES=32
HP_SECONDS=$(( FAULT_SECONDS > 60 ? FAULT_SECONDS : 60 ))
# Every loop and the poller stop by this time at the latest, whatever happens to this script.
DEADLINE=$(( $(now_s) + 120 + AGE_MIN * 60 + 3 * WARMUP + 300 + FAULT_FREE_MIN * 60 + NF * (FAULT_SECONDS + GAP + 5) + CLUSTER * HP_SECONDS + GAP + 600 ))

# ---- bookkeeping and cleanup ------------------------------------------------------------------------

PGIDS=(); PNAMES=()
NS=""; HOST_DEV=""; POLLER=""; DONE=0
# spawn NAME LOGFILE CMD...: starts CMD in its own session (so its whole process group can be
# stopped, and a Ctrl-C reaches only this script, which then stops everything in order).
spawn() {
  local name="$1" logf="$2"; shift 2
  setsid "$@" >"$logf" 2>&1 </dev/null &
  PGIDS+=("$!"); PNAMES+=("$name")
  LAST_PID=$!
}
alive() { kill -0 "$1" 2>/dev/null; }
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  log "cleanup: stopping ${#PGIDS[@]} process groups${POLLER:+ and the alert poller}"
  [ -n "$POLLER" ] && alive "$POLLER" && kill -TERM "$POLLER" 2>/dev/null
  local i
  for ((i = ${#PGIDS[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${PGIDS[i]}" 2>/dev/null; done
  for _ in $(seq 50); do
    local any=0
    for p in "${PGIDS[@]+"${PGIDS[@]}"}" $POLLER; do kill -0 -- "-$p" 2>/dev/null && any=1; done
    [ "$any" = 0 ] && break
    sleep 0.1
  done
  for p in "${PGIDS[@]+"${PGIDS[@]}"}" $POLLER; do kill -KILL -- "-$p" 2>/dev/null; done
  if [ -n "$NS" ]; then
    ip netns exec "$NS" nft delete table inet reveal_eval_loss 2>/dev/null
    ip netns del "$NS" 2>/dev/null
  fi
  [ -n "$HOST_DEV" ] && ip link del "$HOST_DEV" 2>/dev/null
  rm -rf "$TMPD"
  if [ "$KEEP_DATA" = 0 ]; then
    rm -rf "$OUT/prometheus-data" "$OUT/cluster-prometheus-data" "$OUT"/analyzers/*/receiver-data "$OUT"/analyzers/*/alertmanager-data
  fi
  if [ "$DONE" = 1 ]; then log "done: results in $OUT/results.md"
  else log "stopped before the end (exit $rc); what was recorded is in $OUT"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

# ---- ports ----------------------------------------------------------------------------------------------

# Below the kernel's ephemeral range by default: a port taken there can be given to an outgoing
# connection before its server binds it (a trial lost the stand-in hosts' Prometheus so).
EPHEMERAL_LOW=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
PORT_NEXT="${PORT_BASE:-$((20000 + RANDOM % (EPHEMERAL_LOW > 22000 ? EPHEMERAL_LOW - 21000 : 10000)))}"
[[ "$PORT_NEXT" =~ ^[0-9]+$ ]] || die "--port-base takes a number"
port_free() { ! ss -Hltnu "( sport = :$1 )" 2>/dev/null | grep -q .; }
# take_port: the next free port from PORT_NEXT on, in PORT (no subshell, so PORT_NEXT advances).
take_port() {
  while ! port_free "$PORT_NEXT"; do PORT_NEXT=$((PORT_NEXT + 1)); done
  [ "$PORT_NEXT" -lt 65536 ] || die "no free port below 65536"
  PORT=$PORT_NEXT; PORT_NEXT=$((PORT_NEXT + 1))
}
take_port; EXPORTER_PORT=$PORT; take_port; PROM_PORT=$PORT; take_port; FLOOD_PORT=$PORT
A_PORT=(); AM_PORT=(); RECV_PORT=(); C_PORT=(); HP_PORT=()
for ((i = 0; i < NA; i++)); do
  take_port; A_PORT+=("$PORT"); take_port; AM_PORT+=("$PORT"); take_port; RECV_PORT+=("$PORT")
  if [ "$CLUSTER" = 1 ]; then take_port; C_PORT+=("$PORT"); fi
done
if [ "$CLUSTER" = 1 ]; then
  take_port; CLUSTER_PROM_PORT=$PORT
  for ((k = 1; k <= HP_HOSTS; k++)); do take_port; HP_PORT+=("$PORT"); done
fi

http_ok() { curl -fsS -m 2 -o /dev/null "$1" 2>/dev/null; }
# wait_http NAME URL SECONDS PID
wait_http() {
  local t=$(( $(now_s) + $3 ))
  until http_ok "$2"; do
    alive "$4" || die "$1 exited during start-up (see its log in $OUT)"
    [ "$(now_s)" -lt "$t" ] || die "$1 not ready at $2 within $3 s"
    sleep 0.5
  done
  log "ready: $1 ($2)"
}

log "reveal evaluation: out $OUT; analyzers: $(for ((i = 0; i < NA; i++)); do printf '%s=%s ' "${A_NAMES[i]}" "${A_BINS[i]}"; done)"
for s in "${SKIPPED[@]+"${SKIPPED[@]}"}"; do log "WARNING: SKIPPED fault ${s%%:*}: ${s#*: }"; done
log "plan: warm-up ${WARMUP}s, baseline at least ${AGE_MIN} min old, fault-free ${FAULT_FREE_MIN} min, faults (${FAULT_SECONDS}s each, ${GAP}s gaps): ${FAULT_LIST[*]}"

# ---- 1. the storage fault's file, written and flushed before anything watches -----------------------

log "phase setup: writing the read-burst file (1 GiB) and flushing it, before telemetry starts"
dd if=/dev/zero of="$TMPD/read-burst.bin" bs=1M count=1024 conv=fsync status=none
sync

# ---- 2. network namespace, veth, iperf3 servers, background -------------------------------------------

NS="reveal-eval-$$"
HOST_DEV="rve$$h"; NS_DEV="rve$$n"
HOST_IP=10.254.213.1; NS_IP=10.254.213.2
log "phase setup: namespace $NS, veth $HOST_DEV ($HOST_IP) <-> $NS_DEV ($NS_IP)"
ip netns add "$NS"
ip -n "$NS" link set lo up
ip link add "$HOST_DEV" type veth peer name "$NS_DEV" netns "$NS"
ip addr add "$HOST_IP/30" dev "$HOST_DEV"
ip -n "$NS" addr add "$NS_IP/30" dev "$NS_DEV"
ip link set "$HOST_DEV" up
ip -n "$NS" link set "$NS_DEV" up
# A NIC segments before the wire, so loss there hits MTU-sized packets; a veth passes TCP's
# 64 KiB super-packets whole, and one drop would take a whole burst (a loss rate of N per mille
# would then be far fewer, larger losses than on a wire). Segment in software instead.
ethtool -K "$HOST_DEV" tso off gso off gro off >/dev/null
ip netns exec "$NS" ethtool -K "$NS_DEV" tso off gso off gro off >/dev/null
log "phase setup: segmentation offloads off on both veth ends (MTU-sized packets, as on a wire)"

export NS NS_IP HOST_IP FLOOD_PORT DEADLINE TMPD STREAM_RATE HOST_DEV NS_DEV
spawn ns-server "$OUT/iperf3-ns-server.log" "$BASH" "$SELF" __bg bg_ns_server
spawn flood-server "$OUT/iperf3-flood-server.log" "$BASH" "$SELF" __bg bg_flood_server
sleep 1
log "phase background: steady TCP transfer (2 flows x $STREAM_RATE) into $NS, one CPU busy 8 s every 60 s, 32 MiB buffered write every 30 s"
spawn bg-stream "$OUT/background-stream.log" "$BASH" "$SELF" __bg bg_stream
spawn bg-cpu "$OUT/background-cpu.log" "$BASH" "$SELF" __bg bg_cpu
spawn bg-disk "$OUT/background-disk.log" "$BASH" "$SELF" __bg bg_disk

# ---- 3. exporter, Prometheus, and per analyzer: Alertmanager, receiver Prometheus ------------------------

# The stack's two cadences (rules/prometheus.yml scrapes ?cadence=fast every 100 ms and
# ?cadence=slow every 15 s): the exporter needs the fast page's selection.
spawn exporter "$OUT/exporter.log" "$EXPORTER" --web.listen-address="127.0.0.1:$EXPORTER_PORT" \
  --metrics.fast="$EXPORTER_FAST"
EXPORTER_PID=$LAST_PID
AM_TARGETS=""; A_TARGETS=""
for ((i = 0; i < NA; i++)); do
  AM_TARGETS+="${AM_TARGETS:+, }\"127.0.0.1:${AM_PORT[i]}\""
  A_TARGETS+="${A_TARGETS:+, }\"127.0.0.1:${A_PORT[i]}\""
done
# The stack's file: ports rewritten, every analyzer and Alertmanager listed, rule paths absolute.
sed -e "s/\"127\.0\.0\.1:19190\"/\"127.0.0.1:$EXPORTER_PORT\"/g" \
    -e "s/\"127\.0\.0\.1:19090\"/\"127.0.0.1:$PROM_PORT\"/g" \
    -e "s/\"127\.0\.0\.1:19093\"/$AM_TARGETS/g" \
    -e "s/\"127\.0\.0\.1:19191\"/$A_TARGETS/g" \
    -e "s|^  - \([a-z-]*\.rules\.yml\)$|  - $ROOT/rules/\1|" \
    "$ROOT/rules/prometheus.yml" >"$OUT/prometheus.yml"
spawn prometheus "$OUT/prometheus.log" prometheus --config.file="$OUT/prometheus.yml" \
  --storage.tsdb.path="$OUT/prometheus-data" --storage.tsdb.retention.time=1d \
  --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver
PROM_PID=$LAST_PID
wait_http exporter "http://127.0.0.1:$EXPORTER_PORT/metrics" 30 "$EXPORTER_PID"
wait_http prometheus "http://127.0.0.1:$PROM_PORT/-/ready" 60 "$PROM_PID"

HP_PIDS=(); HP_TARGETS=(); CLUSTER_PROM_PID=""
if [ "$CLUSTER" = 1 ]; then
  log "phase setup: the HugePages case's $HP_HOSTS stand-in hosts (copies of exporter/tests/fixtures/numa-2socket), an exporter each, their own Prometheus"
  python3 "$HELPERS/hugepages.py" setup "$TMPD/cluster" "$ROOT/exporter/tests/fixtures/numa-2socket" "$HP_HOSTS" >/dev/null
  for ((k = 1; k <= HP_HOSTS; k++)); do
    # Memory collectors only: they stand in for the memory of a cluster's hosts, and a
    # 64-CPU machine's whole scrape, four times every 100 ms, loads a 2-CPU host (83 ms a
    # scrape, 15 % of them timed out, in a trial).
    spawn "exporter-host-$k" "$OUT/exporter-host-$k.log" "$EXPORTER" \
      --web.listen-address="127.0.0.1:${HP_PORT[k - 1]}" --collector.disable-defaults \
      --collector.meminfo --collector.hugepages --collector.vmstat --collector.numa \
      --path.procfs="$TMPD/cluster/host-$k/proc" --path.sysfs="$TMPD/cluster/host-$k/sys"
    HP_PIDS+=("$LAST_PID"); HP_TARGETS+=("127.0.0.1:${HP_PORT[k - 1]}")
  done
  { echo "# The HugePages case's stand-in hosts, scraped as the stack scrapes its exporter."
    echo "global:"; echo "  scrape_interval: 15s"
    echo "scrape_configs:"; echo "  - job_name: reveal"
    echo "    scrape_interval: 100ms"; echo "    scrape_timeout: 100ms"
    echo "    static_configs:"
    echo "      - targets: [$(printf '"%s", ' "${HP_TARGETS[@]}" | sed 's/, $//')]"
  } >"$OUT/cluster-prometheus.yml"
  spawn cluster-prometheus "$OUT/cluster-prometheus.log" prometheus --config.file="$OUT/cluster-prometheus.yml" \
    --storage.tsdb.path="$OUT/cluster-prometheus-data" --storage.tsdb.retention.time=1d \
    --web.listen-address="127.0.0.1:$CLUSTER_PROM_PORT"
  CLUSTER_PROM_PID=$LAST_PID
  for ((k = 1; k <= HP_HOSTS; k++)); do
    wait_http "exporter host-$k" "http://${HP_TARGETS[k - 1]}/metrics" 30 "${HP_PIDS[k - 1]}"
  done
  wait_http "cluster prometheus" "http://127.0.0.1:$CLUSTER_PROM_PORT/-/ready" 60 "$CLUSTER_PROM_PID"
fi

AM_PIDS=(); RECV_PIDS=(); AN_PIDS=(); A_DIRS=()
for ((i = 0; i < NA; i++)); do
  d="$OUT/analyzers/${A_NAMES[i]}"; A_DIRS+=("$d")
  mkdir -p "$d/state"
  cp "$ROOT/rules/alertmanager.yml" "$d/alertmanager.yml"
  spawn "alertmanager-${A_NAMES[i]}" "$d/alertmanager.log" "$ALERTMANAGER" \
    --config.file="$d/alertmanager.yml" --storage.path="$d/alertmanager-data" \
    --web.listen-address="127.0.0.1:${AM_PORT[i]}" --cluster.listen-address=
  AM_PIDS+=("$LAST_PID")
  printf '# Receiver only: %s remote-writes its anomaly series here.\nglobal:\n  scrape_interval: 15s\n' \
    "${A_NAMES[i]}" >"$d/receiver.yml"
  spawn "receiver-${A_NAMES[i]}" "$d/receiver.log" prometheus --config.file="$d/receiver.yml" \
    --storage.tsdb.path="$d/receiver-data" --storage.tsdb.retention.time=1d \
    --web.listen-address="127.0.0.1:${RECV_PORT[i]}" --web.enable-remote-write-receiver
  RECV_PIDS+=("$LAST_PID")
done
for ((i = 0; i < NA; i++)); do
  wait_http "alertmanager ${A_NAMES[i]}" "http://127.0.0.1:${AM_PORT[i]}/-/ready" 30 "${AM_PIDS[i]}"
  wait_http "receiver prometheus ${A_NAMES[i]}" "http://127.0.0.1:${RECV_PORT[i]}/-/ready" 60 "${RECV_PIDS[i]}"
done

POLL_ARGS=()
for ((i = 0; i < NA; i++)); do POLL_ARGS+=("${A_NAMES[i]}=http://127.0.0.1:${AM_PORT[i]}=${A_DIRS[i]}"); done
setsid python3 "$HELPERS/poll.py" --deadline "$DEADLINE" "${POLL_ARGS[@]}" >"$OUT/poller.log" 2>&1 </dev/null &
POLLER=$!
log "phase polling: Alertmanager API v2 of every analyzer, every 0.1 s"

# ---- 4. analyzers ------------------------------------------------------------------------------------------

# deploy/analyzer.yml as is, with this run's ports; --quick sets analysis.warmup and .baseline.
analyzer_config() { # PORT AM_PORT RECV_PORT CONFIG [SOURCE_PORT]
  sed -e "s|127\.0\.0\.1:19090/api/v1/write|127.0.0.1:$3/api/v1/write|g" \
      -e "s/127\.0\.0\.1:19090/127.0.0.1:${5:-$PROM_PORT}/g" \
      -e "s/127\.0\.0\.1:19093/127.0.0.1:$2/g" \
      -e "s/127\.0\.0\.1:19191/127.0.0.1:$1/g" "$4" |
  if [ "$QUICK" = 1 ]; then
    awk 'BEGIN {found = 0}
      /^analysis:[[:space:]]*$/ {print; print "  warmup: 1m"; print "  baseline: 3m"; found = 1; inblk = 1; next}
      /^[^[:space:]#]/ {inblk = 0}
      inblk && /^  (warmup|baseline):/ {next}
      {print}
      END {if (!found) {print ""; print "# evaluate.sh --quick"; print "analysis:"; print "  warmup: 1m"; print "  baseline: 3m"}}'
  else cat; fi
}
A_STARTED_MS=$(now_ms)
for ((i = 0; i < NA; i++)); do
  d="${A_DIRS[i]}"
  analyzer_config "${A_PORT[i]}" "${AM_PORT[i]}" "${RECV_PORT[i]}" \
    "${A_CFG[${A_NAMES[i]}]:-$ROOT/deploy/analyzer.yml}" >"$d/analyzer.yml"
  "${A_BINS[i]}" run --config.file="$d/analyzer.yml" --check-config >"$d/check-config.log" 2>&1 ||
    die "analyzer ${A_NAMES[i]} refuses its config: $(tail -n 5 "$d/check-config.log")"
  spawn "analyzer-${A_NAMES[i]}" "$d/analyzer.log" bash -c 'cd "$1" && exec "$2" run --config.file="$3"' _ \
    "$d/state" "${A_BINS[i]}" "$d/analyzer.yml"
  AN_PIDS+=("$LAST_PID")
done
# The HugePages case: one more analyzer per evaluated one, on the stand-in hosts' Prometheus,
# writing to the same receiver and the same Alertmanager (its hosts have their own instances).
C_PIDS=()
for ((i = 0; i < NA && CLUSTER; i++)); do
  d="${A_DIRS[i]}"
  mkdir -p "$d/cluster-state"
  analyzer_config "${C_PORT[i]}" "${AM_PORT[i]}" "${RECV_PORT[i]}" \
    "${A_CFG[${A_NAMES[i]}]:-$ROOT/deploy/analyzer.yml}" "$CLUSTER_PROM_PORT" >"$d/cluster-analyzer.yml"
  spawn "cluster-analyzer-${A_NAMES[i]}" "$d/cluster-analyzer.log" bash -c 'cd "$1" && exec "$2" run --config.file="$3"' _ \
    "$d/cluster-state" "${A_BINS[i]}" "$d/cluster-analyzer.yml"
  C_PIDS+=("$LAST_PID")
done
for ((i = 0; i < NA; i++)); do
  wait_http "analyzer ${A_NAMES[i]}" "http://127.0.0.1:${A_PORT[i]}/-/healthy" 30 "${AN_PIDS[i]}"
  if [ "$CLUSTER" = 1 ]; then
    wait_http "cluster analyzer ${A_NAMES[i]}" "http://127.0.0.1:${C_PORT[i]}/-/healthy" 30 "${C_PIDS[i]}"
  fi
done

metric() { # PORT NAME: one unlabelled value of an analyzer's /metrics
  curl -fsS -m 2 "http://127.0.0.1:$1/metrics" 2>/dev/null | awk -v m="$2" '$1 == m {print $2; exit}' || true
}
check_alive() {
  local i
  alive "$EXPORTER_PID" || die "the exporter exited (log: $OUT/exporter.log)"
  alive "$PROM_PID" || die "Prometheus exited (log: $OUT/prometheus.log)"
  alive "$POLLER" || die "the alert poller exited (log: $OUT/poller.log)"
  for ((i = 0; i < NA; i++)); do
    alive "${AN_PIDS[i]}" || die "analyzer ${A_NAMES[i]} exited (log: ${A_DIRS[i]}/analyzer.log)"
  done
  if [ "$CLUSTER" = 1 ]; then
    alive "$CLUSTER_PROM_PID" || die "the stand-in hosts' Prometheus exited (log: $OUT/cluster-prometheus.log)"
    for ((i = 0; i < HP_HOSTS; i++)); do
      alive "${HP_PIDS[i]}" || die "the exporter of host-$((i + 1)) exited (log: $OUT/exporter-host-$((i + 1)).log)"
    done
    for ((i = 0; i < NA; i++)); do
      alive "${C_PIDS[i]}" || die "cluster analyzer ${A_NAMES[i]} exited (log: ${A_DIRS[i]}/cluster-analyzer.log)"
    done
  fi
}
alert_counts() {
  local i s=""
  for ((i = 0; i < NA; i++)); do
    s+="${A_NAMES[i]}: $(awk '/ FIRING /{n++} END{print n+0}' "${A_DIRS[i]}/alerts.log" 2>/dev/null || echo 0) alerts, "
    s+="$(metric "${A_PORT[i]}" reveal_analyzer_windows_flagged_total | cut -d. -f1)/$(metric "${A_PORT[i]}" reveal_analyzer_windows_analyzed_total | cut -d. -f1) windows flagged; "
  done
  echo "${s%; }"
}

log "phase warm-up: waiting for every analyzer's first fit (warm-up ${WARMUP}s of history)"
WARM_DEADLINE=$(( $(now_s) + 3 * WARMUP + 300 ))
LAST_NOTE=0
while :; do
  check_alive
  ready=0
  for ((i = 0; i < NA; i++)); do
    fits="$(metric "${A_PORT[i]}" reveal_analyzer_fits_total)"
    [ "${fits:-0}" != 0 ] && ready=$((ready + 1))
  done
  [ "$ready" = "$NA" ] && break
  [ "$(now_s)" -lt "$WARM_DEADLINE" ] || die "analyzers still warming up after $((3 * WARMUP + 300)) s"
  if [ $(( $(now_s) - LAST_NOTE )) -ge 30 ]; then
    LAST_NOTE=$(now_s)
    log "warm-up: $ready/$NA fitted; ${A_NAMES[0]} says $(metric "${A_PORT[0]}" reveal_analyzer_warmup_remaining_seconds | cut -d. -f1) s left"
  fi
  sleep 1
done
log "warm-up done: every analyzer fitted its first baseline"
# The stand-in hosts' analyzers are not waited for: their hosts' files do not change, and
# detectors that refuse a baseline of constant columns (the literal ones) never fit there,
# which the HugePages case's row then shows.
for ((i = 0; i < NA && CLUSTER; i++)); do
  log "stand-in hosts: analyzer ${A_NAMES[i]} has fitted $(metric "${C_PORT[i]}" reveal_analyzer_fits_total | cut -d. -f1) baselines (see ${A_DIRS[i]}/cluster-analyzer.log)"
done
# watch_until END_S LABEL: until the unix time END_S, checks every process each second and logs
# the minutes left and the alerts so far once a minute.
watch_until() {
  local note
  note=$(now_s)
  while [ "$(now_s)" -lt "$1" ]; do
    check_alive
    if [ $(( $(now_s) - note )) -ge 60 ]; then
      note=$(now_s)
      log "$2: $(( ($1 - $(now_s) + 59) / 60 )) min left; $(alert_counts)"
    fi
    sleep 1
  done
}
# The baseline grows by the refits until it is --baseline-age old; nothing raised before counts.
AGE_END_S=$(( A_STARTED_MS / 1000 + AGE_MIN * 60 ))
if [ "$(now_s)" -lt "$AGE_END_S" ]; then
  log "phase baseline: the analyzers learn until their baseline is ${AGE_MIN} min old (until $(date -d "@$AGE_END_S" +%T)); not scored"
  watch_until "$AGE_END_S" baseline
fi

# ---- 5. fault-free period ----------------------------------------------------------------------------------

FF_START_MS=$(now_ms)
FF_END_S=$(( $(now_s) + FAULT_FREE_MIN * 60 ))
log "phase fault-free: ${FAULT_FREE_MIN} min with the background only (until $(date -d "@$FF_END_S" +%T))"
watch_until "$FF_END_S" fault-free
FF_END_MS=$(now_ms)
log "fault-free done: $(alert_counts)"

# ---- 6. faults -----------------------------------------------------------------------------------------------

: >"$OUT/faults.jsonl"
# hold_until MS: sleeps until the unix time in ms.
hold_until() { while [ "$(now_ms)" -lt "$1" ]; do sleep 0.2; done; }
F="$FAULT_SECONDS"
run_fault() {
  local name="$1" expected="$2" start end cmd extra=""
  F="$FAULT_SECONDS"
  if [ "$name" = hugepages_drift ]; then F="$HP_SECONDS"; fi
  check_alive
  # A random moment of the second: where a fault starts against the analyzer's 1 s window grid
  # decides how much of it its first window holds, so each fault draws its own phase rather
  # than inherit the loop's.
  sleep "0.$(printf '%03d' $((RANDOM % 1000)))"
  start=$(now_ms)
  log "fault $name: start (${F}s, expected subsystem: ${expected//,/ or })"
  case "$name" in
    cpu_saturation)
      cmd="stress-ng --cpu 0 --timeout ${F}s"
      timeout -k 2 $((F + 5)) stress-ng --cpu 0 --timeout "${F}s" --quiet >>"$OUT/faults.log" 2>&1 || true ;;
    memory_hog)
      cmd="stress-ng --vm 1 --vm-bytes 40% --vm-keep --timeout ${F}s"
      timeout -k 2 $((F + 5)) stress-ng --vm 1 --vm-bytes 40% --vm-keep --timeout "${F}s" --quiet >>"$OUT/faults.log" 2>&1 || true ;;
    dirty_page_flood)
      cmd="dd if=/dev/zero of=flood.bin bs=1M count=1536 (buffered, no sync), removed at the end"
      timeout -k 2 "$F" dd if=/dev/zero of="$TMPD/flood.bin" bs=1M count=1536 status=none >>"$OUT/faults.log" 2>&1 || true
      hold_until $((start + F * 1000))
      rm -f "$TMPD/flood.bin" ;;
    storage_read_burst)
      cmd="fio --direct=1 --rw=randread --bs=64k --iodepth=16 --ioengine=libaio --runtime=${F}s on a 1 GiB file"
      timeout -k 2 $((F + 10)) fio --name=read-burst --filename="$TMPD/read-burst.bin" --direct=1 --rw=randread \
        --bs=64k --iodepth=16 --ioengine=libaio --size=1G --runtime="$F" --time_based \
        --output="$OUT/fio.log" >>"$OUT/faults.log" 2>&1 || true ;;
    softirq_flood_one_cpu)
      cmd="iperf3 -u -b 0 -l 64 from $NS to the host, sender and receiver pinned to CPU 0"
      timeout -k 2 $((F + 5)) ip netns exec "$NS" taskset -c 0 iperf3 -c "$HOST_IP" -p "$FLOOD_PORT" -u -b 0 -l 64 \
        -t "$F" -i 5 --forceflush >>"$OUT/faults.log" 2>&1 || true ;;
    packet_loss|packet_loss_0.5pct|packet_loss_0.1pct)
      local permille=15
      case "$name" in packet_loss_0.5pct) permille=5 ;; packet_loss_0.1pct) permille=1 ;; esac
      cmd="nft in $NS: ip saddr $HOST_IP numgen random mod 1000 < $permille drop ($permille per mille of the background stream)"
      ip netns exec "$NS" nft add table inet reveal_eval_loss
      ip netns exec "$NS" nft add chain inet reveal_eval_loss input '{ type filter hook input priority 0; policy accept; }'
      ip netns exec "$NS" nft add rule inet reveal_eval_loss input ip saddr "$HOST_IP" numgen random mod 1000 '<' "$permille" drop
      hold_until $((start + F * 1000))
      ip netns exec "$NS" nft list table inet reveal_eval_loss >>"$OUT/faults.log" 2>&1 || true
      ip netns exec "$NS" nft delete table inet reveal_eval_loss ;;
    irq_imbalance)
      # The same traffic, its receive processing (NET_RX softirqs) moved onto the last CPU:
      # the total is unchanged, only its spread across CPUs.
      local last mask
      last=$(( $(nproc) - 1 )); mask=$(printf '%x' $((1 << last)))
      cmd="receive packet steering of both veth ends to CPU $last (rps_cpus=$mask), background unchanged"
      rps_all "$mask"
      hold_until $((start + F * 1000))
      rps_all 0 ;;
    memory_bandwidth)
      cmd="stress-ng --stream 1 --timeout ${F}s (one worker streaming through memory larger than the caches)"
      timeout -k 2 $((F + 5)) stress-ng --stream 1 --timeout "${F}s" --quiet >>"$OUT/faults.log" 2>&1 || true ;;
    numa_remote)
      # A memory-bound job whose memory is bound to the node its CPUs are not on.
      local far=$(( $(numa_nodes) - 1 ))
      cmd="numactl --cpunodebind=0 --membind=$far stress-ng --stream 1 --timeout ${F}s"
      timeout -k 2 $((F + 5)) numactl --cpunodebind=0 --membind="$far" stress-ng --stream 1 --timeout "${F}s" --quiet \
        >>"$OUT/faults.log" 2>&1 || true ;;
    cpu_frequency)
      # Every CPU's highest frequency lowered to its lowest, restored after the fault.
      cmd="scaling_max_freq of every CPU set to its cpuinfo_min_freq, restored after ${F}s"
      local c saved=()
      for c in /sys/devices/system/cpu/cpu[0-9]*/cpufreq; do
        saved+=("$c=$(cat "$c/scaling_max_freq")")
        cat "$c/cpuinfo_min_freq" >"$c/scaling_max_freq" 2>>"$OUT/faults.log" || true
      done
      hold_until $((start + F * 1000))
      for c in "${saved[@]}"; do echo "${c#*=}" >"${c%%=*}/scaling_max_freq" 2>>"$OUT/faults.log" || true; done ;;
    hugepages_drift)
      # One of the stand-in hosts reserves 1 GiB huge pages that nothing uses (paper §6: one
      # node of nine preallocated them), kept for HP_SECONDS, then given back.
      cmd="$HP_PAGES x 1 GiB huge pages reserved on host-1 of $HP_HOSTS stand-in hosts (${HP_TARGETS[0]}), released after ${F}s"
      extra=",\"alertname\":\"RevealHostDeviation\",\"instance\":\"${HP_TARGETS[0]}\""
      python3 "$HELPERS/hugepages.py" reserve "$TMPD/cluster/host-1" "$HP_PAGES" >>"$OUT/faults.log" 2>&1
      hold_until $((start + F * 1000))
      python3 "$HELPERS/hugepages.py" release "$TMPD/cluster/host-1" "$HP_PAGES" >>"$OUT/faults.log" 2>&1 ;;
    one_flow)
      cmd="the background transfer restarted with one flow of $STREAM_RATE where it had two, restored after ${F}s"
      touch "$TMPD/one-flow"; restart_stream
      hold_until $((start + F * 1000))
      rm -f "$TMPD/one-flow"; restart_stream ;;
  esac
  hold_until $((start + F * 1000))
  end=$(now_ms)
  local exp_json
  exp_json="$(printf '"%s",' ${expected//,/ })"
  printf '{"name":"%s","expected":[%s],"start_ms":%s,"end_ms":%s,"command":"%s"%s}\n' \
    "$name" "${exp_json%,}" "$start" "$end" "${cmd//\"/\\\"}" "$extra" >>"$OUT/faults.jsonl"
  log "fault $name: end ($(( (end - start) / 1000 )) s)"
}
expected_of() {
  case "$1" in
    cpu_saturation) echo cpu ;;
    memory_hog) echo memory ;;
    dirty_page_flood) echo memory,storage ;;
    storage_read_burst) echo storage ;;
    softirq_flood_one_cpu) echo cpu,network ;;
    packet_loss|packet_loss_0.5pct|packet_loss_0.1pct|one_flow) echo network ;;
    irq_imbalance|cpu_frequency) echo cpu ;;
    memory_bandwidth|numa_remote|hugepages_drift) echo memory ;;
  esac
}
log "phase faults: ${NF} faults, ${F}s each, ${GAP}s quiet after each"
for f in "${FAULT_LIST[@]}"; do
  run_fault "$f" "$(expected_of "$f")"
  quiet_end=$(( $(now_s) + GAP ))
  while [ "$(now_s)" -lt "$quiet_end" ]; do check_alive; sleep 1; done
  log "quiet gap over; $(alert_counts)"
done
END_MS=$(now_ms)

# ---- 7. scoring ------------------------------------------------------------------------------------------------

python3 -c 'import json,sys; print(json.dumps([json.loads(l) for l in open(sys.argv[1]) if l.strip()], indent=1))' \
  "$OUT/faults.jsonl" >"$OUT/faults.json"
{
  printf '{\n "host": "%s", "nproc": %s, "kernel": "%s",\n' "$(hostname)" "$(nproc)" "$(uname -r)"
  printf ' "mode": "%s", "fault_seconds": %s, "gap": %s, "warmup_s": %s,\n' \
    "$([ "$QUICK" = 1 ] && echo "quick (warm-up 1m, baseline 3m)" || echo "deploy defaults")" "$FAULT_SECONDS" "$GAP" "$WARMUP"
  printf ' "started_ms": %s, "analyzers_started_ms": %s, "baseline_age_s": %s,\n' "$START_MS" "$A_STARTED_MS" "$((AGE_MIN * 60))"
  hosts_json=""
  for h in "${HP_TARGETS[@]+"${HP_TARGETS[@]}"}"; do hosts_json+="${hosts_json:+, }\"$h\""; done
  printf ' "instance": "127.0.0.1:%s", "stand_in_hosts": [%s],\n' "$EXPORTER_PORT" "$hosts_json"
  printf ' "fault_free": {"start_ms": %s, "end_ms": %s}, "end_ms": %s,\n' "$FF_START_MS" "$FF_END_MS" "$END_MS"
  printf ' "skipped": ['
  for ((i = 0; i < ${#SKIPPED[@]}; i++)); do
    s="${SKIPPED[i]}"
    printf '%s{"name": "%s", "reason": "%s"}' "$([ $i -gt 0 ] && echo ', ')" "${s%%:*}" "${s#*: }"
  done
  printf '],\n "analyzers": [\n'

  for ((i = 0; i < NA; i++)); do
    printf '  {"name": "%s", "path": "%s", "dir": "%s", "receiver_url": "http://127.0.0.1:%s", "alertmanager_url": "http://127.0.0.1:%s"}%s\n' \
      "${A_NAMES[i]}" "${A_BINS[i]}" "${A_DIRS[i]}" "${RECV_PORT[i]}" "${AM_PORT[i]}" "$([ $i -lt $((NA - 1)) ] && echo ,)"
  done
  printf ' ]\n}\n'
} >"$OUT/run.json"
kill -TERM "$POLLER" 2>/dev/null || true
wait "$POLLER" 2>/dev/null || true
POLLER=""
log "phase scoring"
python3 "$HELPERS/score.py" "$OUT" | tee "$OUT/score.log"
DONE=1
