#!/usr/bin/env python3
"""A steady GPU job for scripts/gpu_case.sh, standing in for a training step.

    gpu_load.py SECONDS LOG

Each step copies a 64 MiB batch from pinned host memory to the GPU (as a data loader's batch
crosses PCIe) and runs eight 8192×8192 bf16 matrix products on it, then waits for the GPU. Once
a second it appends `unix_ms steps_per_second` to LOG, so what a fault costs the job can be read
beside what Reveal says about it. Ends after SECONDS. Needs PyTorch with CUDA.
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("seconds", metavar="SECONDS", type=float, help="how long the job runs")
    ap.add_argument("log", metavar="LOG", help="where `unix_ms steps_per_second` lines go")
    args = ap.parse_args()
    seconds, log = args.seconds, args.log
    import torch  # after the arguments: --help needs no PyTorch

    if not torch.cuda.is_available():
        sys.exit("gpu_load: PyTorch sees no CUDA device")
    dev = torch.device("cuda")
    n = 8192
    w = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    host = torch.randn(64 << 20 >> 1, dtype=torch.bfloat16).pin_memory()  # 64 MiB
    batch = torch.empty_like(host, device=dev)
    x = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    end = time.time() + seconds
    steps, tick = 0, time.time()
    with open(log, "a", buffering=1) as out:
        while time.time() < end:
            batch.copy_(host, non_blocking=True)
            y = x
            for _ in range(8):
                y = torch.mm(y, w)
                y = y * (1.0 / 90.0)  # keeps the values finite over the chain
            torch.cuda.synchronize()
            steps += 1
            now = time.time()
            if now - tick >= 1.0:
                out.write("%d %.2f\n" % (int(now * 1000), steps / (now - tick)))
                steps, tick = 0, now


if __name__ == "__main__":
    main()
