#!/usr/bin/env bash
# Runs the README's quick start with its demo fault, as a new user would, several times from
# fresh state directories, and says for each run whether the CPU alert fired and resolved and
# how long after the fault began it reached Alertmanager. With --write-docs the first run's
# transcript becomes the example in README.md and docs/quickstart.md; with --render the
# dashboards in docs/dashboards/ are rendered from the last run's live Prometheus.
set -euo pipefail

usage() {
  cat <<'EOF'
Runs the quick start's demo fault (scripts/quickstart.sh --demo-fault) from fresh state
directories and reports, for each run, whether the CPU alert fired, its latency from the
fault's start to the analyzer opening the alert, its severity, and whether it resolved.

  scripts/quickstart_demo.sh                       # 10 runs, the first after a fresh build
  scripts/quickstart_demo.sh --runs 3 --out /tmp/demo
  scripts/quickstart_demo.sh --runs 1 --write-docs --render   # refresh the README's example

Options:
  --runs N       runs (default 10)
  --out DIR      transcripts, state directories and results.md (default /tmp/reveal-demo-<time>)
  --no-rebuild   do not touch the sources first (by default the first run follows a real
                 release build, the new user's case: the build's write-back and the stack's
                 own start fall in the analyzer's first minute of baseline)
  --write-docs   put the first run's transcript (long runs of FLAGGED lines abridged) between
                 the quickstart-demo markers of README.md and docs/quickstart.md
  --render       render the dashboards into docs/dashboards/ from the last run, before it
                 stops (python3 with scripts/requirements-render.txt)
  --settle S     seconds to follow after the fault begins (default 60)
  --profile P    build the quick start uses: release (default, the README's) or debug (the
                 end-to-end test's)
  -h, --help     this text

Ports: REVEAL_EXPORTER_PORT and the others as for the quick start (defaults here 39190,
39090, 39093, 39191, so a stack on the standard ports is left alone). Needs what the quick
start needs, and setsid (util-linux).
EOF
}

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS=10 OUT="" REBUILD=1 WRITE=0 RENDER=0 SETTLE=60 PROFILE=release
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --no-rebuild) REBUILD=0 ;;
    --profile) PROFILE="$2"; shift ;;
    --write-docs) WRITE=1 ;;
    --render) RENDER=1 ;;
    --settle) SETTLE="$2"; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "quickstart_demo: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$PROFILE" in release|debug) ;; *) echo "quickstart_demo: --profile takes release or debug" >&2; exit 2 ;; esac
case "$RUNS$SETTLE" in *[!0-9]*|"") echo "quickstart_demo: --runs and --settle take whole numbers" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] || { echo "quickstart_demo: --runs must be at least 1" >&2; exit 2; }
OUT="${OUT:-/tmp/reveal-demo-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
export REVEAL_EXPORTER_PORT="${REVEAL_EXPORTER_PORT:-39190}"
export REVEAL_PROMETHEUS_PORT="${REVEAL_PROMETHEUS_PORT:-39090}"
export REVEAL_ALERTMANAGER_PORT="${REVEAL_ALERTMANAGER_PORT:-39093}"
export REVEAL_ANALYZER_PORT="${REVEAL_ANALYZER_PORT:-39191}"
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }

PID=""
stop_run() {
  local state="$1"
  # TERM, not INT: a command started in the background of a script ignores SIGINT, and the
  # quick start traps TERM the same way (it stops everything and exits).
  [ -n "$PID" ] && kill -TERM -- "-$PID" 2>/dev/null || true
  for _ in $(seq 1 20); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
  REVEAL_STATE_DIR="$state" "$ROOT/scripts/quickstart.sh" down >/dev/null 2>&1 || true
  PID=""
}
trap '[ -n "$PID" ] && stop_run "$OUT/state$i"; exit 130' INT TERM

# Each detector's highest score / threshold (reveal_anomaly_score, above 1 flags) over the
# fault's 20 s, from the run's Prometheus: how far from its bar a missed fault stayed.
fault_peaks() {
  local at=$(($1 + 20)) d v out=""
  for d in zscore pca iforest; do
    v="$(curl -sf "http://127.0.0.1:$REVEAL_PROMETHEUS_PORT/api/v1/query" \
      --data-urlencode "query=max(max_over_time(reveal_anomaly_score{detector=\"$d\"}[20s]))" \
      --data-urlencode "time=$at" 2>/dev/null |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print("%.2f" % float(r[0]["value"][1]) if r else "—")' \
      2>/dev/null || echo "—")"
    out="${out:+$out / }$v"
  done
  printf '%s' "$out"
}

# Epoch seconds (with fractions) of the analyzer's first "episode opened" log line. The CPU
# alert is sent with the episode's opening whether cpu is its heaviest subsystem (the line
# names that one) or only holds a quarter of it; the transcript's FIRING line says it was sent.
opened_at() {
  local line
  line="$(sed 's/\x1b\[[0-9;]*m//g' "$1" | grep -m1 'episode opened' || true)"
  [ -n "$line" ] || return 0
  # The time is the line's first field: bare on a terminal, `ts=…` in logfmt (the analyzer's
  # format when its stderr is a file).
  date -d "$(printf '%s' "$line" | cut -d' ' -f1 | sed 's/^ts=//')" +%s.%N
}

