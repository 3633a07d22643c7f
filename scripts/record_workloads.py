#!/usr/bin/env python3
"""Records distinct workloads of this host through the real exporter, for `reveal-analyzer prune`.

The release `reveal-exporter` is scraped every 100 ms by Debian's Prometheus (both on loopback,
random ports). Each workload runs RUNS times for SECONDS seconds, with a short rest between
runs; every run is then exported from Prometheus as one OpenMetrics capture with every sample's
own scrape timestamp (`WORKLOAD-RUN.om`), and `runs.json` lists them with their times.

Workloads (each alternates seeded active stretches of 4-10 s with rests of 1-4 s, so that the
channels it drives move within a run, as a real job's steps and pauses make them move):

  idle              nothing started
  train_cpu         a training-like loop: numpy matrix products and element-wise updates on
                    every CPU ("steps"), with a small file read between epochs ("data loading")
  memory_bandwidth  stress-ng --stream on every CPU (STREAM copy/scale/add/triad)
  disk_io           fio with O_DIRECT, random 64 KiB reads and writes, queue depth 8
  network           iperf3 TCP over a veth pair into a network namespace, 2 streams, the rate
                    changing between stretches
  mixed             train_cpu on one CPU, the network stream and buffered writes, together

    sudo scripts/record_workloads.py [--out DIR] [--runs 3] [--seconds 60]
                                     [--workloads idle,train_cpu,...] [--exporter PATH]

Needs root (network namespace), prometheus, stress-ng, fio, iperf3, iproute2 and python3 with
numpy (scripts/requirements-render.txt). Nothing else should run meanwhile: everything on the
host is recorded. The captures are large (about 20 MB per minute): prune them into derived
artifacts (scripts/prune_workloads.py) rather than committing them.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = ["idle", "train_cpu", "memory_bandwidth", "disk_io", "network", "mixed"]
NS, HOST_DEV, NS_DEV = f"reveal-rec-{os.getpid()}", f"rvr{os.getpid()}h", f"rvr{os.getpid()}n"
HOST_IP, NS_IP = "10.254.214.1", "10.254.214.2"

TRAIN = r"""
import numpy as np, sys, time
end = time.time() + float(sys.argv[1]); data = sys.argv[2]
rng = np.random.default_rng(7)
w = rng.standard_normal((768, 768)).astype(np.float32)
while time.time() < end:
    x = rng.standard_normal((512, 768)).astype(np.float32)
    for _ in range(40):
        if time.time() >= end:
            break
        h = np.tanh(x @ w)
        w -= 1e-4 * (x.T @ h) / len(x)
    with open(data, "rb") as f:
        f.read()
