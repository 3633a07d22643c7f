#!/usr/bin/env bash
# The `interrupts` bench of this tree and of an older commit, on the big-host fixture, run
# alternately (old new old new) so that load beside them falls on both alike.
#
#   exporter/benches/interrupts_side_by_side.sh BASE_COMMIT [ROUNDS]
#
# The older commit is checked out in a temporary git worktree with this tree's
# exporter/benches/interrupts.rs copied in (it needs only the collector's public API:
# `parse_interrupts`, `InterruptsCollector`, `KeptFile::read_into`), and built in a target
# directory of its own: the two trees' crates have the same names, and one shared target
# directory would hand the older tree the newer build as "fresh". Env: REVEAL_BENCH_N (runs
# per row, default 1000), FIXTURE (default: a fresh scripts/big_host_fixture.py root in a
# temporary directory), CARGO_TARGET_DIR (this tree's; the older one's is it plus -base).
set -euo pipefail
case "${1:-}" in
-h | --help)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
cd "$(dirname "$0")/../.."
BASE=${1:?usage: $0 BASE_COMMIT [ROUNDS]}
ROUNDS=${2:-2}
TMP=$(mktemp -d)
trap 'git worktree remove --force "$TMP/base" 2>/dev/null || true; rm -rf "$TMP"' EXIT
FIXTURE=${FIXTURE:-$TMP/fixture}
[ -f "$FIXTURE/proc/interrupts" ] || python3 scripts/big_host_fixture.py "$FIXTURE" >/dev/null
TARGET=${CARGO_TARGET_DIR:-$PWD/target}

git worktree add -q --detach "$TMP/base" "$BASE"
cp exporter/benches/interrupts.rs "$TMP/base/exporter/benches/interrupts.rs"
grep -q 'name = "interrupts"' "$TMP/base/exporter/Cargo.toml" ||
    printf '\n[[bench]]\nname = "interrupts"\nharness = false\n' >>"$TMP/base/exporter/Cargo.toml"

bench_bin() { # DIR TARGET: builds the bench and prints its executable's path
    (cd "$1" && CARGO_TARGET_DIR=$2 cargo bench -p reveal-exporter --bench interrupts --no-run \
        --message-format=json 2>/dev/null) |
        python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "interrupts" and m.get("executable"):
        print(m["executable"])' | tail -1
}
cp "$(bench_bin "$TMP/base" "$TARGET-base")" "$TMP/old"
cp "$(bench_bin "$PWD" "$TARGET")" "$TMP/new"

echo "fixture $FIXTURE; before = $(git rev-parse --short "$BASE"), after = this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- exporter schema || echo ', modified'))"
for _ in $(seq "$ROUNDS"); do
    for b in old new; do
        echo "== $( [ $b = old ] && echo before || echo after )"
        REVEAL_BENCH_ROOT=$FIXTURE "$TMP/$b" | sed '/^$/d'
    done
done
