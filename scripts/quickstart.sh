#!/usr/bin/env bash
# Reveal's native quick start: builds the exporter and the analyzer, installs Prometheus and
# Alertmanager from Debian if they are missing, starts all four on loopback with the stack's
# configuration files, and shows live what the analyzer finds. Ctrl-C stops everything.
#
#   scripts/quickstart.sh                 # build, start, follow (Ctrl-C stops everything)
#   scripts/quickstart.sh --demo-fault    # ... and load the CPUs for 20 s after warm-up
#   scripts/quickstart.sh --demo-fault=io # ... or write a burst to disk instead
#   scripts/quickstart.sh --detach        # start, wait until ready, return (stop with `down`)
#   scripts/quickstart.sh down            # stop what a detached run started
#   scripts/quickstart.sh status          # what is running, and where
#
# Options: --profile release|debug (default release), --state-dir DIR, --no-install,
# --warmup DURATION (analyzer warm-up, default 60s), --fault-seconds N (default 20).
# Ports come from REVEAL_EXPORTER_PORT (19190), REVEAL_PROMETHEUS_PORT (19090),
# REVEAL_ALERTMANAGER_PORT (19093) and REVEAL_ANALYZER_PORT (19191).
#
# The configuration is the one docker-compose.yml mounts: rules/prometheus.yml,
# rules/*.rules.yml, rules/alertmanager.yml and deploy/analyzer.yml, copied into the state
# directory with the ports (and rule file paths) rewritten.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${REVEAL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/reveal}"
EXPORTER_PORT="${REVEAL_EXPORTER_PORT:-19190}"
PROMETHEUS_PORT="${REVEAL_PROMETHEUS_PORT:-19090}"
ALERTMANAGER_PORT="${REVEAL_ALERTMANAGER_PORT:-19093}"
ANALYZER_PORT="${REVEAL_ANALYZER_PORT:-19191}"
PROFILE=release
DETACH=0
INSTALL=1
FAULT=""
FAULT_SECONDS=20
WARMUP=60s
CMD=up

if [ -t 1 ]; then B=$'\e[1m'; R=$'\e[31m'; G=$'\e[32m'; Y=$'\e[33m'; D=$'\e[2m'; N=$'\e[0m'
else B=; R=; G=; Y=; D=; N=; fi
say() { printf '%s\n' "${B}reveal${N} $*"; }
STARTED=0
# Fails with a message; once services were started, stops them first (detached or not), so a
# failed start leaves nothing running.
die() {
  printf '%s\n' "${R}reveal: $*${N}" >&2
  if [ "$STARTED" = 1 ]; then stop_all; fi
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    up|down|status) CMD="$1" ;;
    --demo-fault) FAULT=cpu ;;
    --demo-fault=*) FAULT="${1#*=}" ;;
    --detach) DETACH=1 ;;
    --no-install) INSTALL=0 ;;
    --profile) PROFILE="$2"; shift ;;
    --profile=*) PROFILE="${1#*=}" ;;
    --state-dir) STATE="$2"; shift ;;
    --state-dir=*) STATE="${1#*=}" ;;
    --warmup) WARMUP="$2"; shift ;;
    --warmup=*) WARMUP="${1#*=}" ;;
    --fault-seconds) FAULT_SECONDS="$2"; shift ;;
    --fault-seconds=*) FAULT_SECONDS="${1#*=}" ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) printf '%s\n' "reveal: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$FAULT" in ""|cpu|io) ;; *) die "--demo-fault takes cpu or io, not $FAULT" ;; esac
case "$PROFILE" in release|debug) ;; *) die "--profile takes release or debug" ;; esac
[[ "$FAULT_SECONDS" =~ ^[0-9]+$ ]] && [ "$FAULT_SECONDS" -le 120 ] || die "--fault-seconds: 0 to 120"

PIDS="$STATE/pids"

# ---- process bookkeeping ------------------------------------------------------------------

# Records a started child as "name pid command-pattern" so `down` (or the Ctrl-C trap) stops
# exactly it.
track() { echo "$1 $2 $3" >>"$PIDS"; }

# Whether pid $1 is still the process we started, its command line matching $2 (pids get
# reused after a reboot).
# The process may exit between the test and the read: the redirection's error is silenced too.
ours() { [ -r "/proc/$1/cmdline" ] && { tr '\0' ' ' <"/proc/$1/cmdline"; } 2>/dev/null | grep -qF -- "$2"; }

