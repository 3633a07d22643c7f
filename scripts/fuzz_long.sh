#!/usr/bin/env bash
# The long fuzz run (docs/testing.md) in shards: each target's inputs are split into SHARDS runs
# of CASES inputs, each with its own proptest seed. The fuzzer draws every input afresh from
# the fixtures (no input depends on an earlier one), so ten shards of 1,000,000 are ten million
# inputs of one distribution, and shards can run on several cores at once and across days.
#
#   scripts/fuzz_long.sh [--dir DIR] [--shards N] [--cases N] [--bin FUZZ_BINARY] TARGET...
#
# Start it once per core that may be used; workers claim shards (mkdir, atomic) and skip
# finished ones, so running it again continues where it stopped. Per shard in DIR (default
# /tmp/reveal-fuzz): TARGET.K.log (the fuzzer's report), TARGET.K.time (CPU time, peak memory),
# TARGET.K.done once it passed, slow-TARGET-K/ (the slowest input); DIR/log lists starts and
# ends. A shard that panicked is left without .done, with its shrunk input in its log. A shard
# left claimed by a worker that was killed: remove DIR/TARGET.K.lock. Without --bin the fuzz
# test binary is built in release first. Runs at nice 19.
set -euo pipefail
ROOT="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
DIR=/tmp/reveal-fuzz; SHARDS=10; CASES=1000000; BIN=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR="$2"; shift 2 ;;
    --shards) SHARDS="$2"; shift 2 ;;
    --cases) CASES="$2"; shift 2 ;;
    --bin) BIN="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "name at least one target (tests/fuzz.rs), see --help" >&2; exit 2; }
[[ "$SHARDS" =~ ^[1-9][0-9]*$ && "$CASES" =~ ^[1-9][0-9]*$ ]] || { echo "--shards and --cases take positive numbers" >&2; exit 2; }
if [ -z "$BIN" ]; then
  BIN="$(cd "$ROOT" && cargo test --release -p reveal-e2e --test fuzz --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "fuzz":
        print(m["executable"])')"
fi
[ -x "$BIN" ] || { echo "no fuzz binary at '$BIN'" >&2; exit 1; }
mkdir -p "$DIR"
for t in "$@"; do
  for k in $(seq 1 "$SHARDS"); do
    [ -e "$DIR/$t.$k.done" ] && continue
    mkdir "$DIR/$t.$k.lock" 2>/dev/null || continue
    seed=$((1000003 * k + ${#t} * 7919))
    mkdir -p "$DIR/slow-$t-$k"
    echo "START $t shard $k/$SHARDS seed $seed $(date -u +%FT%TZ)" >>"$DIR/log"
    rc=0
    PROPTEST_RNG_SEED=$seed REVEAL_FUZZ_CASES=$CASES REVEAL_FUZZ_SLOWEST="$DIR/slow-$t-$k" \
      /usr/bin/time -f "cpu user %U s sys %S s wall %e s maxrss %M KB" -o "$DIR/$t.$k.time" \
      nice -n 19 "$BIN" --exact "$t" --nocapture --test-threads 1 >"$DIR/$t.$k.log" 2>&1 || rc=$?
    report="$(grep -h 'fuzz ' "$DIR/$t.$k.log" | tail -n 1)"
    echo "END $t shard $k rc=$rc $(date -u +%FT%TZ) $report $(cat "$DIR/$t.$k.time")" >>"$DIR/log"
    if [ "$rc" = 0 ] && grep -q '^test result: ok. 1 passed' "$DIR/$t.$k.log"; then
      printf 'seed %s cases %s\n%s\n%s\n' "$seed" "$CASES" "$report" "$(cat "$DIR/$t.$k.time")" >"$DIR/$t.$k.done"
    fi
    rmdir "$DIR/$t.$k.lock"
  done
done