{
  echo "| run | build before it | cpu alert | latency (s) | severity | resolved | peak z / pca / forest | other alerts |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
} >"$OUT/results.md"
for ((i = 1; i <= RUNS; i++)); do
  state="$OUT/state$i" out="$OUT/run$i.txt"
  rm -rf "$state"
  built="none (binaries up to date)"
  if [ "$i" = 1 ] && [ "$REBUILD" = 1 ]; then
    touch "$ROOT/analyzer/src/main.rs" "$ROOT/exporter/src/main.rs"
    built="$PROFILE (sources touched)"
  fi
  log "run $i of $RUNS: quick start with --demo-fault, state in $state"
  REVEAL_STATE_DIR="$state" setsid "$ROOT/scripts/quickstart.sh" --demo-fault --profile "$PROFILE" >"$out" 2>&1 &
  PID=$!
  for _ in $(seq 1 1800); do
    grep -q "demo fault" "$out" 2>/dev/null && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 1
  done
  if ! grep -q "demo fault" "$out"; then
    stop_run "$state"
    log "run $i: the quick start stopped before its fault (see $out)"
    tail -n 5 "$out" >&2
    exit 1
  fi
  fault_at="$(date -d "$(grep -m1 'demo fault' "$out" | grep -o '([0-9:]*)' | tr -d '()')" +%s)"
  sleep "$SETTLE"
  if [ "$RENDER" = 1 ] && [ "$i" = "$RUNS" ]; then
    log "rendering the dashboards from run $i"
    python3 "$ROOT/scripts/render_dashboards.py" --minutes 3 --out "$ROOT/docs/dashboards" \
      --prometheus "http://127.0.0.1:$REVEAL_PROMETHEUS_PORT" \
      --alertmanager "http://127.0.0.1:$REVEAL_ALERTMANAGER_PORT" >&2 || log "rendering failed"
  fi
  peaks="$(fault_peaks "$fault_at")"
  stop_run "$state"
  opened="$(opened_at "$state/analyzer.log")"
  latency="—" alert=no sev="—" resolved=no
  if [ -n "$opened" ] && grep -q 'FIRING .* cpu on' "$out"; then
    alert=yes
    latency="$(awk -v a="$opened" -v b="$fault_at" 'BEGIN {printf "%.1f", a - b}')"
  fi
  firing="$(grep -m1 'FIRING .* cpu on' "$out" || true)"
  [ -n "$firing" ] && sev="$(printf '%s' "$firing" | grep -o '\[[a-z]*\]' | head -n1 | tr -d '[]')"
  grep -q 'RESOLVED .* cpu on' "$out" && resolved=yes
  others="$(grep 'FIRING' "$out" | grep -v ' cpu on' | grep -o 'RevealAnomaly [a-z]*' | sort -u |
    cut -d' ' -f2 | paste -sd, - || true)"
  echo "| $i | $built | $alert | $latency | $sev | $resolved | $peaks | ${others:-none} |" >>"$OUT/results.md"
  log "run $i: cpu alert $alert, latency ${latency} s, severity $sev, resolved $resolved"
done

alerted="$(awk -F' [|] ' '$3 == "yes"' "$OUT/results.md" | wc -l)"
{
  echo
  echo "$alerted of $RUNS runs alerted on cpu; median latency $(awk -F' [|] ' '$3 == "yes" {print $4}' \
    "$OUT/results.md" | sort -g | awk '{v[NR] = $1} END {
      if (NR == 0) print "—"; else if (NR % 2) print v[(NR + 1) / 2] " s";
      else printf "%.1f s\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')."
} >>"$OUT/results.md"
cat "$OUT/results.md"

if [ "$WRITE" = 1 ]; then
  python3 - "$OUT/run1.txt" "$ROOT" <<'EOF'
import re, sys, pathlib
transcript, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
lines = [re.sub(r"\x1b\[[0-9;]*m", "", l) for l in transcript.read_text().splitlines()]
# From the stack's start on; compiler output and progress bars are left out.
start = next((i for i, l in enumerate(lines) if "[4/5]" in l), 0)
kept, run = [], 0
for l in lines[start:]:
    # Blank lines and the shell's "Terminated" come from this script stopping the follow loop.
    if l.startswith("reveal following") or l.startswith("  [") or l.strip() in ("", "Terminated"):
        continue
    if l.startswith("FLAGGED"):
        run += 1
        if run > 3:
            continue
    else:
        if run > 3:
            kept.append(f"…  ({run - 3} more FLAGGED)")
        run = 0
    kept.append(l[:220])
if run > 3:
    kept.append(f"…  ({run - 3} more FLAGGED)")
block = "```text\n$ scripts/quickstart.sh --demo-fault\n" + "\n".join(kept) + "\n```"
for doc in ("README.md", "docs/quickstart.md"):
    p = root / doc
    text = p.read_text()
    new, n = re.subn(r"(<!-- quickstart-demo:begin -->\n).*?(<!-- quickstart-demo:end -->)",
                     lambda m: m.group(1) + block + "\n" + m.group(2), text, flags=re.S)
    if n != 1:
        sys.exit(f"{doc}: no quickstart-demo markers")
    p.write_text(new)
    print(f"wrote the example into {doc}", file=sys.stderr)
EOF
fi