stop_all() {
  [ -f "$PIDS" ] || return 0
  local name pid cmd
  # Reverse order: the load and the analyzer first, the exporter last.
  while read -r name pid cmd; do
    if ours "$pid" "$cmd"; then kill "$pid" 2>/dev/null || true; fi
  done < <(tac "$PIDS")
  for _ in $(seq 50); do
    local alive=0
    while read -r name pid cmd; do if ours "$pid" "$cmd"; then alive=1; fi; done <"$PIDS"
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  while read -r name pid cmd; do
    if ours "$pid" "$cmd"; then kill -9 "$pid" 2>/dev/null || true; fi
  done <"$PIDS"
  rm -f "$PIDS" "$STATE/demo-fault.bin"
}

# ---- tiny HTTP client over bash's /dev/tcp (no curl on a fresh Debian) -----------------------

# http_get PORT PATH: prints the body of a 200 response, fails otherwise.
http_get() {
  local port="$1" path="$2" status body
  body="$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$1" >&3
    cat <&3' "$port" "$path" 2>/dev/null)" || return 1
  status="$(printf '%s' "$body" | head -n1 | tr -d '\r' | cut -d' ' -f2)"
  [ "$status" = 200 ] || return 1
  printf '%s' "$body" | sed '1,/^\r\{0,1\}$/d'
}

# Refuses to start when a port is taken: the service would fail to bind while whatever holds
# the port answered in its place.
need_free_port() {
  if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$2" 2>/dev/null; then
    die "port $2 for $1 is in use by another process (set $3 to another port)"
  fi
}

# wait_ready NAME PORT PATH SECONDS: waits for a 200 from the process started last under
# NAME, showing a spinner; fails with its log if it exits or the time runs out.
wait_ready() {
  local name="$1" port="$2" path="$3" secs="$4" i=0 spin='|/-\' pid
  pid="$(awk -v n="$name" '$1 == n {p = $2} END {print p}' "$PIDS")"
  while ! http_get "$port" "$path" >/dev/null; do
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      printf '\n'
      tail -n 20 "$STATE/$name.log" >&2 || true
      die "$name exited during start-up (log: $STATE/$name.log)"
    fi
    i=$((i + 1))
    if [ $((i / 10)) -ge "$secs" ]; then
      printf '\n'
      tail -n 20 "$STATE/$name.log" >&2 || true
      die "$name did not become ready on 127.0.0.1:$port within ${secs}s (log: $STATE/$name.log)"
    fi
    [ -t 1 ] && printf '\r  %s waiting for %s on 127.0.0.1:%s ' "${spin:i%4:1}" "$name" "$port"
    sleep 0.1
  done
  [ -t 1 ] && printf '\r\e[K'
  say "${G}ready${N}  $name on http://127.0.0.1:$port"
}

# ---- commands -------------------------------------------------------------------------------

status() {
  if [ ! -f "$PIDS" ]; then say "nothing running (state: $STATE)"; return 0; fi
  local name pid cmd
  while read -r name pid cmd; do
    if ours "$pid" "$cmd"; then say "running  $name (pid $pid)"; else say "${Y}gone${N}     $name (pid $pid)"; fi
  done <"$PIDS"
}

if [ "$CMD" = down ]; then stop_all; say "stopped (state kept in $STATE)"; exit 0; fi
if [ "$CMD" = status ]; then status; exit 0; fi

mkdir -p "$STATE"
if [ -f "$PIDS" ]; then
  say "stopping what a previous run left running"
  stop_all
fi
: >"$PIDS"
STARTED=1
if [ "$DETACH" = 0 ]; then
  trap 'printf "\n"; say "stopping everything"; stop_all; say "stopped (state kept in $STATE)"; exit 0' INT TERM
fi

# 1. Prometheus and Alertmanager from Debian when missing.
find_bin() { for b in "$@"; do command -v "$b" 2>/dev/null && return 0; done; return 1; }
PROMETHEUS="$(find_bin prometheus || true)"
ALERTMANAGER="$(find_bin prometheus-alertmanager alertmanager || true)"
if [ -z "$PROMETHEUS" ] || [ -z "$ALERTMANAGER" ]; then
  [ "$INSTALL" = 1 ] || die "prometheus or alertmanager missing and --no-install given"
  command -v apt-get >/dev/null || die "install prometheus and alertmanager (no apt-get here)"
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  say "[1/5] installing prometheus and prometheus-alertmanager (apt-get)"
  $SUDO apt-get update -q
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
    prometheus prometheus-alertmanager
  # Debian starts both as services on 9090/9093; Reveal's instances use their own ports and
  # leave those alone.
  PROMETHEUS="$(find_bin prometheus)"; ALERTMANAGER="$(find_bin prometheus-alertmanager alertmanager)"
