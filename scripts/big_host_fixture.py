#!/usr/bin/env python3
"""Writes a fixture root for a big GPU host, for scripts/big_host_table.py.

    scripts/big_host_fixture.py DEST

2 sockets, 96 CPUs (24 cores × 2 threads per socket), 2 NUMA nodes, 8 NVMe disks (one
queue per CPU each, and a RAID 0 md0 over them), 4 InfiniBand HCAs with one active port
each (and their IPoIB interfaces), 8 GPUs. Writes DEST/proc, DEST/sys and DEST/nvml.json
(8 GpuSamples for exporter/examples/fixture_exporter.rs, the gpu collector's fixture format).

The files reuse the writers of exporter/tests/fixtures/make_numa_2socket.py (the
`numa-2socket` tree's formats, from the kernel's documentation) with 96 CPUs instead of 64;
what that tree has fewer of is written here, scaled up: /proc/interrupts as a host like this
has it (an NVMe queue and an mlx5 completion vector per CPU and device: about 1,200 lines,
1.3 MB), diskstats, hwmon, InfiniBand (mlx5_0 of the `infiniband` tree, copied per HCA) and
the GPUs (board 0 of `nvml/a100-sxm4-2gpu.json`, copied per GPU). Fixed seeds: the same
tree on every run. Standard library only.
"""

import argparse
import importlib.util
import json
import os
import random
import shutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "exporter", "tests", "fixtures")
NVME, HCAS, GPUS = 8, 4, 8


def load_base():
    spec = importlib.util.spec_from_file_location(
        "make_numa_2socket", os.path.join(FIXTURES, "make_numa_2socket.py"))
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    # Its writers read the topology from these globals at call time.
    base.SOCKETS, base.CORES, base.THREADS = 2, 24, 2
    base.NCPU = base.SOCKETS * base.CORES * base.THREADS
    return base


base = load_base()
NCPU = base.NCPU
write = base.write
rng = random.Random(20261126)


def proc_interrupts(root):
    head = " " * 4 + "".join(f"CPU{c}".rjust(11) for c in range(NCPU)) + "\n"
    body = []

    def row(irq, counts, desc):
        body.append(f"{irq:>4}:" + "".join(str(v).rjust(11) for v in counts) + f"  {desc}\n")

    def on(cpu, value):
        counts = [0] * NCPU
        counts[cpu] = value
        return counts

    row("0", on(0, 36), "IR-IO-APIC    2-edge      timer")
    row("8", on(3, 1), "IR-IO-APIC    8-edge      rtc0")
    row("9", [0] * NCPU, "IR-IO-APIC    9-fasteoi   acpi")
    irq = 100
    for d in range(NVME):  # nvmeNq0 is the admin queue; one I/O queue per CPU
        pci = f"0000:{0x5e + d:02x}:00.0"
        row(str(irq), on(d % NCPU, rng.randint(100, 900)), f"IR-PCI-MSIX-{pci}    0-edge      nvme{d}q0")
        irq += 1
        for q in range(1, NCPU + 1):
            row(str(irq), on(q - 1, rng.randint(100_000, 3_000_000)),
                f"IR-PCI-MSIX-{pci} {q:>4}-edge      nvme{d}q{q}")
            irq += 1
    for h in range(HCAS):  # mlx5: one async vector, one completion vector per CPU
        pci = f"0000:{0x17 + 0x20 * h:02x}:00.0"
        row(str(irq), on(h, rng.randint(1_000, 9_000)), f"IR-PCI-MSIX-{pci}    0-edge      mlx5_async0@pci:{pci}")
        irq += 1
        for q in range(NCPU):
            row(str(irq), on(q, rng.randint(1_000_000, 90_000_000)),
                f"IR-PCI-MSIX-{pci} {q + 1:>4}-edge      mlx5_comp{q}@pci:{pci}")
            irq += 1
    for g in range(GPUS):
        row(str(irq), on(g * 12, rng.randint(10_000, 900_000)), f"IR-PCI-MSI-{0x07 + g * 0x10:02x}000000-edge      nvidia")
        irq += 1
    for q in range(8):
        row(str(irq), on(48 + q, rng.randint(10_000, 90_000)), f"IR-PCI-MSIX-0000:3d:00.0 {q + 1:>4}-edge      eno1-TxRx-{q}")
        irq += 1
    scale = {"LOC": 50_000_000, "RES": 2_000_000, "CAL": 3_000_000, "TLB": 400_000, "MCP": 900}
    for name, desc in [("NMI", "Non-maskable interrupts"), ("LOC", "Local timer interrupts"),
                       ("SPU", "Spurious interrupts"), ("PMI", "Performance monitoring interrupts"),
                       ("IWI", "IRQ work interrupts"), ("RTR", "APIC ICR read retries"),
                       ("RES", "Rescheduling interrupts"), ("CAL", "Function call interrupts"),
                       ("TLB", "TLB shootdowns"), ("TRM", "Thermal event interrupts"),
                       ("THR", "Threshold APIC interrupts"), ("DFR", "Deferred Error APIC interrupts"),
                       ("MCE", "Machine check exceptions"), ("MCP", "Machine check polls")]:
        row(name, [rng.randint(0, scale.get(name, 3)) for _ in range(NCPU)], f"  {desc}")
    body.append(" ERR:          0\n MIS:          0\n")
    for name, desc in [("PIN", "Posted-interrupt notification event"),
                       ("NPI", "Nested posted-interrupt event"), ("PIW", "Posted-interrupt wakeup event")]:
        row(name, [0] * NCPU, f"  {desc}")
    write(root, "proc/interrupts", head + "".join(body))


