#!/usr/bin/env python3
"""Moves the counters of a big-host fixture root (scripts/big_host_fixture.py) every 100 ms,
so that what Prometheus stores of it compresses as a working host's series do:

    scripts/big_host_mover.py ROOT [SECONDS]

In place (the exporter keeps its files open): /proc/stat (per-CPU ticks, 10 per CPU per
100 ms, each CPU's busy share drifting at random), context switches; /proc/softirqs (per CPU
and type); /proc/diskstats and /proc/net/dev (traffic of the NVMe disks and the active
interfaces); /proc/meminfo (a few sizes); one count per mlx5 completion line of
/proc/interrupts (patched in its 11-character column). The GPUs (nvml.json), sysfs and the
other files stay as written. Seeded: the same movement on every run. Standard library only.
"""
import argparse, os, random, re, time
ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                             formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("root", help="the fixture root (holds proc/ and sys/); its files are rewritten")
ap.add_argument("seconds", nargs="?", type=float, default=1e9, help="how long (default: until killed)")
args = ap.parse_args()
root, secs = args.root, args.seconds
rng = random.Random(46)
P = lambda f: os.path.join(root, "proc", f)

def put(path, text):
    b = text.encode()
    with open(path, "r+b") as f:
        f.write(b); f.truncate(len(b))

stat = open(P("stat")).read().splitlines()
cpus = [l.split() for l in stat if re.match(r"cpu\d", l)]
rest = [l for l in stat if not l.startswith("cpu")]
busy = [rng.random() for _ in cpus]          # each CPU's load, drifting
soft = open(P("softirqs")).read().splitlines()
shead, srows = soft[0], [(l.split(":")[0], [int(x) for x in l.split(":")[1].split()]) for l in soft[1:]]
rate = {"HI": 0.05, "TIMER": 25, "NET_TX": 2, "NET_RX": 120, "BLOCK": 30, "IRQ_POLL": 0,
        "TASKLET": 3, "SCHED": 20, "HRTIMER": 0.2, "RCU": 12}
disk = [l.split() for l in open(P("diskstats")).read().splitlines()]
dev = open(P("net/dev")).read().splitlines()
devrows = [(l.split(":")[0], [int(x) for x in l.split(":")[1].split()]) for l in dev[2:]]
mem = open(P("meminfo")).read().splitlines()
intr = open(P("interrupts"), "rb").read()
lines = intr.split(b"\n")
offs, o = [], 0
for ln in lines:  # (offset of the one non-zero cell, its value) of each mlx5_comp line
    if b"mlx5_comp" in ln:
        for m in re.finditer(rb"\s+(\d+)", ln[5:]):
            if m.group(1) != b"0":
                s = o + 5 + m.end() - 11
                offs.append([s, int(m.group(1))]); break
    o += len(ln) + 1
fd = os.open(P("interrupts"), os.O_WRONLY)
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    n += 1
    out = []
    tot = [0] * 10
    for i, c in enumerate(cpus):
        busy[i] = min(0.98, max(0.02, busy[i] + rng.gauss(0, 0.05)))
        u = sum(rng.random() < busy[i] * 0.8 for _ in range(10)); s = sum(rng.random() < busy[i] * 0.2 for _ in range(10 - u))
        w = 1 if rng.random() < 0.05 else 0; irq = 1 if rng.random() < 0.1 else 0
        idle = max(0, 10 - u - s - w - irq)
        for k, d in ((1, u), (3, s), (4, idle), (5, w), (7, irq)):
            c[k] = str(int(c[k]) + d)
        for k in range(10): tot[k] += int(c[k + 1])
    out.append("cpu  " + " ".join(map(str, tot)))
    out += [" ".join(c) for c in cpus]
    for l in rest:
        if l.startswith("ctxt"):
            l = "ctxt %d" % (int(l.split()[1]) + rng.randint(20000, 60000))
        out.append(l)
    put(P("stat"), "\n".join(out) + "\n")
    so = [shead]
    for name, vals in srows:
        r = rate.get(name.strip(), 1)
        for i in range(len(vals)):
            vals[i] += int(rng.expovariate(1) * r * (0.5 + busy[i % len(busy)]))
        so.append(name + ":" + "".join("%11d" % v for v in vals) + " ")
    put(P("softirqs"), "\n".join(so) + "\n")
    do = []
    for d in disk:
        if d[2].startswith("nvme") and "p" not in d[2][4:]:
            rd = rng.randint(0, 400); wr = rng.randint(0, 200)
            d[3] = str(int(d[3]) + rd); d[5] = str(int(d[5]) + rd * 16); d[6] = str(int(d[6]) + rd // 8)
            d[7] = str(int(d[7]) + wr); d[9] = str(int(d[9]) + wr * 32); d[10] = str(int(d[10]) + wr // 4)
            d[12] = str(int(d[12]) + rng.randint(0, 100)); d[13] = str(int(d[13]) + rng.randint(0, 200))
        do.append(" ".join(d))
    put(P("diskstats"), "\n".join(do) + "\n")
    no = dev[:2]
    for name, v in devrows:
        if v[0]:
            pk = rng.randint(0, 50000); v[0] += pk * rng.randint(64, 1500); v[1] += pk
            tk = rng.randint(0, 50000); v[8] += tk * rng.randint(64, 1500); v[9] += tk
        no.append(name + ": " + " ".join(map(str, v)))
    put(P("net/dev"), "\n".join(no) + "\n")
    mo = []
    for l in mem:
        k = l.split(":")[0]
        if k in ("MemFree", "MemAvailable", "Cached", "Dirty", "AnonPages", "Active", "Inactive"):
            v = int(l.split()[1]) + rng.randint(-2048, 2048)
            l = "%s: %15d kB" % (k, v)
        mo.append(l)
    put(P("meminfo"), "\n".join(mo) + "\n")
    for c in offs:
        c[1] += rng.randint(0, 3000)
        os.pwrite(fd, ("%11d" % c[1]).encode(), c[0])
    time.sleep(max(0, t0 + n * 0.1 - time.time()))