else
  say "[1/5] prometheus and alertmanager found: $PROMETHEUS, $ALERTMANAGER"
fi

# 2. Build.
command -v cargo >/dev/null || die "cargo not found: install Rust (https://rustup.rs)"
say "[2/5] building reveal-exporter and reveal-analyzer ($PROFILE; the first build takes a few minutes)"
PFLAG=(); [ "$PROFILE" = release ] && PFLAG=(--release)
(cd "$ROOT" && cargo build "${PFLAG[@]}" -p reveal-exporter -p reveal-analyzer)
TARGET="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
BIN="${TARGET:-$ROOT/target}/$PROFILE"
[ -x "$BIN/reveal-exporter" ] || die "no $BIN/reveal-exporter after the build"
# The build leaves hundreds of megabytes of dirty page cache that the kernel writes back over
# the next half minute: the analyzer's first baseline minute would learn that write-back
# (dirty and writeback memory falling by 100 MB) as normal, and judge the host against it.
say "flushing the build's files to disk (sync)"
sync

# 3. Configuration: the stack's files with this run's ports and absolute rule paths.
say "[3/5] writing configuration to $STATE"
ports() {
  sed -e "s/127\.0\.0\.1:19190/127.0.0.1:$EXPORTER_PORT/g" \
      -e "s/127\.0\.0\.1:19090/127.0.0.1:$PROMETHEUS_PORT/g" \
      -e "s/127\.0\.0\.1:19093/127.0.0.1:$ALERTMANAGER_PORT/g" \
      -e "s/127\.0\.0\.1:19191/127.0.0.1:$ANALYZER_PORT/g" "$1"
}
ports "$ROOT/rules/prometheus.yml" |
  sed -e "s|^  - \([a-z]*\.rules\.yml\)$|  - $ROOT/rules/\1|" >"$STATE/prometheus.yml"
cp "$ROOT/rules/alertmanager.yml" "$STATE/alertmanager.yml"
{
  ports "$ROOT/deploy/analyzer.yml"
  # A short warm-up, so a newcomer sees results in minutes; the stack's file keeps the
  # analyzer's default (a baseline needs history to be trustworthy).
  printf '\nanalysis:\n  warmup: %s\n' "$WARMUP"
} >"$STATE/analyzer.yml"

# 4. Start.
say "[4/5] starting on loopback (logs: $STATE/*.log)"
need_free_port exporter "$EXPORTER_PORT" REVEAL_EXPORTER_PORT
need_free_port prometheus "$PROMETHEUS_PORT" REVEAL_PROMETHEUS_PORT
need_free_port alertmanager "$ALERTMANAGER_PORT" REVEAL_ALERTMANAGER_PORT
need_free_port analyzer "$ANALYZER_PORT" REVEAL_ANALYZER_PORT
"$BIN/reveal-exporter" --web.listen-address="127.0.0.1:$EXPORTER_PORT" \
  --metrics.selection="$ROOT/deploy/selection.yml" --metrics.fast="$ROOT/deploy/selection-fast.yml" \
  >"$STATE/exporter.log" 2>&1 &
track exporter $! "$BIN/reveal-exporter"
"$PROMETHEUS" --config.file="$STATE/prometheus.yml" --storage.tsdb.path="$STATE/prometheus-data" \
  --storage.tsdb.retention.time=1d --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" \
  --web.enable-remote-write-receiver >"$STATE/prometheus.log" 2>&1 &
track prometheus $! "$PROMETHEUS --config.file=$STATE/"
"$ALERTMANAGER" --config.file="$STATE/alertmanager.yml" --storage.path="$STATE/alertmanager-data" \
  --web.listen-address="127.0.0.1:$ALERTMANAGER_PORT" --cluster.listen-address= \
  >"$STATE/alertmanager.log" 2>&1 &
track alertmanager $! "$ALERTMANAGER --config.file=$STATE/"
ANALYZER=0
if [ -x "$BIN/reveal-analyzer" ] && "$BIN/reveal-analyzer" --help 2>&1 | grep -qw run; then
  (cd "$STATE" && exec "$BIN/reveal-analyzer" run --config.file="$STATE/analyzer.yml") \
    >"$STATE/analyzer.log" 2>&1 &
  track analyzer $! "$BIN/reveal-analyzer run"
  ANALYZER=1
fi
wait_ready exporter "$EXPORTER_PORT" /metrics 30
wait_ready prometheus "$PROMETHEUS_PORT" /-/ready 60
wait_ready alertmanager "$ALERTMANAGER_PORT" /-/ready 30
if [ "$ANALYZER" = 1 ]; then
  wait_ready analyzer "$ANALYZER_PORT" /-/healthy 30