def proc_diskstats(root):
    def line(major, minor, name, w):
        reads, writes = int(88_000_000 * w), int(41_000_000 * w)
        vals = [reads, int(reads * 0.02), reads * 64, int(reads * 0.09), writes, int(writes * 0.1),
                writes * 48, int(writes * 0.3), rng.randint(0, 4), int(9_000_000 * w),
                int(12_000_000 * w), int(200_000 * w), 0, int(200_000 * w) * 2048, int(1_000 * w),
                int(400_000 * w), int(30_000 * w)]
        return f"{major:>4} {minor:>7} {name} " + " ".join(map(str, vals)) + "\n"

    out = line(7, 0, "loop0", 0.0)
    for d in range(NVME):
        w = 0.8 + 0.4 * rng.random()
        out += line(259, 2 * d, f"nvme{d}n1", w) + line(259, 2 * d + 1, f"nvme{d}n1p1", w * 0.999)
    out += line(9, 0, "md0", NVME * 0.9)
    write(root, "proc/diskstats", out)


def proc_net_dev(root):
    base.proc_net(root)  # lo, eno1-2, ens1f0np0/ens1f1np1, bond0, docker0; TCP/IP tables
    rows = ""
    for h in range(HCAS):
        rb, rp = rng.randint(10**13, 9 * 10**13), rng.randint(10**9, 9 * 10**9)
        rows += f"   ib{h}: {rb} {rp} 0 {h} 0 0 0 0 {rb // 2} {rp // 2} 0 0 0 0 0 0\n"
    with open(os.path.join(root, "proc/net/dev"), "a") as f:
        f.write(rows)


def hwmon(root):
    b = "sys/class/hwmon"
    write(root, f"{b}/hwmon0/name", "acpitz\n")
    write(root, f"{b}/hwmon0/temp1_input", "27800\n")
    for pkg in range(base.SOCKETS):
        h = f"{b}/hwmon{pkg + 1}"
        write(root, f"{h}/name", "coretemp\n")
        write(root, f"{h}/temp1_label", f"Package id {pkg}\n")
        write(root, f"{h}/temp1_input", f"{[61000, 54000][pkg]}\n")
        for core in range(base.CORES):
            write(root, f"{h}/temp{core + 2}_label", f"Core {core}\n")
            write(root, f"{h}/temp{core + 2}_input", f"{50000 + rng.randint(0, 12) * 1000}\n")
    for d in range(NVME):
        h = f"{b}/hwmon{base.SOCKETS + 1 + d}"
        write(root, f"{h}/name", "nvme\n")
        for i, label in enumerate(["Composite", "Sensor 1", "Sensor 2"]):
            write(root, f"{h}/temp{i + 1}_label", f"{label}\n")
            write(root, f"{h}/temp{i + 1}_input", f"{38850 + rng.randint(0, 9) * 1000}\n")


def infiniband(root):
    src = os.path.join(FIXTURES, "infiniband", "sys", "class", "infiniband", "mlx5_0")
    for h in range(HCAS):
        dest = os.path.join(root, "sys", "class", "infiniband", f"mlx5_{h}")
        shutil.copytree(src, dest)
        factor = 0.5 + rng.random()
        for sub in ("counters", "hw_counters"):
            d = os.path.join(dest, "ports", "1", sub)
            for name in sorted(os.listdir(d)):
                if name == "lifespan":  # a setting, not a counter
                    continue
                with open(os.path.join(d, name)) as f:
                    v = int(f.read())
                with open(os.path.join(d, name), "w") as f:
                    f.write(f"{int(v * factor)}\n")


def gpus(root):
    with open(os.path.join(FIXTURES, "nvml", "a100-sxm4-2gpu.json")) as f:
        board = json.load(f)[0]
    out = []
    for g in range(GPUS):
        s = dict(board, index=g, uuid=f"GPU-3f1c9a52-8e0b-4d7a-9c61-0b2f5e7d4a{g:02x}",
                 pci_bus_id=f"00000000:{0x07 + g * 0x10:02X}:00.0",
                 utilization_gpu_percent=rng.randint(70, 99),
                 utilization_memory_percent=rng.randint(20, 60),
                 power_usage_milliwatts=rng.randint(250_000, 390_000),
                 temperature_gpu_celsius=rng.randint(50, 70))
        out.append(s)
    with open(os.path.join(root, "nvml.json"), "w") as f:
        json.dump(out, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dest", metavar="DEST", help="where proc/, sys/ and nvml.json are written")
    dest = ap.parse_args().dest
    for sub in ("proc", "sys"):
        shutil.rmtree(os.path.join(dest, sub), ignore_errors=True)
    for step in (base.proc_stat, proc_interrupts, base.proc_softirqs, base.proc_meminfo,
                 base.node_files, base.proc_vmstat, proc_diskstats, proc_net_dev, base.cpu_sysfs,
                 base.powercap, hwmon, infiniband, gpus):
        step(dest)


if __name__ == "__main__":
    main()
