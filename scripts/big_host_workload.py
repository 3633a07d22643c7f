#!/usr/bin/env python3
"""A training job and its host's routines on a big-host fixture root, with per-device faults:

    scripts/big_host_workload.py ROOT SCHEDULE.json [--seconds N]

ROOT is a tree written by scripts/big_host_fixture.py (96 CPUs, 8 GPUs, 8 NVMe disks, 4
InfiniBand ports, 2 NUMA nodes). Every 100 ms the files the exporter reads are rewritten in
place, as the kernel would move them, with the rhythm of analyzer/tests/support/wide_host.rs
(the same shares and rates, so the live case and the in-process one describe one host):

- a training step every 1.2 s: the GPUs compute for 0.9 s (97 % busy, power following) and
  all-reduce for 0.3 s over the four IB ports together (1.5 → 11 GB/s on each port); 64
  data-loader CPUs 40-70 % busy, the other 32 at 2 %;
- every 90 s all eight disks read a data shard together for 5 s (60 % busy, 1.4 GB/s each);
  every 60 s a cron job holds one CPU (70-89, in turn) for 8 s;
- interrupts 900/s per CPU (4,000/s on every twelfth), NUMA misses 800/s and remote
  allocations 2,500/s per node, noise on everything.

SCHEDULE.json is {"t0_ms": ..., "faults": [{"name", "start_ms", "end_ms"}, ...]} (unix ms;
the workload's clock starts at t0_ms). It is read again when it changes, so faults can be
scheduled once the analyzer is ready (scripts/big_host_case.py does). Its optional
"step_phase_ms" (0-99) puts every step at that offset into each 100 ms of the wall clock.
A kernel's counters move continuously; the fixture's move in 100 ms steps, so a scrape every
100 ms that lands on a step's writes sees two steps and the next scrape none: a sample twice
its size and one of zero, which no real counter gives. Steps halfway between the scrapes
(big_host_case.py reads Prometheus' scrape phase and sets it) leave half a step of margin
either way for a late scrape or a slow step. The faults it knows, each on one device of its family
unless it says otherwise:

  gpu5_throttled     GPU 5's SM clock -30 %, power -28 %, 15 °C hotter, throttle reason
                     hw_thermal_slowdown; its siblings wait for it (utilization x0.85)
  irqs_on_4_cpus     CPUs 0-3 take 60,000 interrupts/s and spend 35 % in softirq
  nvme3n1_slow       nvme3n1 92 % busy while its siblings keep their 2 %
  ib_mlx5_2_errors   mlx5_2 port 1: symbol errors and link error recoveries 20-80/s, its
                     traffic -40 %
  numa_node1_remote  node 1's NUMA misses and remote allocations x10
  cpu_saturation     every CPU 96-99 % busy
  gpu7_off_the_bus   GPU 7 leaves nvml.json (NVML no longer lists it)

Seeded: the same host on every run. Standard library only. Stops after --seconds or when
killed.
"""
import argparse
import json
import math
import os
import random
import re
import time

STEP = 0.1
CPUS, GPUS, DISKS, PORTS, NODES = 96, 8, 8, 4, 2
KNOWN = ("gpu5_throttled", "irqs_on_4_cpus", "nvme3n1_slow", "ib_mlx5_2_errors",
         "numa_node1_remote", "cpu_saturation", "gpu7_off_the_bus")


def put(path, text):
    """Rewrites a file in place (the exporter may hold it open)."""
    b = text.encode()
    with open(path, "r+b") as f:
        f.write(b)
        f.truncate(len(b))