else
  say "${Y}reveal-analyzer has no \`run\` command in this build yet: running without it${N}"
  say "  (Prometheus, its recording rules and Alertmanager still work; no anomaly detection)"
fi
say "Prometheus   http://127.0.0.1:$PROMETHEUS_PORT/graph?g0.expr=instance:reveal_cpu_utilization:ratio1s"
say "Alertmanager http://127.0.0.1:$ALERTMANAGER_PORT"
# Grafana is not in Debian; the compose service alone (host network) reads this Prometheus
# when the default ports are in use.
say "Grafana      docker-compose up -d --no-deps grafana, then http://127.0.0.1:19300"

if [ "$DETACH" = 1 ]; then
  say "started; stop with: $0 down${STATE:+ --state-dir $STATE}"
  exit 0
fi

# 5. Warm-up, optional fault, then follow what the analyzer finds.
seconds() { # 90s, 2m, 1m30s -> seconds
  local d="$1" total=0 n
  while [[ "$d" =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
    n="${BASH_REMATCH[1]}"
    case "${BASH_REMATCH[2]}" in h) n=$((n * 3600)) ;; m) n=$((n * 60)) ;; esac
    total=$((total + n)); d="${BASH_REMATCH[3]}"
  done
  echo "$total"
}
# Values of the analyzer's /metrics (series without labels), in the order named, one line
# each ("" for one it lacks), from one scrape.
#
# The demo watches the host the analyzer learns, and on a host of two CPUs the watching shows:
# a process forked per field of every flagged window (dozens a second) was itself a deviation
# (page faults, RCU callbacks, user time) that kept an alert open after its fault, and a
# warm-up polled more often than the follow below made the follow look quieter than the
# baseline. So both loops poll every 2 s, each poll a handful of processes whatever it finds.
analyzer_metrics() {
  http_get "$ANALYZER_PORT" /metrics 2>/dev/null |
    awk -v names="$*" 'BEGIN {n = split(names, want, " ")} {v[$1] = $2}
      END {for (i = 1; i <= n; i++) print v[want[i]]}' || true
}
if [ "$ANALYZER" = 1 ]; then
  W="$(seconds "$WARMUP")"
  say "[5/5] the analyzer learns this host's baseline ($WARMUP of windows)"
  # The analyzer reports its own warm-up; wall time alone would start the fault early when
  # windows lag behind (a loaded host, a late first scrape).
  deadline=$((SECONDS + 3 * W + 120))
  while :; do
    # Done once the first baseline is fitted (the warm-up gauge reads 0 before it starts).
    { read -r fits; read -r rem; } < <(analyzer_metrics reveal_analyzer_fits_total \
      reveal_analyzer_warmup_remaining_seconds; echo; echo)
    [ "${fits:-0}" != 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "${Y}the analyzer is still warming up after $((3 * W + 120))s; following anyway${N}"
      break
    fi
    rem="${rem%%.*}"; rem="${rem:-$W}"
    done_s=$((W - rem)); [ "$done_s" -lt 0 ] && done_s=0
    bar="$(printf '%*s' $((done_s * 30 / (W > 0 ? W : 1))) '' | tr ' ' '#')"
    [ -t 1 ] && printf '\r  [%-30s] %3ds of %ds ' "$bar" "$done_s" "$W"
    sleep 2
  done
  [ -t 1 ] && printf '\r\e[K'
  say "${G}warm-up done${N}: anomalies now show below (and in Prometheus as reveal_anomaly_*)"
else
  say "[5/5] following Alertmanager"
fi

fault() {
  local kind="$1" secs="$2"
  say "${Y}demo fault${N}: $kind load for ${secs}s, starting now ($(date +%T))"
  if [ "$kind" = cpu ]; then
    local n; n="$(nproc)"
    for ((c = 0; c < n; c++)); do
      timeout "$secs" bash -c 'while :; do :; done' &
      track demo-fault $! "while :; do :; done"
    done
  else
    # Bounded in time, and in size by rewriting the same 256 MiB; removed by `down` and Ctrl-C.
    timeout "$secs" bash -c 'while :; do dd if=/dev/zero of="$0" bs=1M count=256 oflag=direct \
      conv=notrunc status=none || exit; done' "$STATE/demo-fault.bin" &
    track demo-fault $! "dd if=/dev/zero"
  fi
}
[ -n "$FAULT" ] && fault "$FAULT" "$FAULT_SECONDS"

# One line per open alert: "fingerprint|start|alertname|severity|instance|subsystem|summary".
# The value of a string field is taken with its JSON escapes (\") intact, then undone.
alerts() {
  http_get "$ALERTMANAGER_PORT" '/api/v2/alerts?active=true&silenced=false&inhibited=false' |
    sed 's/},{"annotations"/}\n{"annotations"/g' | awk '
      function f(k,   r) {
        if (!match($0, "\"" k "\":\"([^\"\\\\]|\\\\.)*\"")) return ""
        r = substr($0, RSTART + length(k) + 4, RLENGTH - length(k) - 5)
        gsub(/\\"/, "\"", r)
        return r
      }
      f("alertname") != "" {
        print f("fingerprint") "|" substr(f("startsAt"), 12, 8) "|" f("alertname") "|" \
          f("severity") "|" f("instance") "|" f("subsystem") "|" f("summary")
      }'
}
# Flagged windows from the analyzer's report (reports/windows.jsonl, one JSON object a line),
# from line $1 on: "FLAGGED time detectors (agreement/3) top-subsystem share: claim".
flagged() {
  local f="$STATE/reports/windows.jsonl"
  [ -f "$f" ] || return 0
  tail -n +"$1" "$f" | awk -v Y="$Y" -v N="$N" -v B="$B" '
    function field(re, from, to) {
      return match($0, re) ? substr($0, RSTART + from, RLENGTH - from - to) : ""
    }
    {
      ms = field("\"end_ms\":[0-9]+", 9, 0)
      agree = field("\"agreement\":[0-9]+", 12, 0)
      dets = field("\"detectors\":\\[[^]]*\\]", 13, 1)
      gsub(/"/, "", dets); gsub(/,/, "+", dets)
      # The heaviest subsystem of ["name",share] pairs.
      subs = field("\"subsystems\":\\[(\\[[^]]*\\],?)*\\]", 14, 1)
      top = ""; best = -1
      while (match(subs, /\["[a-z]+",[0-9.e+-]+\]/)) {
        pair = substr(subs, RSTART + 2, RLENGTH - 3); subs = substr(subs, RSTART + RLENGTH)
        split(pair, kv, "\",")
        if (kv[2] + 0 > best) { best = kv[2] + 0; top = kv[1] }
      }
      claim = field("\"summary\":\"([^\"\\\\]|\\\\.)*\"", 11, 1)
      gsub(/\\"/, "\"", claim)
      printf "%sFLAGGED%s  %s %s (%s/3) %s%s %d%%%s: %s\n", Y, N, strftime("%T", int(ms / 1000)),
        dets == "" ? "?" : dets, agree == "" ? "?" : agree, B, top, best * 100, N, substr(claim, 1, 160)
    }'
}
SEEN=0
[ -f "$STATE/reports/windows.jsonl" ] && SEEN="$(wc -l <"$STATE/reports/windows.jsonl")"
declare -A OPEN=()
say "following flagged windows and alerts (Ctrl-C stops everything)"
while :; do
  if [ -f "$STATE/reports/windows.jsonl" ]; then
    total="$(wc -l <"$STATE/reports/windows.jsonl")"
    if [ "$total" -gt "$SEEN" ]; then
      [ -t 1 ] && printf '\r\e[K'
      flagged $((SEEN + 1)) | head -n "$((total - SEEN))"
      SEEN="$total"
    fi
  fi
  declare -A NOW=()
  while IFS='|' read -r fp start name sev inst sub summary; do
    [ -n "$fp" ] || continue
    NOW[$fp]=1
    if [ -z "${OPEN[$fp]:-}" ]; then
      OPEN[$fp]="$name $sub on $inst"
      printf '%s\n' "${R}FIRING${N}   $start $name ${B}${sub:-}${N} on $inst [${sev:-}]: ${summary:-}"
    fi
  done < <(alerts || true)
  for fp in "${!OPEN[@]}"; do
    if [ -z "${NOW[$fp]:-}" ]; then
      printf '%s\n' "${G}RESOLVED${N} $(date +%T) ${OPEN[$fp]}"
      unset "OPEN[$fp]"
    fi
  done
  unset NOW
  if [ "$ANALYZER" = 1 ] && [ -t 1 ]; then
    { read -r n; read -r f; } < <(analyzer_metrics reveal_analyzer_windows_analyzed_total \
      reveal_analyzer_windows_flagged_total; echo; echo)
    printf '\r%s' "${D}  $(date +%T) windows analyzed ${n:-?}, flagged ${f:-?}; open alerts ${#OPEN[@]}${N} "
  fi
  sleep 2
  [ -t 1 ] && printf '\r\e[K'
done
