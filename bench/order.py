#!/usr/bin/env python3
"""bench/order: what reading files in disk order costs and saves: trawl at --read-order walk,
disk and auto on the same files, warm (page cache full) and cold (dropped before every
command), interleaved rounds, medians and each row against walk order.

Disk order takes one open and one FIEMAP ioctl per file before it is read; on many tiny files
that is the cost to measure (warm, where it cannot save anything), and on a disk that seeks
the saving (cold). Data: 200,000 files of 0-1 KiB (gen_corpus.py tiny), scaled by --scale,
under DIR, which must be on a disk (never tmpfs); cold rounds need root.

    sudo python3 bench/order.py DIR [--trawl PATH] [--runs N] [--scale F] [--set tiny|small]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cold import drop_caches, fs_type, refuse_unless_cold  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--set", default="tiny", choices=["tiny", "small"])
    a = ap.parse_args()
    refuse_unless_cold(a.dir)
    kind = fs_type(a.dir)
    n = int((200000 if a.set == "tiny" else 20000) * a.scale)
    tree = os.path.join(a.dir, f"{a.set}-{n}")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_corpus.py"), a.set, tree, str(n)],
                   check=True, stdout=subprocess.DEVNULL)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    print(f"bench/order: {os.cpu_count()} CPUs, {n:,} files in {tree} on {kind}, commit {rev}, "
          f"{a.runs} interleaved rounds, medians")
    orders = ("walk", "disk", "auto")
    cmd = {o: [a.trawl, "scan", tree, "-q", "-d", "xxh3", "--no-reduce", "--read-order", o]
           for o in orders}
    for temp in ("warm", "cold"):
        times = {o: [] for o in orders}
        if temp == "warm":
            subprocess.run(cmd["walk"], check=True)
        for r in range(a.runs):
            for o in (orders if r % 2 == 0 else orders[::-1]):
                if temp == "cold":
                    drop_caches()
                t = time.perf_counter()
                subprocess.run(cmd[o], check=True)
                times[o].append(time.perf_counter() - t)
        med = {o: statistics.median(v) for o, v in times.items()}
        print(f"\n{temp}:")
        print(f"  {'--read-order':<14} {'median s':>9} {'vs walk':>8}")
        for o in orders:
            print(f"  {o:<14} {med[o]:>9.3f} {med[o] / med['walk']:>7.3f}x")


if __name__ == "__main__":
    main()