"""


def log(msg):
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} record_workloads: {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stack:
    """Exporter, Prometheus and the namespace; everything is stopped by close()."""

    def __init__(self, exporter, tmp):
        self.tmp, self.procs = tmp, []
        self.exporter_port, self.prom_port = free_port(), free_port()
        self.spawn([exporter, f"--web.listen-address=127.0.0.1:{self.exporter_port}",
                    "--log.level=warn"], "exporter.log")
        with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
            f.write("global: {scrape_interval: 100ms, scrape_timeout: 100ms}\n"
                    "scrape_configs:\n  - job_name: reveal\n"
                    f"    static_configs: [{{targets: ['127.0.0.1:{self.exporter_port}']}}]\n")
        self.spawn(["prometheus", f"--config.file={tmp}/prometheus.yml",
                    f"--storage.tsdb.path={tmp}/data", "--log.level=warn",
                    f"--web.listen-address=127.0.0.1:{self.prom_port}"], "prometheus.log")
        for cmd in (["ip", "netns", "add", NS], ["ip", "-n", NS, "link", "set", "lo", "up"],
                    ["ip", "link", "add", HOST_DEV, "type", "veth", "peer", "name", NS_DEV,
                     "netns", NS],
                    ["ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_DEV],
                    ["ip", "-n", NS, "addr", "add", f"{NS_IP}/30", "dev", NS_DEV],
                    ["ip", "link", "set", HOST_DEV, "up"],
                    ["ip", "-n", NS, "link", "set", NS_DEV, "up"]):
            subprocess.run(cmd, check=True)
        self.spawn(["ip", "netns", "exec", NS, "iperf3", "-s", "-B", NS_IP], "iperf3-server.log")
        deadline = time.time() + 60
        while not self.up():
            if time.time() > deadline:
                raise SystemExit("record_workloads: Prometheus does not scrape the exporter "
                                 f"(logs in {tmp})")
            time.sleep(0.5)

    def spawn(self, cmd, logname):
        out = open(os.path.join(self.tmp, logname), "ab")
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def query(self, path, **params):
        url = f"http://127.0.0.1:{self.prom_port}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=120) as r:
            return json.load(r)["data"]

    def up(self):
        try:
            r = self.query("/api/v1/query", query='up{job="reveal"}')
            return bool(r["result"]) and r["result"][0]["value"][1] == "1"
        except OSError:
            return False

    def close(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", NS], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "del", HOST_DEV], stderr=subprocess.DEVNULL)


def stretches(seconds, seed):
    """Seeded (active, rest) durations filling `seconds`."""
    rng, out, used = random.Random(seed), [], 0.0
    while used < seconds:
        a, r = rng.uniform(4, 10), rng.uniform(1, 4)
        a = min(a, seconds - used)
        out.append((a, min(r, max(0.0, seconds - used - a))))
        used += a + r
    return out


def load(workload, seconds, scratch, rate_mbit):
    """The commands of one active stretch (each bounded by its own time limit)."""
    ncpu = os.cpu_count() or 1
    s = max(1, round(seconds))
    data = os.path.join(scratch, "epoch.bin")
    train = [sys.executable, "-c", TRAIN, str(seconds), data]
    net = ["iperf3", "-c", NS_IP, "-t", str(s), "-P", "2", "-b", f"{rate_mbit}M"]
    write = ["dd", "if=/dev/zero", f"of={scratch}/writes.bin", "bs=1M", "count=256",
             "status=none"]
    if workload == "idle":
        return []
    if workload == "train_cpu":
        return [train]
    if workload == "memory_bandwidth":
        return [["stress-ng", "--stream", str(ncpu), "--timeout", f"{s}s", "--quiet"]]
    if workload == "disk_io":
        return [["fio", "--name=rec", f"--filename={scratch}/fio.bin", "--size=512M",
                 "--direct=1", "--rw=randrw", "--bs=64k", "--iodepth=8", "--ioengine=libaio",
                 "--time_based", f"--runtime={s}", "--output=/dev/null"]]
    if workload == "network":
        return [net]
    if workload == "mixed":
        return [["taskset", "-c", "0"] + train, net, write]
    raise SystemExit(f"record_workloads: unknown workload {workload!r}")


def run_workload(stack, workload, run, seconds, scratch):
    rng = random.Random(f"{workload}-{run}")
    start_ms = int(time.time() * 1000)
    for active, rest in stretches(seconds, f"{workload}-{run}"):
        procs = [stack.spawn(c, f"{workload}.log")
                 for c in load(workload, active, scratch, rng.choice([100, 200, 400]))]
        end = time.time() + active
        for p in procs:
            try:
                p.wait(timeout=max(0.0, end - time.time()) + 15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        time.sleep(max(0.0, end - time.time()) + rest)
    return start_ms, int(time.time() * 1000)


def export(stack, path, start_ms, end_ms):
    """One run as OpenMetrics text: every raw sample with its scrape timestamp."""
    types = {}
    for name, metas in stack.query("/api/v1/metadata").items():
        if metas:
            types[name] = metas[0]["type"]
    result = stack.query("/api/v1/query", query=f'{{job="reveal"}}[{end_ms - start_ms}ms]',
                         time=f"{end_ms / 1000.0:.3f}")["result"]
    families, n = {}, 0
    for s in result:
        name = s["metric"]["__name__"]
        family = name[:-6] if name.endswith("_total") and types.get(name[:-6]) == "counter" \
            else name
        families.setdefault(family, []).append(s)
    with open(path, "w") as f:
        for family in sorted(families):
            kind = types.get(family, "gauge")
            f.write(f"# TYPE {family} {'unknown' if kind == 'untyped' else kind}\n")
            for s in families[family]:
                labels = ",".join(
                    f'{k}="{v}"' for k, v in sorted(s["metric"].items()) if k != "__name__")
                head = s["metric"]["__name__"] + (f"{{{labels}}}" if labels else "")
                for t, v in s["values"]:
                    f.write(f"{head} {v} {t}\n")
                    n += 1
        f.write("# EOF\n")
    return len(result), n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/reveal-workloads")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rest", type=float, default=5, help="quiet seconds between runs")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--exporter", default=os.path.join(ROOT, "target/release/reveal-exporter"))
    a = ap.parse_args()
    workloads = a.workloads.split(",")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    if os.geteuid() != 0:
        ap.error("needs root (network namespace)")
    for tool in ("prometheus", "stress-ng", "fio", "iperf3", "ip"):
        if not shutil.which(tool):
            ap.error(f"{tool} not found")
    if not os.access(a.exporter, os.X_OK):
        ap.error(f"{a.exporter}: build it first (cargo build --release -p reveal-exporter)")
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="reveal-record-")
    scratch = tempfile.mkdtemp(prefix="reveal-record-scratch-", dir="/var/tmp")
    with open(os.path.join(scratch, "epoch.bin"), "wb") as f:
        f.write(os.urandom(32 << 20))
    stack = None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        stack = Stack(a.exporter, tmp)
        log(f"exporter 127.0.0.1:{stack.exporter_port}, Prometheus 127.0.0.1:{stack.prom_port}"
            f"; {len(workloads)} workloads x {a.runs} runs x {a.seconds:.0f} s")
        time.sleep(3)
        runs = []
        for w in workloads:
            for r in range(1, a.runs + 1):
                log(f"{w} run {r}/{a.runs} ({a.seconds:.0f} s)")
                start_ms, end_ms = run_workload(stack, w, r, a.seconds, scratch)
                runs.append({"workload": w, "run": r, "start_ms": start_ms, "end_ms": end_ms,
                             "file": f"{w}-{r}.om"})
                time.sleep(a.rest)
        log("exporting the runs from Prometheus")
        for run in runs:
            series, samples = export(stack, os.path.join(a.out, run["file"]),
                                     run["start_ms"], run["end_ms"])
            run.update(series=series, samples=samples)
            log(f"  {run['file']}: {series} series, {samples} samples")
        host = {"cpus": os.cpu_count(), "kernel": os.uname().release,
                "memory_kib": int(open("/proc/meminfo").read().split()[1])}
        with open(os.path.join(a.out, "runs.json"), "w") as f:
            json.dump({"host": host, "step_ms": 100, "runs": runs}, f, indent=1)
        log(f"done: {len(runs)} captures and runs.json in {a.out}")
    finally:
        if stack:
            stack.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
