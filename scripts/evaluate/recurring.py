#!/usr/bin/env python3
"""Does the analyzer learn an event that recurs? A generated host with a periodic checkpoint,
replayed through the service's engine (docs/evaluation/history.md, run 39).

    recurring.py [--replay BIN] [--periods 2,5,10,15,20,30] [--hours 2.5] [--seconds 20] [--out DIR]

For each period P (minutes) it writes a recording of a quiet host at 100 ms (DIR/ckP.csv: dirty
pages, bytes written, CPU busy time, context switches and anonymous pages, each with uniform
noise) in which a checkpoint of --seconds (dirty pages rising to 600 MB over 5 s, 400 MB/s
written, 0.6 of a CPU busier) comes every P minutes from minute 40 on, replays it with
`BIN replay --input DIR/ckP.csv --json` (the service's engine and its defaults: 5-minute
warm-up, 30-minute baseline, refits every 5 minutes) and prints, per period, how many
checkpoints the recording holds, at which of them an episode (an alert) opened, and how many
of those the analyzer called recurring (`recurring="true"`). A host that
learns the checkpoint as routine stops alerting, or tells it as routine, after its first few.
Standard library only; the recordings are generated with a fixed seed, so a build's answer
is repeatable.
"""

import os
import random
import subprocess
import sys

from cli import parser
from replay import parse_output

START_S = 1_800_000_000
STEP_S = 0.1
FIRST_MIN = 40.0
COLUMNS = ("time", "reveal_memory_dirty_bytes", "reveal_storage_written_bytes_total",
           "reveal_cpu_busy_seconds_total", "reveal_cpu_context_switches_total",
           "reveal_memory_anon_pages_bytes")


def in_checkpoint(t, period_s, seconds):
    """Seconds since the current checkpoint began, or None outside one."""
    first = FIRST_MIN * 60
    if t < first:
        return None
    into = (t - first) % period_s
    return into if into < seconds else None


def write_recording(path, period_min, hours, seconds):
    """Writes the recording; returns the minutes at which its checkpoints begin."""
    rnd = random.Random(7)
    period_s = period_min * 60
    written = busy = switches = 0.0
    with open(path, "w") as f:
        f.write(",".join(COLUMNS) + "\n")
        for k in range(int(hours * 3600 / STEP_S)):
            t = k * STEP_S
            into = in_checkpoint(t, period_s, seconds)
            on = into is not None
            dirty = rnd.uniform(2e5, 4.5e5) + (6e8 * min(1.0, into / 5) if on else 0)
            written += (rnd.uniform(5e3, 15e3) + (4e8 if on else 0)) * STEP_S
            busy += (rnd.uniform(0.05, 0.3) + (0.6 if on else 0)) * STEP_S
            switches += rnd.uniform(2800, 3400) * STEP_S
            anon = 2e8 + rnd.uniform(-2e6, 2e6)
            f.write("%.1f,%.0f,%.0f,%.4f,%.0f,%.0f\n"
                    % (START_S + t, dirty, written, busy, switches, anon))
    starts, m = [], FIRST_MIN
    while m * 60 + seconds <= hours * 3600:
        starts.append(m)
        m += period_min
    return starts


def opened_minutes(binary, recording):
    """Minutes (from the recording's start) at which the replay opened an episode, each with
    whether the analyzer called it recurring (`recurring="true"`)."""
    out = subprocess.run([binary, "replay", "--input", recording, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("recurring: %s failed: %s" % (binary, out.stderr.strip()[-2000:]))
    _, episodes = parse_output(out.stdout)
    return [((e["start_s"] - START_S) / 60, e["recurring"] is not None) for e in episodes]


def main():
    ap = parser(__doc__)
    ap.add_argument("--replay", metavar="BIN", default="target/release/reveal-analyzer")
    ap.add_argument("--periods", default="2,5,10,15,20,30",
                    help="checkpoint periods in minutes, comma-separated (2,5,10,15,20,30)")
    ap.add_argument("--hours", type=float, default=2.5, help="length of each recording (2.5)")
    ap.add_argument("--seconds", type=float, default=20, help="length of a checkpoint (20)")
    ap.add_argument("--out", default="/tmp/reveal-recurring", help="where the recordings go")
    args = ap.parse_args()
    try:
        periods = [float(p) for p in args.periods.split(",")]
    except ValueError:
        ap.error("--periods takes minutes separated by commas, e.g. 5,10,30")
    if any(p * 60 <= args.seconds for p in periods) or args.seconds <= 0 or args.hours <= 0:
        ap.error("each period must be longer than a checkpoint, and --hours, --seconds positive")
    if not os.access(args.replay, os.X_OK):
        ap.error("no analyzer binary at %s (cargo build --release -p reveal-analyzer)" % args.replay)
    os.makedirs(args.out, exist_ok=True)
    print("| period | checkpoints | alerted | of them recurring | checkpoints alerted "
          "(their start, minutes; r: recurring) |")
    print("| ---: | ---: | ---: | ---: | --- |")
    for p in periods:
        path = os.path.join(args.out, "ck%g.csv" % p)
        print("recording and replaying a checkpoint every %g min ..." % p, file=sys.stderr)
        starts = write_recording(path, p, args.hours, args.seconds)
        opened = opened_minutes(args.replay, path)
        hit = []
        for s in starts:
            found = [r for o, r in opened if s - 0.1 <= o <= s + args.seconds / 60]
            if found:
                hit.append((s, found[0]))
        others = len(opened) - len(hit)
        note = "" if others == 0 else " (and %d episodes outside a checkpoint)" % others
        print("| %g min | %d | %d | %d | %s%s |" % (
            p, len(starts), len(hit), sum(1 for _, r in hit if r),
            ", ".join("%g%s" % (s, "r" if r else "") for s, r in hit) or "none", note))


if __name__ == "__main__":
    main()
