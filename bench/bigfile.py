#!/usr/bin/env python3
"""bench/bigfile: one large file on every core, warm: trawl against b3sum (which hashes one file
on all cores by BLAKE3's tree), in one interleaved run.

Data: one file of --mib MiB (default 4096) of gen_corpus.py `big` under --data (default
/dev/shm/trawl-bigfile where /dev/shm exists, so the disk is out of the picture), made once.

Rows, each run --runs times (default 5) after one warm-up, rounds interleaved in a rotating
order:
  b3sum FILE                                   (all cores, memory-mapped)
  trawl scan FILE -q -j N -d blake3 --no-reduce  (the digest alone)
  trawl scan FILE -q -j N -d blake3              (the digest and the reduction)
  trawl scan FILE -q -j N                        (the default: sha256, a serial digest, and the reduction)
With --baseline PATH each trawl row also runs that build. Each row: the median seconds, GB/s,
the cores busy ((user + sys) / wall, from wait4) and b3sum / this (above 1: faster than b3sum).
N is --j (default: the CPU count). Every exit code is checked.

    python3 bench/bigfile.py [--trawl PATH] [--baseline PATH] [--mib N] [--runs N] [--j N] [--data DIR]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from reuse import run_once  # noqa: E402  (seconds, peak RSS, CPU of one command; exit checked)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--baseline")
    ap.add_argument("--mib", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--j", type=int, default=os.cpu_count())
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else os.path.join(HERE, "data")
    ap.add_argument("--data", default=os.path.join(shm, "trawl-bigfile"))
    a = ap.parse_args()
    tree = os.path.join(a.data, f"big-{a.mib}")
    subprocess.run([sys.executable, os.path.join(HERE, "gen_corpus.py"), "big", tree,
                    str(a.mib)], check=True, stdout=subprocess.DEVNULL)
    f = os.path.join(tree, "big.bin")
    size = os.path.getsize(f)
    j = ["-j", str(a.j)]
    flavours = {"-d blake3 --no-reduce": ["-d", "blake3", "--no-reduce"],
                "-d blake3": ["-d", "blake3"], "default": []}
    cmds = {}
    if shutil.which("b3sum"):
        cmds["b3sum"] = ["b3sum", f]
    else:
        print("b3sum is not installed: its row is left out")
    builds = [("trawl", a.trawl)] + ([("base", a.baseline)] if a.baseline else [])
    for name, extra in flavours.items():
        for who, exe in builds:
            cmds[f"{who} {name}"] = [exe, "scan", f, "-q", *j, *extra]
    for c in cmds.values():
        run_once(c, False)
    times = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    keys = list(cmds)
    for r in range(a.runs):
        for k in keys[r % len(keys):] + keys[:r % len(keys)]:
            dt, _, c = run_once(cmds[k], False)
            times[k].append(dt)
            cpu[k].append(c)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"bench/bigfile: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}, commit {commit}, "
          f"one {size / 2**20:,.0f} MiB file in {a.data}, warm, -j {a.j}, {a.runs} runs, medians")
    ref = statistics.median(times["b3sum"]) if "b3sum" in times else None
    print(f"  {'command':<32} {'median s':>9} {'GB/s':>6} {'cores':>6} {'b3sum/this':>11}")
    for k in cmds:
        m = statistics.median(times[k])
        busy = statistics.median(cpu[k]) / m
        ratio = f"{ref / m:10.2f}x" if ref and k != "b3sum" else ""
        print(f"  {k:<32} {m:9.3f} {size / m / 1e9:6.2f} {busy:6.1f} {ratio:>11}")
    if a.baseline:
        for name in flavours:
            b, t = (statistics.median(times[f"{w} {name}"]) for w in ("base", "trawl"))
            print(f"  base / trawl, {name}: {b / t:.2f}x")


if __name__ == "__main__":
    main()
