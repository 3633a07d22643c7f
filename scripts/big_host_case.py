#!/usr/bin/env python3
"""The wide-host case, end to end: per-device faults on the big-host fixture, found (or not)
by the stack as a user runs it.

    scripts/big_host_case.py [--quiet-minutes 30] [--warmup 5m] [--fault-seconds 20] [--gap 60]
                             [--faults LIST] [--metric-set FILE] [--out DIR] [--no-build]

What runs, all on loopback: the fixture of scripts/big_host_fixture.py (96 CPUs, 8 GPUs, 8 NVMe
disks, 4 InfiniBand ports, 2 NUMA nodes), moved every 100 ms by scripts/big_host_workload.py (a
training job's rhythm, a shard read on every disk each 90 s, a cron job each minute), its steps
put halfway between Prometheus' scrapes of the fast page (a real counter moves continuously: a
scrape on a step would see two steps and the next none); the
exporter on it (exporter/examples/fixture_exporter.rs: the release exporter with its GPUs read
from the fixture's nvml.json) serving the stack's two cadences (--metrics.fast
deploy/selection-fast.yml); Prometheus with rules/prometheus.yml (ports rewritten: 100 ms fast
page, 15 s slow page, the recording and alerting rules); Alertmanager with
rules/alertmanager.yml; the analyzer with deploy/analyzer.yml (or --metric-set), its warm-up
from a Prometheus with no history. Once the analyzer is ready: --quiet-minutes fault-free, then
each fault for --fault-seconds with --gap quiet seconds after it.

Scored as scripts/evaluate.sh's runs are (scripts/evaluate/score.py: alerted within 10 s, the
alert's subsystem, false alerts in the fault-free stretch, time to resolve; the GPU off the bus
by its RevealDeviceMissing alert, the others by RevealAnomaly), and per fault from
the analyzer's flagged windows (analyzer/state/reports/windows.jsonl) that end inside it or up to 3 s
after: found by at least two detectors, the subsystem with the largest share, and whether a
claim names the device. Output in DIR (default /tmp/reveal-big-host-case-TIMESTAMP):
progress.log, the logs of every process, run.json and faults.json (evaluate.sh's layout),
results.md (both tables, also printed, and how many fault-free scrapes saw no fixture step).
Needs prometheus, prometheus-alertmanager, cargo (unless --no-build) and python3. About 5 + quiet + 7 x (fault + gap) / 60 minutes: 44 with the
defaults.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL = os.path.join(ROOT, "scripts", "evaluate")
FAULTS = {  # name: (expected subsystem, strings of which a claim must hold one to name the device)
    "gpu5_throttled": ("gpu", ["gpu 5", 'gpu="5"']),
    "irqs_on_4_cpus": ("cpu", ["cpu %d at" % c for c in range(4)] + ['cpu="%d"' % c for c in range(4)]),
    "nvme3n1_slow": ("storage", ["nvme3n1"]),
    "ib_mlx5_2_errors": ("network", ["mlx5_2"]),
    "numa_node1_remote": ("memory", ["node 1", 'node="1"']),
    "cpu_saturation": ("cpu", []),
    "gpu7_off_the_bus": ("gpu", ["gpu 7", 'gpu="7"']),
}
# Faults whose alert is not a RevealAnomaly: a GPU that leaves the bus is a device missing.
ALERTNAME = {"gpu7_off_the_bus": "RevealDeviceMissing"}
PROCS = []


def now_ms():
    return int(time.time() * 1000)


def log(out, msg):
    line = "%s %s" % (time.strftime("%H:%M:%S"), msg)
    print(line, flush=True)
    with open(os.path.join(out, "progress.log"), "a") as f:
        f.write(line + "\n")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def spawn(out, name, cmd, cwd=None):
    f = open(os.path.join(out, name + ".log"), "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd,
                         start_new_session=True)
    PROCS.append((name, p))
    return p


def stop_all():
    for _, p in reversed(PROCS):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for _, p in reversed(PROCS):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def check_alive():
    for name, p in PROCS:
        if p.poll() is not None:
            sys.exit("big_host_case: %s exited (status %s); see its log" % (name, p.returncode))


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def wait_for(out, what, url, limit_s):
    deadline = time.time() + limit_s
    while not http_ok(url):
        check_alive()
        if time.time() > deadline:
            sys.exit("big_host_case: %s not ready after %d s (%s)" % (what, limit_s, url))
        time.sleep(0.5)
    log(out, "ready: %s" % what)


def prom_query(prom, expr, at=None):
    q = {"query": expr} if at is None else {"query": expr, "time": "%.3f" % at}
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (prom, urllib.parse.urlencode(q))
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)["data"]["result"]


def scrape_phase_ms(out, prom, limit_s=30):
    """Where in each 100 ms Prometheus scrapes the fast page: the median offset of its scrapes'
    timestamps (it keeps one offset per target), or None if it did not scrape in time."""
    seen, deadline = [], time.time() + limit_s
    while len(seen) < 7 and time.time() < deadline:
        check_alive()
        for r in prom_query(prom, 'timestamp(up{job="reveal"})'):
            seen.append(round(float(r["value"][1]) * 1000) % 100)
        time.sleep(0.37)
    if not seen:
        return None
    # Offsets wrap at 100: each taken as its distance from the first, within ±50.
    near = sorted((p - seen[0] + 50) % 100 - 50 for p in seen)
    return (seen[0] + near[len(near) // 2]) % 100


def missed_steps(prom, start_ms, end_ms):
    """Fast scrapes of the fault-free stretch that saw no fixture step in a file the step
    rewrites: /proc/softirqs (the TIMER softirqs summed over the CPUs move by about 2,400 in
    every step). An increment of 0 is a scrape that landed on the step before it, which saw
    two. (Not /proc/interrupts: the exporter reads it within its CPU budget, every other
    scrape on this fixture, and repeats the last read in between.) Returns (missed,
    scrapes)."""
    span = max(1, (end_ms - start_ms) // 1000)
    missed, scrapes = set(), 0
    for sel in ('reveal_cpu_softirqs_total{job="reveal",type="TIMER",cpu=""}',):
        res = prom_query(prom, "%s[%ds]" % (sel, span), end_ms / 1000)
        if not res:
            continue
        pts = [(t, float(v)) for t, v in res[0]["values"]]
        scrapes = max(scrapes, len(pts) - 1)
        missed |= {t for (_, a), (t, b) in zip(pts, pts[1:]) if b == a}
    return len(missed), scrapes


def config_files(out, ports, metric_set, warmup):
    exp, prom, am, an = ports
    text = open(os.path.join(ROOT, "rules", "prometheus.yml")).read()
    text = (text.replace('"127.0.0.1:19190"', '"127.0.0.1:%d"' % exp)
            .replace('"127.0.0.1:19090"', '"127.0.0.1:%d"' % prom)
            .replace('"127.0.0.1:19093"', '"127.0.0.1:%d"' % am)
            .replace('"127.0.0.1:19191"', '"127.0.0.1:%d"' % an))
    for rules in ("recording.rules.yml", "alerting.rules.yml"):
        text = text.replace("  - %s\n" % rules, "  - %s\n" % os.path.join(ROOT, "rules", rules))
    open(os.path.join(out, "prometheus.yml"), "w").write(text)
    text = open(metric_set).read()
    text = (text.replace("127.0.0.1:19090", "127.0.0.1:%d" % prom)
            .replace("127.0.0.1:19093", "127.0.0.1:%d" % am)
            .replace("127.0.0.1:19191", "127.0.0.1:%d" % an))
    if warmup:
        if "\nanalysis:" in text:
            sys.exit("big_host_case: %s has its own analysis: section; leave --warmup out" % metric_set)
        text += "\n# big_host_case.py --warmup\nanalysis:\n  warmup: %s\n" % warmup
    open(os.path.join(out, "analyzer.yml"), "w").write(text)


def device_table(out, faults):
    """Per fault, from the flagged windows: two detectors, subsystem, device named (in a
    window's claims or in the fault's alert)."""
    windows = []
    path = os.path.join(out, "analyzer", "state", "reports", "windows.jsonl")
    if os.path.exists(path):
        windows = [json.loads(l) for l in open(path) if l.strip()]
    # The alerts as Alertmanager held them: a device that the windows' evidence reads only as
    # an aggregate (the busiest CPU) is named in the alert, asked of Prometheus per device.
    alerts = []
    path = os.path.join(out, "analyzer", "alerts.json")
    if os.path.exists(path):
        alerts = json.load(open(path))
    rows = ["| fault | windows with ≥ 2 detectors | detectors | largest subsystem share | device named | claim |",
            "| --- | ---: | --- | --- | --- | --- |"]
    summary = []
    for f in faults:
        mine = [w for w in windows if w["agreement"] >= 2 and f["start_ms"] < w["end_ms"] <= f["end_ms"] + 3000]
        share = {}
        for w in mine:
            for s, v in w["subsystems"]:
                share[s] = share.get(s, 0.0) + v
        top = max(share, key=share.get) if share else "-"
        strings = FAULTS[f["name"]][1]
        text = lambda w: " ".join([w.get("summary", ""), w.get("description", "")] + [c for _, c in w["claims"]])
        raised = " ".join(a.get("summary", "") for a in alerts
                          if f["start_ms"] <= a.get("first_seen_ms", 0) <= f["end_ms"] + 10000)
        named = None if not strings else any(s in text(w) or s in raised for w in mine for s in strings)
        # The claim of the window nearest the fault's middle (the first ones hold little of it).
        mid = (f["start_ms"] + f["end_ms"]) / 2
        claim = next((c for w in sorted(mine, key=lambda w: abs(w["end_ms"] - mid))
                      for s, c in w["claims"] if s == f["expected"][0]), "")
        dets = sorted({d for w in mine for d in w["detectors"]})
        rows.append("| %s | %d | %s | %s%s | %s | %s |" % (
            f["name"], len(mine), ", ".join(dets) or "-", top, "" if top in f["expected"] else " (wrong)",
            "n/a (every device)" if named is None else ("yes" if named else "**no**"),
            claim[:160].replace("|", "\\|")))
        summary.append({"name": f["name"], "found": bool(mine), "subsystem_right": top in f["expected"],
                        "device_named": named, "detectors": dets})
    return "\n".join(rows), summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quiet-minutes", type=float, default=30, help="fault-free minutes after the warm-up (30)")
    ap.add_argument("--warmup", default=None, help="analysis.warmup (the metric set's, 5m by default)")
    ap.add_argument("--fault-seconds", type=int, default=20)
    ap.add_argument("--gap", type=int, default=60, help="quiet seconds after each fault (60)")
    ap.add_argument("--faults", default=",".join(FAULTS), help="comma-separated, in order (default: all seven)")
    ap.add_argument("--metric-set", default=os.path.join(ROOT, "deploy", "analyzer.yml"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-build", action="store_true", help="use target/release as it is")
    args = ap.parse_args()
    names = [n for n in args.faults.split(",") if n]
    bad = [n for n in names if n not in FAULTS]
    if bad:
        ap.error("unknown fault(s) %s; known: %s" % (", ".join(bad), ", ".join(FAULTS)))
    for tool in ("prometheus", "prometheus-alertmanager"):
        if not shutil.which(tool):
            sys.exit("big_host_case: %s not found (apt-get install prometheus prometheus-alertmanager)" % tool)
    out = os.path.abspath(args.out or "/tmp/reveal-big-host-case-%s" % time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    if not args.no_build:
        log(out, "building the analyzer and the fixture exporter (release)")
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "reveal-analyzer", "--bin", "reveal-analyzer",
                        "-p", "reveal-exporter", "--example", "fixture_exporter"], cwd=ROOT, check=True)
    rel = os.path.join(ROOT, "target", "release")
    fixture = os.path.join(out, "fixture")
    shutil.rmtree(fixture, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "big_host_fixture.py"), fixture],
                   check=True, stdout=subprocess.DEVNULL)
    ports = free_ports(4)
    exp, prom, am, an = ports
    config_files(out, ports, args.metric_set, args.warmup)
    schedule = os.path.join(out, "schedule.json")
    t0 = now_ms()
    json.dump({"t0_ms": t0, "faults": []}, open(schedule, "w"))
    try:
        spawn(out, "workload", [sys.executable, os.path.join(ROOT, "scripts", "big_host_workload.py"),
                                fixture, schedule])
        spawn(out, "exporter", [os.path.join(rel, "examples", "fixture_exporter"), os.path.join(fixture, "nvml.json"),
                                "--path.procfs", os.path.join(fixture, "proc"),
                                "--path.sysfs", os.path.join(fixture, "sys"),
                                "--no-collector.perf", "--no-collector.msr",
                                "--metrics.fast", os.path.join(ROOT, "deploy", "selection-fast.yml"),
                                "--web.listen-address", "127.0.0.1:%d" % exp])
        spawn(out, "prometheus", ["prometheus", "--config.file", os.path.join(out, "prometheus.yml"),
                                  "--storage.tsdb.path", os.path.join(out, "prometheus-data"),
                                  "--web.listen-address", "127.0.0.1:%d" % prom,
                                  "--web.enable-remote-write-receiver"])
        spawn(out, "alertmanager", ["prometheus-alertmanager", "--config.file",
                                    os.path.join(ROOT, "rules", "alertmanager.yml"),
                                    "--storage.path", os.path.join(out, "alertmanager-data"),
                                    "--web.listen-address", "127.0.0.1:%d" % am, "--cluster.listen-address="])
        wait_for(out, "exporter", "http://127.0.0.1:%d/metrics?cadence=fast" % exp, 30)
        wait_for(out, "prometheus", "http://127.0.0.1:%d/-/ready" % prom, 60)
        wait_for(out, "alertmanager", "http://127.0.0.1:%d/-/ready" % am, 30)
        # The fixture's counters step every 100 ms; halfway between two scrapes, no scrape sees
        # two steps or none (scripts/big_host_workload.py, step_phase_ms).
        phase = scrape_phase_ms(out, prom)
        step_phase = None if phase is None else (phase + 50) % 100
        log(out, "Prometheus scrapes the fast page at %s ms into each 100 ms; the fixture steps at %s ms"
            % (phase, step_phase))
        json.dump({"t0_ms": t0, "faults": [], "step_phase_ms": step_phase}, open(schedule + ".tmp", "w"))
        os.replace(schedule + ".tmp", schedule)
        adir = os.path.join(out, "analyzer")
        os.makedirs(os.path.join(adir, "state"), exist_ok=True)
        started = now_ms()
        spawn(out, "analyzer", [os.path.join(rel, "reveal-analyzer"), "run",
                                "--config.file", os.path.join(out, "analyzer.yml")],
              cwd=os.path.join(adir, "state"))
        spawn(out, "poller", [sys.executable, os.path.join(EVAL, "poll.py"), "--deadline", str(int(time.time()) + 86400),
                              "analyzer=http://127.0.0.1:%d=%s" % (am, adir)])
        log(out, "analyzer started; warming up on a Prometheus with no history (its log: %s)" % adir)
        ready = "http://127.0.0.1:%d/-/ready" % an
        while not http_ok(ready):
            check_alive()
            time.sleep(1)
        ff_start = now_ms()
        ff_end = ff_start + int(args.quiet_minutes * 60000)
        faults, t = [], ff_end
        for n in names:
            faults.append({"name": n, "expected": [FAULTS[n][0]], "start_ms": t, "end_ms": t + args.fault_seconds * 1000,
                           "command": "scripts/big_host_workload.py fault %s" % n})
            if n in ALERTNAME:
                faults[-1]["alertname"] = ALERTNAME[n]
            t += (args.fault_seconds + args.gap) * 1000
        json.dump({"t0_ms": t0, "faults": faults, "step_phase_ms": step_phase}, open(schedule + ".tmp", "w"))
        os.replace(schedule + ".tmp", schedule)
        log(out, "analyzer ready after %d s; fault-free until %s, then %s" % (
            (ff_start - started) // 1000, time.strftime("%H:%M:%S", time.localtime(ff_end / 1000)), ", ".join(names)))
        for f in faults:
            while now_ms() < f["start_ms"]:
                check_alive()
                time.sleep(0.5)
            log(out, "fault %s: start" % f["name"])
            while now_ms() < f["end_ms"]:
                time.sleep(0.5)
            log(out, "fault %s: end" % f["name"])
        while now_ms() < t:
            check_alive()
            time.sleep(1)
        end = now_ms()
        json.dump(faults, open(os.path.join(out, "faults.json"), "w"), indent=1)
        run = {"host": "big-host fixture (%s)" % socket.gethostname(), "nproc": os.cpu_count(), "kernel": os.uname().release,
               "mode": "big-host case (warm-up %s)" % (args.warmup or "of the metric set"),
               "fault_seconds": args.fault_seconds, "gap": args.gap, "warmup_s": (ff_start - started) // 1000,
               "started_ms": started, "analyzers_started_ms": started, "baseline_age_s": 0,
               "instance": "127.0.0.1:%d" % exp, "stand_in_hosts": [],
               "fault_free": {"start_ms": ff_start, "end_ms": ff_end}, "end_ms": end, "skipped": [],
               "scrape_phase_ms": phase, "step_phase_ms": step_phase,
               "analyzers": [{"name": "analyzer", "path": os.path.join(rel, "reveal-analyzer"), "dir": adir,
                              "receiver_url": "http://127.0.0.1:%d" % prom,
                              "alertmanager_url": "http://127.0.0.1:%d" % am}]}
        json.dump(run, open(os.path.join(out, "run.json"), "w"), indent=1)
        for name, p in PROCS:
            if name == "poller":
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=20)
        log(out, "scoring")
        subprocess.run([sys.executable, os.path.join(EVAL, "score.py"), out], check=True)
        table, summary = device_table(out, faults)
        missed, scrapes = missed_steps(prom, ff_start, ff_end)
        steps = ("fixture steps: Prometheus scraped the fast page at %s ms into each 100 ms, the fixture "
                 "stepped at %s ms; %d of the fault-free stretch's %d fast scrapes saw no step (and the one "
                 "before it two)" % (phase, step_phase, missed, scrapes))
        with open(os.path.join(out, "results.md"), "a") as f:
            f.write("\n" + steps + "\n")
            f.write("\n### Per-device findings (flagged windows, `analyzer/state/reports/windows.jsonl`, and the fault's alert)\n\n" + table + "\n")
        print(steps)
        json.dump(summary, open(os.path.join(out, "devices.json"), "w"), indent=1)
        print("\n" + table)
    finally:
        stop_all()
    log(out, "done: %s" % os.path.join(out, "results.md"))


if __name__ == "__main__":
    main()
