"""Command-line helpers shared by the evaluation scripts (standard library only)."""

import argparse


def parser(doc):
    """An argument parser whose --help prints the script's docstring `doc` (its usage lines
    included) and then the options; an unknown option is refused with exit status 2."""
    return argparse.ArgumentParser(description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def live_faults(out_dir):
    """The faults of OUT_DIR/faults.json injected on the evaluated host itself. A fault on the
    evaluation's recorded stand-in hosts (`hugepages_drift`, marked with their `instance`) is
    scored live from Alertmanager only: its hosts' telemetry is not in the recording that
    replays, timelines and the granularity table read, so those leave it out, saying so."""
    import json
    import os
    import sys

    with open(os.path.join(out_dir, "faults.json")) as f:
        faults = json.load(f)
    live = [f for f in faults if not f.get("instance")]
    for f in faults:
        if f.get("instance"):
            print("note: %s (on %s, not this recording's host) is left out here; score.py scores it"
                  % (f["name"], f["instance"]), file=sys.stderr)
    return live