def put_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Host:
    def __init__(self, root, seed=45):
        self.root = root
        self.rng = random.Random(seed)
        P = self.proc = lambda f: os.path.join(root, "proc", f)
        stat = open(P("stat")).read().splitlines()
        self.cpu_rows = [[int(x) for x in l.split()[1:]] for l in stat if re.match(r"cpu\d", l)]
        assert len(self.cpu_rows) == CPUS, "not a big-host fixture: %d CPUs" % len(self.cpu_rows)
        self.stat_rest = [l for l in stat if not l.startswith("cpu")]
        self.ticks = [[float(v) for v in r] for r in self.cpu_rows]
        self.loader = [0.4 + 0.3 * self.rng.random() for _ in range(CPUS)]
        soft = open(P("softirqs")).read().splitlines()
        self.soft_head = soft[0]
        self.soft = [(l.split(":")[0], [float(x) for x in l.split(":")[1].split()]) for l in soft[1:]]
        self.disks = [l.split() for l in open(P("diskstats")).read().splitlines()]
        self.acc = {}  # fractional remainders of counters that move by rates
        dev = open(P("net/dev")).read().splitlines()
        self.dev_head = dev[:2]
        self.dev = [(l.split(":")[0], [int(x) for x in l.split(":")[1].split()]) for l in dev[2:]]
        self.meminfo = open(P("meminfo")).read().splitlines()
        # One completion line of /proc/interrupts per CPU: where its one non-zero cell is.
        raw = open(P("interrupts"), "rb").read()
        self.intr_cells, off = {}, 0
        for ln in raw.split(b"\n"):
            if b"mlx5_comp" in ln:
                for m in re.finditer(rb"\s+(\d+)", ln[5:]):
                    if m.group(1) != b"0":
                        cpu = (m.end() - 11) // 11
                        if cpu not in self.intr_cells:
                            self.intr_cells[cpu] = [off + 5 + m.end() - 11, float(m.group(1))]
                        break
            off += len(ln) + 1
        assert len(self.intr_cells) == CPUS, "a completion line per CPU expected"
        self.intr_fd = os.open(P("interrupts"), os.O_WRONLY)
        ib = os.path.join(root, "sys", "class", "infiniband")
        self.ports = []
        for p in range(PORTS):
            d = os.path.join(ib, "mlx5_%d" % p, "ports", "1", "counters")
            self.ports.append({c: [os.path.join(d, c), float(open(os.path.join(d, c)).read())]
                               for c in ("port_rcv_data", "port_xmit_data", "port_rcv_packets",
                                         "port_xmit_packets", "symbol_error", "link_error_recovery",
                                         "port_rcv_errors")})
        self.numa = []
        for n in range(NODES):
            path = os.path.join(root, "sys", "devices", "system", "node", "node%d" % n, "numastat")
            rows = [l.split() for l in open(path).read().splitlines()]
            self.numa.append((path, [[k, float(v)] for k, v in rows]))
        self.gpu_path = os.path.join(root, "nvml.json")
        self.gpus = json.load(open(self.gpu_path))
        assert len(self.gpus) == GPUS, "8 GPUs expected in nvml.json"
        self.energy = [float(g["total_energy_millijoules"]) for g in self.gpus]

    def gauss(self):
        return self.rng.gauss(0, 1)

    def step(self, secs, on):
        """One 100 ms step, `secs` into the workload; `on(name)` says whether a fault is on."""
        r = self.rng
        compute = (secs / 1.2) % 1.0 < 0.75
        shard = secs % 90.0 < 5.0 and secs > 10.0
        cron = 20.0 <= secs % 60.0 < 28.0
        cron_cpu = 70 + int(secs / 60.0) % 20
        sat, irqs = on("cpu_saturation"), on("irqs_on_4_cpus")
        # /proc/stat: user nice system idle iowait irq softirq …, in ticks of 10 ms.
        out, tot = [], [0] * len(self.ticks[0])
        for c, t in enumerate(self.ticks):
            user = (self.loader[c] * (1.0 if compute else 0.8) + 0.05 * self.gauss()) if c < 64 \
                else 0.02 + 0.01 * r.random()
            if cron and c == cron_cpu:
                user = 0.97 + 0.02 * r.random()
            if sat:
                user = 0.96 + 0.03 * r.random()
            system = 0.04 + 0.01 * abs(self.gauss())
            softirq = 0.35 + 0.05 * r.random() if irqs and c < 4 else 0.01 + 0.005 * r.random()
            iowait = 0.05 * r.random() if shard and c >= 64 else 0.002 * r.random()
            shares = [min(1.0, max(0.0, v)) for v in (user, system, softirq, iowait)]
            scale = min(1.0, 1.0 / max(1e-9, sum(shares)))
            user, system, softirq, iowait = (v * scale for v in shares)
            idle = max(0.0, 1.0 - user - system - softirq - iowait)
            for k, v in ((0, user), (2, system), (3, idle), (4, iowait), (6, softirq)):
                t[k] += v * 10.0
            row = [int(v) for v in t]
            out.append("cpu%d %s" % (c, " ".join(map(str, row))))
            tot = [a + b for a, b in zip(tot, row)]
        lines = ["cpu  " + " ".join(map(str, tot))] + out
        for i, l in enumerate(self.stat_rest):
            if l.startswith("ctxt "):
                self.stat_rest[i] = l = "ctxt %d" % (int(l.split()[1]) + r.randint(20000, 60000))
            lines.append(l)
        put(self.proc("stat"), "\n".join(lines) + "\n")
        # /proc/softirqs: NET_RX with the completion interrupts, the rest with the CPU's load.
        rates = {"TIMER": 250, "NET_RX": 900, "BLOCK": 40, "SCHED": 200, "RCU": 120, "NET_TX": 20,
                 "TASKLET": 30, "HI": 1}
        so = [self.soft_head]
        for name, vals in self.soft:
            rate = rates.get(name.strip(), 0)
            for c in range(len(vals)):
                v = rate * (1.0 + 0.2 * self.gauss())
                if name.strip() == "NET_RX" and irqs and c < 4:
                    v = 55000 * (1.0 + 0.05 * self.gauss())
                vals[c] += max(0.0, v) * STEP
            so.append(name + ":" + "".join("%11d" % v for v in vals) + " ")
        put(self.proc("softirqs"), "\n".join(so) + "\n")
        # /proc/interrupts: each CPU's completion line carries its rate.
        for c, cell in self.intr_cells.items():
            rate = 4000.0 if c % 12 == 0 else 900.0
            rate = 60000.0 + 3000.0 * self.gauss() if irqs and c < 4 else rate * (1.0 + 0.08 * self.gauss())
            cell[1] += max(0.0, rate) * STEP
            os.pwrite(self.intr_fd, ("%11d" % cell[1]).encode(), cell[0])
        # /proc/diskstats: reads, sectors, busy time (io_ticks, ms) of the NVMe namespaces.
        do = []
        for d in self.disks:
            m = re.fullmatch(r"nvme(\d+)n1", d[2])
            if m:
                i = int(m.group(1))
                read, busy = (1.4e9 * (1 + 0.1 * self.gauss()), 0.6 + 0.05 * self.gauss()) if shard \
                    else (2.0e7 * (1 + 0.3 * self.gauss()), 0.02 + 0.005 * self.gauss())
                if on("nvme3n1_slow") and i == 3:
                    busy = 0.92 + 0.02 * self.gauss()
                written = 5.0e6 * (1 + 0.3 * self.gauss())
                busy = min(1.0, max(0.0, busy))
                for k, v in ((3, max(0.0, read) / 131072), (5, max(0.0, read) / 512),
                             (7, max(0.0, written) / 65536), (9, max(0.0, written) / 512),
                             (12, busy * 1000), (13, busy * 1500)):
                    key = (d[2], k)
                    self.acc[key] = self.acc.get(key, float(d[k])) + v * STEP
                    d[k] = str(int(self.acc[key]))
            do.append(" ".join(d))
        put(self.proc("diskstats"), "\n".join(do) + "\n")
        # InfiniBand: traffic in 4-byte words, packets, and the link's error counters.
        for p, cnt in enumerate(self.ports):
            traffic = (1.5e9 if compute else 11.0e9) * (1 + 0.05 * self.gauss())
            bad = on("ib_mlx5_2_errors") and p == 2
            if bad:
                traffic *= 0.6
            traffic = max(0.0, traffic)
            moves = {"port_rcv_data": traffic / 4, "port_xmit_data": traffic / 4,
                     "port_rcv_packets": traffic / 4096, "port_xmit_packets": traffic / 4096}
            if bad:
                moves["symbol_error"] = 20 + 60 * r.random()
                moves["link_error_recovery"] = 20 + 60 * r.random()
            for c, v in moves.items():
                cnt[c][1] += v * STEP
                put(cnt[c][0], "%d\n" % cnt[c][1])
        # IPoIB and Ethernet interfaces: a share of the fabric's traffic, and noise.
        no = list(self.dev_head)
        for name, v in self.dev:
            if v[0] and name.strip() != "lo":
                m = re.fullmatch(r"\s*ib(\d)", name)
                bps = 0.02 * (1.5e9 if compute else 11.0e9) if m else 2.0e7
                if m and on("ib_mlx5_2_errors") and int(m.group(1)) == 2:
                    bps *= 0.6
                for k in (0, 8):
                    b = max(0.0, bps * (1 + 0.1 * self.gauss())) * STEP
                    v[k] += int(b)
                    v[k + 1] += int(b / 1500)
            no.append(name + ": " + " ".join(map(str, v)))
        put(self.proc("net/dev"), "\n".join(no) + "\n")
        # NUMA: misses and remote allocations per node.
        for n, (path, rows) in enumerate(self.numa):
            hot = on("numa_node1_remote") and n == 1
            for row in rows:
                base = {"numa_miss": 800.0, "other_node": 2500.0, "numa_hit": 2.0e6,
                        "local_node": 2.0e6}.get(row[0], 0.0)
                v = base * (1 + 0.1 * self.gauss())
                if hot and row[0] in ("numa_miss", "other_node"):
                    v *= 10
                row[1] += max(0.0, v) * STEP
            put(path, "".join("%s %d\n" % (k, v) for k, v in rows))
        # Memory: a few sizes around their values; Dirty around 200 MB.
        mo = []
        for l in self.meminfo:
            k = l.split(":")[0]
            if k in ("MemFree", "MemAvailable", "Cached", "AnonPages"):
                v = int(l.split()[1]) + r.randint(-2048, 2048)
                l = "%s: %15d kB" % (k, v)
            elif k == "Dirty":
                l = "%s: %15d kB" % (k, max(0, int(2.0e8 * (1 + 0.2 * self.gauss()) / 1024)))
            mo.append(l)
        put(self.proc("meminfo"), "\n".join(mo) + "\n")
        # GPUs (nvml.json, read again by the exporter when it changes).
        gpus = []
        for g, s in enumerate(self.gpus):
            util = (0.97 if compute else 0.35) + 0.02 * self.gauss()
            clock, temp, reasons = 1410.0 * (1 + 0.002 * self.gauss()), 50.0 + util * 10, 0
            power = 120.0 + 260.0 * util + 8.0 * self.gauss()
            if on("gpu5_throttled"):
                if g == 5:
                    clock *= 0.7
                    power *= 0.72
                    temp += 15
                    reasons = 0x40  # hw_thermal_slowdown
                else:
                    util *= 0.85
                    power = 120.0 + 260.0 * util + 8.0 * self.gauss()
            self.energy[g] += power * 1000 * STEP
            if g == 7 and on("gpu7_off_the_bus"):
                continue
            gpus.append(dict(s, utilization_gpu_percent=int(round(min(1.0, max(0.0, util)) * 100)),
                             power_usage_milliwatts=int(power * 1000),
                             total_energy_millijoules=int(self.energy[g]),
                             temperature_gpu_celsius=int(round(temp)), clock_sm_mhz=int(clock),
                             throttle_reasons=reasons))
        put_atomic(self.gpu_path, json.dumps(gpus))


