#!/usr/bin/env python3
"""bench/cold: trawl and its peers reading from a real disk with the page cache dropped before
every command, in one interleaved run (medians and ratios).

Data (made once under DIR by gen_corpus.py, scaled by --scale): one 3 GiB file, a 1 GiB mixed
tree, 20,000 files of 1-64 KiB, 200,000 files of 0-1 KiB. DIR must be on a disk, never tmpfs
(refused: nothing there is ever cold), and dropping the page cache needs root (without it the
bench says so and stops).

Rows per data set, each run --runs times, rounds interleaved, `sync; echo 3 >
/proc/sys/vm/drop_caches` before every command:
  fio (direct, io_uring, 1 MiB reads, depth 8 and 32; the one file only, for reference),
  cat, find | xargs -0 -P16 -n64 cat, find | xargs -0 -P16 -n64 xxhsum -H3, b3sum --no-mmap,
  trawl scan (default; and warm, after the cold rounds: run once untimed first, no drop),
  -d xxh3 --no-reduce (the peers' work), -d sha256 --no-reduce -m
  sha256sum:/dev/null, and -d xxh3 --no-reduce at --io-depth 1, 4, 16, 64 (the default's reads
  in flight set beside fixed ones).
A tool that is not installed is left out, saying so. Each row: median seconds, MiB/s, and
fastest peer / this (above 1: this row is faster than the fastest peer).

With --baseline PATH (another build of trawl, e.g. from the commit before), its default scan and
its `-d xxh3 --no-reduce` run in the same rounds, and each is printed with baseline / this build.

    sudo python3 bench/cold.py DIR [--trawl PATH] [--runs N] [--scale F] [--only big,mixed,small,tiny]
                               [--baseline PATH]
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def fs_type(path):
    """The filesystem type of the mount holding `path` (from /proc/mounts)."""
    path = os.path.realpath(path)
    best, kind = "", "?"
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            mnt, typ = parts[1], parts[2]
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                best, kind = mnt, typ
    return kind


def refuse_unless_cold(path):
    """Stops, saying why, where `path` can never be read cold (tmpfs, ramfs) or the page cache
    cannot be dropped (not root)."""
    kind = fs_type(path)
    if kind in ("tmpfs", "ramfs"):
        sys.exit(f"{path} is on {kind}: its files are in memory, never cold; name a directory on a disk")
    if os.geteuid() != 0:
        sys.exit("dropping the page cache (echo 3 > /proc/sys/vm/drop_caches) needs root: run as root")


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def du_bytes(tree):
    total = 0
    for dirpath, _, names in os.walk(tree):
        for n in names:
            if n != ".corpus-done":
                total += os.lstat(os.path.join(dirpath, n)).st_size
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="data sizes times this")
    ap.add_argument("--only", default="big,mixed,small,tiny")
    ap.add_argument("--baseline", help="another trawl binary, run beside this one")
    a = ap.parse_args()
    refuse_unless_cold(a.dir)
    os.makedirs(a.dir, exist_ok=True)
    gen = [sys.executable, os.path.join(HERE, "gen_corpus.py")]
    sets = {
        "big": ("big", int(3072 * a.scale)),
        "mixed": ("mixed", int(1024 * a.scale)),
        "small": ("small", int(20000 * a.scale)),
        "tiny": ("tiny", int(200000 * a.scale)),
    }
    only = a.only.split(",")
    trees = {}
    for name in only:
        kind_, n = sets[name]
        tree = os.path.join(a.dir, f"{name}-{n}")
        subprocess.run(gen + [kind_, tree, str(n)], check=True, stdout=subprocess.DEVNULL)
        trees[name] = tree
    have = {t: shutil.which(t) for t in ("fio", "xxhsum", "b3sum")}
    for t, p in have.items():
        if not p:
            print(f"{t} is not installed: its rows are left out")
    T = a.trawl
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"bench/cold: {os.cpu_count()} CPUs, {a.dir} on {fs_type(a.dir)}, commit {rev}, "
          f"page cache dropped before every command, {a.runs} interleaved rounds, medians")
    for name, tree in trees.items():
        files = tree if name != "big" else os.path.join(tree, "big.bin")
        find = f"find {tree} -type f ! -name .corpus-done -print0"
        peers = {"cat": f"{find} | xargs -0 cat > /dev/null",
                 "xargs -P16 cat": f"{find} | xargs -0 -P16 -n64 cat > /dev/null"}
        if have["xxhsum"]:
            peers["xargs -P16 xxhsum -H3"] = f"{find} | xargs -0 -P16 -n64 xxhsum -H3 > /dev/null"
        if have["b3sum"]:
            peers["b3sum --no-mmap"] = f"{find} | xargs -0 -n1024 b3sum --no-mmap > /dev/null"
        if have["fio"] and name == "big":
            for depth in (8, 32):
                peers[f"fio direct io_uring 1M d{depth}"] = (
                    f"fio --name=r --filename={files} --rw=read --bs=1M --direct=1 "
                    f"--ioengine=io_uring --iodepth={depth} --output=/dev/null")
        mine = {"trawl scan": f"{T} scan {tree} -q",
                "trawl -d xxh3 --no-reduce": f"{T} scan {tree} -q -d xxh3 --no-reduce",
                "trawl -m sha256sum": f"{T} scan {tree} -q -d sha256 --no-reduce -m sha256sum:/dev/null"}
        for d in (1, 4, 16, 64):
            mine[f"trawl -d xxh3 --no-reduce --io-depth {d}"] = (
                f"{T} scan {tree} -q -d xxh3 --no-reduce --io-depth {d}")
        base = {}
        if a.baseline:
            base = {"baseline scan": f"{a.baseline} scan {tree} -q",
                    "baseline -d xxh3 --no-reduce": f"{a.baseline} scan {tree} -q -d xxh3 --no-reduce"}
        # Where a command falls in a round matters on a virtual disk (what the host's cache
        # holds, and what memory the command before gave back to the host): each round is in
        # another order (shuffled, seeded by the round), so that no command always follows the
        # same one.
        cmds = {**peers, **mine, **base}
        times = {k: [] for k in cmds}
        items = list(cmds.items())
        for r in range(a.runs):
            order = list(items)
            random.Random(r).shuffle(order)
            for k, c in order:
                drop_caches()
                t = time.perf_counter()
                r = subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                times[k].append(time.perf_counter() - t)
                if r.returncode != 0:
                    sys.exit(f"failed ({r.returncode}): {c}\n{r.stderr.decode(errors='replace')[-2000:]}")
        # Warm, apart from the cold rounds (dropping a page cache that holds the whole tree
        # slowed the command after it): read once untimed, then timed with nothing dropped.
        warm = f"{T} scan {tree} -q"
        subprocess.run(warm, shell=True, stdout=subprocess.DEVNULL, check=True)
        times["trawl scan, warm"] = []
        for _ in range(a.runs):
            t = time.perf_counter()
            subprocess.run(warm, shell=True, stdout=subprocess.DEVNULL, check=True)
            times["trawl scan, warm"].append(time.perf_counter() - t)
        mine["trawl scan, warm"] = warm
        drop_caches()
        size = du_bytes(tree)
        med = {k: statistics.median(v) for k, v in times.items()}
        best_peer = min((v for k, v in med.items() if k in peers and not k.startswith("fio")),
                        default=None)
        print(f"\n{name}: {size / 2**20:,.0f} MiB in {tree}")
        print(f"  {'command':<36} {'median s':>9} {'MiB/s':>8} {'peer/this':>10}")
        for k, m in med.items():
            ratio = f"{best_peer / m:>9.2f}x" if best_peer and k in mine else ""
            print(f"  {k:<36} {m:>9.2f} {size / 2**20 / m:>8.0f} {ratio:>10}")
        for k in base:
            this = k.replace("baseline scan", "trawl scan").replace("baseline", "trawl")
            print(f"  {k} / {this}: {med[k] / med[this]:.2f}x")
        if best_peer:
            floor = max(med["trawl scan, warm"], best_peer)
            print(f"  trawl scan cold / max(warm, fastest peer): {med['trawl scan'] / floor:.2f}x (goal: 1.1x at most)")
        fixed = [v for k, v in med.items() if "--io-depth" in k]
        if fixed:
            print(f"  best fixed --io-depth / default depth: {min(fixed) / med['trawl -d xxh3 --no-reduce']:.2f}x")


if __name__ == "__main__":
    main()
