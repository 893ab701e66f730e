#!/usr/bin/env python3
"""bench/bigfile: one large file on every core, page cache warm: `trawl scan FILE -d blake3` with
and without the reduction, the default scan (sha256 and the reduction), and `b3sum` (all cores
on one file by BLAKE3's tree); with a tree, its default scan beside (it must not get slower).
Rounds interleaved (each round runs every command once, after one warm-up of each); the median
of each, and with --baseline the same trawl rows for that other build and its time over this one's.

    python3 bench/bigfile.py FILE [--tree DIR] [--trawl PATH] [--baseline PATH] [--runs N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def once(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--tree", help="a tree whose default scan runs beside")
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "bench-fast", "trawl"))
    ap.add_argument("--baseline", help="another trawl binary, in the same rounds")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    builds = [("trawl", a.trawl)] + ([("baseline", a.baseline)] if a.baseline else [])
    cases = [("-d blake3", [a.file, "-q", "-d", "blake3"]),
             ("default", [a.file, "-q"]),
             ("-d blake3 --no-reduce", [a.file, "-q", "-d", "blake3", "--no-reduce"])]
    if a.tree:
        cases.append(("tree, default", [a.tree, "-q"]))
    cmds = [(f"{name} {label}", [path, "scan", *args]) for label, args in cases for name, path in builds]
    if shutil.which("b3sum"):
        cmds.append(("b3sum", ["b3sum", a.file]))
    for _, c in cmds:
        once(c)
    times = {k: [] for k, _ in cmds}
    for _ in range(a.runs):
        for k, c in cmds:
            times[k].append(once(c))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"| command | median s | runs: {a.runs} |")
    print("|---|---:|---|")
    for k, _ in cmds:
        extra = ""
        if k.startswith("baseline "):
            extra = f"{med[k] / med['trawl ' + k[len('baseline '):]]:.2f}x this build's time"
        print(f"| {k} | {med[k]:.3f} | {extra} |")


if __name__ == "__main__":
    main()
