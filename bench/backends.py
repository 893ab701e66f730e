#!/usr/bin/env python3
"""bench/backends: two builds of trawl on the same data, interleaved: the speed of the C back-ends
a build links (MD5 and SHA-512 from OpenSSL, gzip from a zlib) compared between builds that get
them differently (for example the system's OpenSSL and zlib-ng against OpenSSL compiled from
source and zlib-rs).

Data (made once under bench/data/backends/): 1 GiB of random bytes, and 256 MiB of compressible
text-like bytes. Page cache warm (a warm-up run of each command first).

  md5:    trawl scan RANDOM -d md5 --no-reduce -q
  sha512: trawl scan RANDOM -d sha512 --no-reduce -q
  gzip:   trawl scan TEXT -d none --compress gzip:6 -q     (the dedup work is the same in both)

Each command is timed RUNS times (default 5) per build, the builds alternating; the table gives
medians and the ratio A/B (above 1: B is faster).

    python3 bench/backends.py --a OLD_TRAWL --b NEW_TRAWL [--runs N]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "backends")


def make_data():
    os.makedirs(DATA, exist_ok=True)
    rnd = os.path.join(DATA, "random-1g.bin")
    if not os.path.exists(rnd):
        with open(rnd + ".tmp", "wb") as f:
            for _ in range(1024):
                f.write(os.urandom(1 << 20))
        os.rename(rnd + ".tmp", rnd)
    text = os.path.join(DATA, "text-256m.bin")
    if not os.path.exists(text):
        rng = random.Random(42)
        words = [
            "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
            for _ in range(5000)
        ]
        with open(text + ".tmp", "wb") as f:
            for _ in range(256):
                f.write(
                    " ".join(rng.choice(words) for _ in range(200_000)).encode()[: 1 << 20]
                )
        os.rename(text + ".tmp", text)
    return rnd, text


def run_once(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr.decode(errors='replace')}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the first trawl binary")
    ap.add_argument("--b", required=True, help="the second trawl binary")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    rnd, text = make_data()
    cases = {
        "md5 (1 GiB)": ["-d", "md5", "--no-reduce", rnd],
        "sha512 (1 GiB)": ["-d", "sha512", "--no-reduce", rnd],
        "gzip:6 (256 MiB)": ["-d", "none", "--compress", "gzip:6", text],
    }
    print(f"A = {a.a}\nB = {a.b}\n{a.runs} interleaved runs per case after a warm-up; medians")
    print(f"{'case':<18} {'A s':>8} {'B s':>8} {'A/B':>7}")
    for name, args in cases.items():
        cmds = {k: [b, "scan", "-q", *args] for k, b in (("a", a.a), ("b", a.b))}
        for c in cmds.values():
            run_once(c)
        times = {"a": [], "b": []}
        for _ in range(a.runs):
            for k, c in cmds.items():
                times[k].append(run_once(c))
        ta, tb = statistics.median(times["a"]), statistics.median(times["b"])
        print(f"{name:<18} {ta:>8.3f} {tb:>8.3f} {ta / tb:>6.2f}x")


if __name__ == "__main__":
    main()