def next_boundary(now, phase_ms):
    """The first time after `now` that is `phase_ms` into a 100 ms of the wall clock. A step
    that ran past its slot is followed at the next slot, not at once: two steps in one
    scrape interval are what the phase is there to prevent."""
    k = math.floor((now * 1000.0 - phase_ms) / 100.0) + 1
    return (k * 100.0 + phase_ms) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", help="the fixture root (holds proc/, sys/ and nvml.json)")
    ap.add_argument("schedule", help="JSON: t0_ms and the faults' names and times")
    ap.add_argument("--seconds", type=float, default=1e9, help="how long (default: until killed)")
    args = ap.parse_args()
    def load():
        sched = json.load(open(args.schedule))
        unknown = [f["name"] for f in sched.get("faults", []) if f["name"] not in KNOWN]
        if unknown:
            raise ValueError("unknown fault(s) %s; known: %s" % (", ".join(unknown), ", ".join(KNOWN)))
        phase = sched.get("step_phase_ms")
        if phase is not None and not (isinstance(phase, (int, float)) and 0 <= phase < 100):
            raise ValueError("step_phase_ms %r is not a number of ms from 0 to 99" % (phase,))
        return sched
    try:
        sched, seen = load(), os.stat(args.schedule).st_mtime_ns
    except (OSError, ValueError, KeyError) as e:
        ap.error("%s: %s" % (args.schedule, e))
    host = Host(args.root)
    t0 = sched["t0_ms"] / 1000.0
    start, n, late, phase = time.time(), 0, 0, None
    while time.time() - start < args.seconds:
        mtime = os.stat(args.schedule).st_mtime_ns
        if mtime != seen:
            seen = mtime
            try:
                sched = load()
                print("big_host_workload: schedule read again: %s" % ", ".join(
                    f["name"] for f in sched.get("faults", [])), flush=True)
            except (OSError, ValueError, KeyError) as e:
                print("big_host_workload: %s: %s; the schedule before is kept" % (args.schedule, e), flush=True)
        now_ms = time.time() * 1000
        active = {f["name"] for f in sched.get("faults", []) if f["start_ms"] <= now_ms < f["end_ms"]}
        host.step(max(0.0, now_ms / 1000 - t0), lambda name: name in active)
        n += 1
        if sched.get("step_phase_ms") != phase:
            phase = sched.get("step_phase_ms")
            print("big_host_workload: steps at %s ms into each 100 ms" % phase, flush=True)
        now = time.time()
        due = start + n * STEP if phase is None else next_boundary(now, phase)
        time.sleep(max(0.0, due - now))
        over = time.time() - due
        if over > STEP / 4:
            late += 1
            if late % 100 == 1:
                print("big_host_workload: step %d late by %.0f ms (%d late so far)" % (n, over * 1000, late),
                      flush=True)


if __name__ == "__main__":
    main()
