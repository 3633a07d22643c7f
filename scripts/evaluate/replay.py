#!/usr/bin/env python3
"""Replays a recorded evaluation run through an analyzer build, offline, and scores it.

    replay.py OUT_DIR CONFIG [--replay BIN] [--label NAME] [--raw FILE] [--phase SECONDS]

OUT_DIR is a finished `scripts/evaluate.sh --keep-data` run: its Prometheus data
(OUT/prometheus-data), run.json and faults.json. CONFIG is an analyzer configuration (e.g.
OUT/analyzers/NAME/analyzer.yml); its `source.prometheus.url` is replaced by a Prometheus this
script starts on a copy of the recorded data. BIN is the `reveal-analyzer` of the build to
evaluate (default target/release/reveal-analyzer), run as `reveal-analyzer replay --json`; the
`online_replay` example of builds before that subcommand is taken too (a BIN named
online_replay*, its text output). --raw keeps the replay's own output (every window's scores
and claims, one JSON object a line) in FILE. --phase starts learning SECONDS after
the live analyzer did, so every fit (warm-up end, then every refit) falls that much later: the
same recording replayed at several phases samples how much the result depends on where the
fits fell (a young baseline's bars move with the few windows they are set by).

The replay learns the baseline on the warm-up, then scores every window as `reveal-analyzer
run` would and forms episodes as the service does; it never reaches Alertmanager. So latency
here is from the fault's start to the end of the window that opened the episode, and the
resolve time from the fault's end to the end of the window that closed it; the live run adds
about a second of delivery on top of each. Two builds replayed on the same recording see
exactly the same telemetry, which is what makes this the way to compare detection changes.
Standard library only; Prometheus must be installed.
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from cli import live_faults, parser  # noqa: E402  (same folder)
from score import spearman  # noqa: E402  (same folder)

EARLY_S = 10
GRACE_S = 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_prometheus(data):
    port = free_port()
    cfg = os.path.join(os.path.dirname(data), "replay-prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global: {}\nscrape_configs: []\n")
    proc = subprocess.Popen(
        ["prometheus", "--config.file=" + cfg, "--storage.tsdb.path=" + data,
         "--storage.tsdb.retention.time=30d", "--web.listen-address=127.0.0.1:%d" % port],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = "http://127.0.0.1:%d" % port
    for _ in range(300):
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=1) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None:
            sys.exit("replay: prometheus exited while starting on %s" % data)
        time.sleep(0.2)
    proc.kill()
    sys.exit("replay: prometheus not ready after 60 s")


def replay_command(binary, config, learn_from, score_from, until):
    """The command line of a replay: `reveal-analyzer replay --json`, or the positional
    arguments of the `online_replay` example of earlier builds."""
    if os.path.basename(binary).startswith("online_replay"):
        return [binary, config, str(learn_from), str(score_from), str(until)]
    return [binary, "replay", "--json", "--config.file", config, "--learn-from", str(learn_from),
            "--from", str(score_from), "--until", str(until)]


def parse_output(text):
    """Windows and episodes of a replay's output, JSON lines or the example's text:
    windows as {end_s, end_ms, agreement, scores}, episodes as {open_s, start_s, subsystems,
    close_s, joins: [(s, subsystem)], summary, recurring} (recurring: how the episode recurs
    at its close, or at its open while it is open; None when it does not, or in text output)."""
    windows, episodes = [], []

    def join(at_s, subs):
        if not episodes:
            return
        e = episodes[-1]
        for sub in subs:
            if sub not in e["subsystems"] and sub not in [j[1] for j in e["joins"]]:
                e["joins"].append((at_s, sub))

    def close(at_s, recurring=None):
        for e in reversed(episodes):
            if e["close_s"] is None:
                e["close_s"] = at_s
                e["recurring"] = recurring
                break

    for line in text.splitlines():
        if line.startswith("{"):
            x = json.loads(line)
            if x["type"] == "window":
                windows.append({"end_s": x["end_ms"] // 1000, "end_ms": x["end_ms"],
                                "agreement": x["agreement"], "scores": dict(x["scores"])})
            elif x["type"] == "episode":
                ep, at_s = x["episode"], x["at_ms"] // 1000
                if x["event"] == "open":
                    episodes.append({"open_s": at_s, "start_s": ep["start_ms"] // 1000,
                                     "subsystems": list(ep["subsystems"]), "close_s": None,
                                     "joins": [], "summary": ep["summary"],
                                     "recurring": ep.get("recurring")})
                elif x["event"] == "join":
                    join(at_s, ep["subsystems"])
                elif x["event"] == "close":
                    close(at_s, ep.get("recurring"))
            continue
        parts = line.split()
        if parts[:2] == ["EPISODE", "open"]:
            episodes.append({"open_s": int(parts[3]), "start_s": int(parts[4]),
                             "subsystems": parts[5].strip("[]").split(","), "close_s": None, "joins": [],
                             "summary": " ".join(parts[6:]), "recurring": None})
        elif parts[:2] == ["EPISODE", "join"]:
            join(int(parts[3]), parts[5].strip("[]").split(","))
        elif parts[:2] == ["EPISODE", "close"]:
            close(int(parts[3]))
        elif len(parts) >= 3 and parts[2].startswith("agreement="):
            scores = {}
            for kv in parts[3:]:
                if kv == "|":
                    break
                k, _, v = kv.partition("=")
                scores[k] = float(v)
            # Window ends print with milliseconds (strides below a second).
            windows.append({"end_s": int(float(parts[1])), "end_ms": int(round(float(parts[1]) * 1000)),
                            "agreement": int(parts[2].split("=")[1]), "scores": scores})
    return windows, episodes


def read_raw(path):
    """[`parse_output`] of a file that --raw kept."""
    with open(path) as f:
        return parse_output(f.read())


def replay(binary, config, learn_from, score_from, until, raw=None):
    out = subprocess.run(replay_command(binary, config, learn_from, score_from, until),
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit("replay: %s failed: %s" % (binary, out.stderr.strip()[-2000:]))
    if raw:
        with open(raw, "w") as f:
            f.write(out.stdout)
    return parse_output(out.stdout)


def main():
    ap = parser(__doc__)
    ap.add_argument("out_dir", metavar="OUT_DIR", help="a kept evaluate.sh run")
    ap.add_argument("config", metavar="CONFIG", help="an analyzer configuration")
    ap.add_argument("--replay", metavar="BIN", default="target/release/reveal-analyzer")
    ap.add_argument("--label", metavar="NAME", help="(default: the name of CONFIG's folder)")
    ap.add_argument("--raw", metavar="FILE", help="keep the replay's own output here")
    ap.add_argument("--phase", metavar="SECONDS", type=int, default=0,
                    help="start learning this much after the live analyzer did (0)")
    args = ap.parse_args()
    out_dir, config, binary, raw, phase = args.out_dir, args.config, args.replay, args.raw, args.phase
    label = args.label or os.path.basename(os.path.dirname(os.path.abspath(config))) or "replay"
    run = json.load(open(os.path.join(out_dir, "run.json")))
    faults = live_faults(out_dir)
    data = os.path.join(out_dir, "prometheus-data")
    if not os.path.isdir(data):
        sys.exit("replay: %s has no prometheus-data (run evaluate.sh with --keep-data)" % out_dir)
    tmp = tempfile.mkdtemp(prefix="reveal-replay-")
    proc = None
    try:
        copy = os.path.join(tmp, "data")
        shutil.copytree(data, copy)
        proc, url = start_prometheus(copy)
        cfg_text = open(config).read()
        cfg_text = re.sub(r"(prometheus:\s*\n(?:\s*#.*\n)*\s*url:\s*)\S+", r"\g<1>" + url, cfg_text, count=1)
        cfg = os.path.join(tmp, "analyzer.yml")
        open(cfg, "w").write(cfg_text)
        # The warm-up is learned, as the live analyzer learned it; scoring starts where the
        # live analyzer's did, at the fault-free period.
        learn_from = run["analyzers_started_ms"] // 1000 + phase
        score_from = run["fault_free"]["start_ms"] // 1000
        until = run["end_ms"] // 1000
        t0 = time.time()
        windows, episodes = replay(binary, cfg, learn_from, score_from, until, raw)
        took = time.time() - t0
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    ff = (run["fault_free"]["start_ms"] // 1000, run["fault_free"]["end_ms"] // 1000)
    print("## %s (replayed in %.1f s)\n" % (label, took))
    print("| fault | expected | alerted ≤ %d s | attributed | latency s | alert subsystems | resolved s after end |" % EARLY_S)
    print("| --- | --- | --- | --- | --- | --- | --- |")
    latencies, resolves, ok = [], [], 0
    # One alert per subsystem, as the service raises them: at the episode's opening for its
    # first subsystems, and when a subsystem joins the open episode later.
    alerts = []
    for x in episodes:
        alerts += [{"first_s": x["open_s"], "subsystem": y, "episode": x} for y in x["subsystems"]]
        alerts += [{"first_s": t, "subsystem": y, "episode": x} for t, y in x["joins"]]
    for i, f in enumerate(faults):
        s, e = f["start_ms"] / 1000, f["end_ms"] / 1000
        nxt = faults[i + 1]["start_ms"] / 1000 if i + 1 < len(faults) else float("inf")
        # The fault's alerts: first raised from its start to GRACE_S after its end, never
        # past the next fault's start (as scripts/evaluate/score.py scores the live run).
        mine = [a for a in alerts if s <= a["first_s"] <= min(e + GRACE_S, nxt)]
        first = {"open_s": min(a["first_s"] for a in mine)} if mine else None
        subs = sorted({a["subsystem"] for a in mine})
        eps = []
        for a in mine:
            if a["episode"] not in eps:
                eps.append(a["episode"])
        early = bool(first) and first["open_s"] - s <= EARLY_S
        attributed = bool(set(subs) & set(f["expected"]))
        closes = [x["close_s"] for x in eps]
        resolved = None if (not eps or None in closes) else max(closes) - e
        if early and attributed:
            ok += 1
        if first:
            latencies.append(first["open_s"] - s)
        if resolved is not None:
            resolves.append(resolved)
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            f["name"], "/".join(f["expected"]), "yes" if early else "**no**",
            "yes" if attributed else ("–" if not eps else "**no**"),
            "%.1f" % (first["open_s"] - s) if first else "–", ", ".join(subs) or "–",
            "%.1f" % resolved if resolved is not None else ("not resolved" if eps else "–")))
    fw = [w for w in windows if ff[0] < w["end_s"] <= ff[1]]
    fe = [x for x in episodes if ff[0] < x["open_s"] <= ff[1]]
    hours = (ff[1] - ff[0]) / 3600
    flagged = sum(1 for w in fw if w["agreement"] >= 2)
    print()
    print("fault-free: %d episodes in %.1f min (%.1f per hour), %d of %d windows flagged by two detectors (%.2f%%)" % (
        len(fe), hours * 60, len(fe) / hours if hours else 0, flagged, len(fw), 100.0 * flagged / max(1, len(fw))))
    for x in fe:
        print("  false episode at %s: [%s] %s" % (time.strftime("%H:%M:%S", time.gmtime(x["open_s"])),
                                                 ",".join(x["subsystems"]), x["summary"][:160]))
    names = sorted({k for w in fw for k in w["scores"]})
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            xs = [(w["scores"][a], w["scores"][b]) for w in fw if a in w["scores"] and b in w["scores"]]
            rho = spearman([x for x, _ in xs], [y for _, y in xs]) if len(xs) > 2 else None
            pairs.append("%s–%s %s" % (a, b, "%.2f" % rho if rho is not None else "n/a"))
    print("rank correlation of scores on fault-free windows: " + ", ".join(pairs))
    # Each detector on its own: the share of fault-free windows whose score reached its bar
    # (the printed score is over the bar; a held bar flags only after `hold` such windows, so
    # this counts a little more than the detector's flags), and which pairs reach them together.
    at_bar = [{k for k, v in w["scores"].items() if v >= 1.0} for w in fw]
    if fw:
        print("each detector at or above its bar on fault-free windows: " + ", ".join(
            "%s %.2f%%" % (k, 100.0 * sum(k in a for a in at_bar) / len(fw)) for k in names))
        several = [a for a in at_bar if len(a) >= 2]
        together = ", ".join("%s and %s %d" % (a, b, sum(a in x and b in x for x in several))
                             for i, a in enumerate(names) for b in names[i + 1:])
        print("  two or more at their bars: %d windows (%s)" % (len(several), together))
    print("faults alerted ≤ %d s and attributed: %d of %d; median latency %s s; longest resolve %s s" % (
        EARLY_S, ok, len(faults), "%.1f" % statistics.median(latencies) if latencies else "–",
        "%.1f" % max(resolves) if resolves else "–"))


if __name__ == "__main__":
    main()
