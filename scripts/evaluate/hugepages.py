#!/usr/bin/env python3
"""The HugePages case's hosts (docs/evaluation/method.md, `hugepages_drift`): copies of a fixture
machine's /proc and /sys (exporter/tests/fixtures/numa-2socket, two sockets, 512 GiB) that
exporters read with --path.procfs and --path.sysfs, and on one of them 1 GiB huge pages
reserved and released as the kernel shows it.

    hugepages.py setup DIR FIXTURE N     DIR/host-1 … DIR/host-N from FIXTURE (proc/, sys/)
    hugepages.py reserve HOST PAGES      PAGES 1 GiB pages reserved on HOST (a host-K dir)
    hugepages.py release HOST PAGES      the same pages given back

Hosts that run the same work never use exactly the same memory: host K (K ≥ 2) uses K − 1
GiB more anonymous memory than host 1 (AnonPages up, MemFree and MemAvailable down, on node 0).

A reservation changes what Linux 6.18 changed on this project's VM when 1 GiB pages were
reserved through /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages: that pool's
nr_hugepages, nr_hugepages_mempolicy and free_hugepages rise by PAGES; /proc/meminfo's
Hugetlb rises by PAGES GiB, MemFree and MemAvailable fall by as much, CommitLimit falls by
PAGES GiB × vm.overcommit_ratio (50 %); HugePages_Total and _Free, which count the default
2 MiB size, do not move. The pages are spread over the NUMA nodes in turn, and each node's
pool and its meminfo (MemFree down, MemUsed up) show its share. Every file is rewritten in
place in one write (the exporter keeps it open, as it does under /proc).
Standard library only.
"""

import argparse
import os
import re
import shutil
import sys

GIB_KB = 1024 * 1024
POOL = "sys/kernel/mm/hugepages/hugepages-1048576kB"
NODES = "sys/devices/system/node"
OVERCOMMIT_RATIO = 0.5


def replace(path, text):
    # In place, in one write: the exporter keeps its files open and reads them again from the
    # start, as it does under /proc, so a file renamed over it would never be seen.
    with open(path, "r+") as f:
        f.write(text)
        f.truncate()


def add_count(path, delta):
    with open(path) as f:
        n = int(f.read().split()[0])
    if n + delta < 0:
        sys.exit("%s: %d + %d is below zero" % (path, n, delta))
    replace(path, "%d\n" % (n + delta))


def add_kb(path, deltas):
    """Adds deltas[field] kB to each `field:` line of a meminfo file (global or per node)."""
    with open(path) as f:
        lines = f.read().splitlines()
    seen = set()
    out = []
    for ln in lines:
        m = re.match(r"^((?:Node \d+ )?)([A-Za-z0-9_()]+):(\s+)(\d+)( kB)?$", ln)
        if m and m.group(2) in deltas:
            prefix, field, gap, value, unit = m.groups()
            new = int(value) + deltas[field]
            if new < 0:
                sys.exit("%s: %s would fall below zero" % (path, field))
            text = str(new)
            # Keep the column: the value's right edge stays where it was.
            pad = max(1, len(gap) + len(value) - len(text))
            ln = "%s%s:%s%s%s" % (prefix, field, " " * pad, text, unit or "")
            seen.add(field)
        out.append(ln)
    missing = set(deltas) - seen
    if missing:
        sys.exit("%s: no %s line" % (path, ", ".join(sorted(missing))))
    replace(path, "\n".join(out) + "\n")


def nodes(host):
    d = os.path.join(host, NODES)
    found = sorted((int(n[4:]), n) for n in os.listdir(d) if re.fullmatch(r"node\d+", n))
    return [os.path.join(d, n) for _, n in found]


def setup(out, fixture, count):
    for sub in ("proc", "sys"):
        if not os.path.isdir(os.path.join(fixture, sub)):
            sys.exit("%s has no %s/" % (fixture, sub))
    for k in range(1, count + 1):
        host = os.path.join(out, "host-%d" % k)
        if os.path.exists(host):
            sys.exit("%s exists" % host)
        for sub in ("proc", "sys"):
            shutil.copytree(os.path.join(fixture, sub), os.path.join(host, sub), symlinks=True)
        extra = (k - 1) * GIB_KB
        if extra:
            add_kb(os.path.join(host, "proc/meminfo"),
                   {"MemFree": -extra, "MemAvailable": -extra, "AnonPages": extra})
            add_kb(os.path.join(nodes(host)[0], "meminfo"),
                   {"MemFree": -extra, "MemUsed": extra, "AnonPages": extra})
        print(host)


def reserve(host, pages):
    """pages > 0 reserves, < 0 releases."""
    kb = pages * GIB_KB
    for f in ("nr_hugepages", "nr_hugepages_mempolicy", "free_hugepages"):
        add_count(os.path.join(host, POOL, f), pages)
    add_kb(os.path.join(host, "proc/meminfo"), {
        "Hugetlb": kb, "MemFree": -kb, "MemAvailable": -kb,
        "CommitLimit": -int(kb * OVERCOMMIT_RATIO),
    })
    ns = nodes(host)
    for i, node in enumerate(ns):
        share = abs(pages) // len(ns) + (1 if i < abs(pages) % len(ns) else 0)
        share = share if pages > 0 else -share
        if share == 0:
            continue
        for f in ("nr_hugepages", "free_hugepages"):
            add_count(os.path.join(node, "hugepages/hugepages-1048576kB", f), share)
        add_kb(os.path.join(node, "meminfo"), {"MemFree": -share * GIB_KB, "MemUsed": share * GIB_KB})


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = ap.add_subparsers(dest="cmd", required=True, metavar="setup|reserve|release")
    s = cmds.add_parser("setup", help="DIR/host-1 … DIR/host-N from FIXTURE")
    s.add_argument("dir", metavar="DIR")
    s.add_argument("fixture", metavar="FIXTURE")
    s.add_argument("n", metavar="N", type=int)
    for cmd in ("reserve", "release"):
        r = cmds.add_parser(cmd, help="PAGES 1 GiB pages %s on HOST" % (
            "reserved" if cmd == "reserve" else "given back"))
        r.add_argument("host", metavar="HOST")
        r.add_argument("pages", metavar="PAGES", type=int)
    args = ap.parse_args(argv)
    if args.cmd == "setup":
        setup(args.dir, args.fixture, args.n)
    else:
        if args.pages <= 0:
            sys.exit("PAGES must be positive")
        reserve(args.host, args.pages if args.cmd == "reserve" else -args.pages)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
