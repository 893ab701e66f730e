#!/usr/bin/env python3
"""bench/reduce: trawl's one-pass data reduction against plain reading and the codec CLIs.

Data: a ~2 GiB mixed tree (text, structured binaries, random, exact and shifted duplicates, half-zero
files) made by gen_corpus.py under bench/data/mixed; page cache warm; median of RUNS.

  trawl scan  --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1   (plus sha256)
  cat         every file to /dev/null
  lz4 -1      every file, concatenated, through one lz4 -1
  zstd -1 -T1 every file, concatenated, through one zstd -1 -T1

    python3 bench/reduce.py [--runs N] [--trawl PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd, runs):
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts, rss = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, st, ru = os.wait4(p.pid, 0)
        ts.append(time.perf_counter() - t0)
        rss = max(rss, ru.ru_maxrss * 1024)
        if os.waitstatus_to_exitcode(st) != 0:
            sys.exit(f"failed: {cmd}")
    return statistics.median(ts), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    a = ap.parse_args()
    tree = os.path.join(HERE, "data", "mixed")
    subprocess.check_call([sys.executable, os.path.join(HERE, "gen_corpus.py"), "mixed", tree, "2048"])
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
    cpus = os.cpu_count()
    files = f"find {tree} -type f -print0 | sort -z | xargs -0 cat"
    cases = [
        ("trawl scan (dedup 6 sizes + cdc 16k + lz4 + zstd:1 + sha256)",
         f"{a.trawl} scan {tree} -q --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1"),
        ("trawl scan (default: dedup 6 sizes + lz4 + sha256)", f"{a.trawl} scan {tree} -q"),
        ("cat > /dev/null", f"{files} > /dev/null"),
        ("lz4 -1", f"{files} | lz4 -1 > /dev/null"),
        ("zstd -1 -T1", f"{files} | zstd -1 -T1 > /dev/null"),
    ]
    print(f"{size / 1e9:.2f} GB mixed tree, {cpus} CPUs, median of {a.runs}\n")
    print(f"{'command':<62} {'s':>7} {'MB/s':>8} {'MB/s/core':>10} {'RSS':>9}")
    res = {}
    for name, cmd in cases:
        t, rss = timed(cmd, a.runs)
        res[name] = t
        per_core = size / t / 1e6 / (cpus if name.startswith("trawl") else 1)
        print(f"{name:<62} {t:7.2f} {size / t / 1e6:8.0f} {per_core:10.0f} {rss / 2**20:7.0f}MiB")
    full = res[cases[0][0]]
    print(f"\ntrawl full vs zstd -1 -T1 alone: {res['zstd -1 -T1'] / full:.2f}x; vs lz4 -1: {res['lz4 -1'] / full:.2f}x")


if __name__ == "__main__":
    main()
