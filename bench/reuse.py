#!/usr/bin/env python3
"""bench/reuse: a re-scan of an unchanged tree with `--reuse CATALOG` against a full scan of it.

Data: FILES small files (default 100,000 of 1-4 KiB, random bytes, 100 a directory) made under
DIR (default bench/data/reuse), registered once in a catalog by `trawl audit` (which starts
more than two seconds after the files were written, so that every row may be taken).

  full:   trawl scan TREE -q --no-reduce -m sha256sum:full.txt
  reuse:  trawl scan TREE -q --reuse CAT -m sha256sum:reused.txt
  floor:  find TREE -type f -printf '%s %T@ %C@ %i %p\n'  (to /dev/null)

The floor is what any re-scan that trusts no file unseen must do at least: visit every
directory entry and stat it (find does no more), so full / floor bounds the ratio any cache
can reach on that machine. Timed RUNS times each (default 5), interleaved in a rotating order,
after a warm-up of each (page cache warm: the full scan's best case); the two manifests must be
byte for byte the same. Prints the medians, the CPU time (user + system), the peak RSS and the
ratios (>1: --reuse is faster), with the machine, date and commit. With --evict the tree's file pages are dropped from the page cache
before every run (POSIX_FADV_DONTNEED on each file: its data must be read again from the
device; its inode and directory entry stay cached; no other file is touched); with --cold (root
only) the whole page cache is dropped instead (which slows everything else on the machine).

    python3 bench/reuse.py [--files N] [--runs N] [--trawl PATH] [--dir DIR] [--evict|--cold]
"""
import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def evict(tree):
    """Drops the tree's file pages from the page cache (the data only)."""
    for d, _, names in os.walk(tree):
        for n in names:
            fd = os.open(os.path.join(d, n), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)


def run_once(cmd, cold, tree=None, out=subprocess.DEVNULL):
    if tree:
        evict(tree)
    if cold:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"command failed ({code}): {' '.join(cmd)}\n{err}")
    return dt, ru.ru_maxrss * 1024, ru.ru_utime + ru.ru_stime


def make_tree(tree, files):
    """FILES files of 1-4 KiB in directories of 100; made once (a marker says it is whole)."""
    marker = os.path.join(tree, ".made-%d" % files)
    if os.path.exists(marker):
        return False
    shutil.rmtree(tree, ignore_errors=True)
    rng = random.Random(59)
    for i in range(files):
        d = os.path.join(tree, "d%04d" % (i // 100))
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, "f%03d" % (i % 100)), "wb") as f:
            f.write(rng.randbytes(rng.randint(1024, 4096)))
    open(marker, "w").close()
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target/release/trawl"))
    ap.add_argument("--dir", default=os.path.join(HERE, "data", "reuse"))
    ap.add_argument("--cold", action="store_true", help="drop the page cache before each run")
    ap.add_argument("--evict", action="store_true", help="drop the tree's pages before each run")
    a = ap.parse_args()
    tree, cat = os.path.join(a.dir, "tree"), os.path.join(a.dir, "cat.db")
    out = os.path.join(a.dir, "out")
    os.makedirs(out, exist_ok=True)
    if make_tree(tree, a.files) or not os.path.exists(cat):
        for p in (cat, cat + "-wal", cat + "-shm"):
            if os.path.exists(p):
                os.remove(p)
        time.sleep(3.1)
        t0 = time.perf_counter()
        subprocess.run([a.trawl, "audit", tree, "-c", cat, "-q"], check=True)
        print(f"registered {a.files} files in {time.perf_counter() - t0:.2f} s")
    full = [a.trawl, "scan", tree, "-q", "--no-reduce", "-m",
            "sha256sum:" + os.path.join(out, "full.txt")]
    reuse = [a.trawl, "scan", tree, "-q", "--reuse", cat, "-m",
             "sha256sum:" + os.path.join(out, "reused.txt")]
    floor = ["find", tree, "-type", "f", "-printf", "%s %T@ %C@ %i %p\n"]
    ev = tree if a.evict else None
    cmds = {"full": full, "reuse": reuse, "floor": floor}
    times = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    rss = {k: 0 for k in cmds}
    for k in cmds:
        run_once(cmds[k], a.cold, ev)
    order = list(cmds)
    for i in range(a.runs):
        for k in order[i % 3:] + order[:i % 3]:
            dt, r, c = run_once(cmds[k], a.cold, ev)
            times[k].append(dt)
            cpu[k].append(c)
            rss[k] = max(rss[k], r)
    with open(os.path.join(out, "full.txt"), "rb") as f1, open(
        os.path.join(out, "reused.txt"), "rb"
    ) as f2:
        if f1.read() != f2.read():
            sys.exit("the manifests differ")
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    cpus = os.cpu_count()
    print(f"{platform.node()} ({cpus} CPUs, {platform.release()}), "
          f"{time.strftime('%Y-%m-%d')}, commit {commit}; {a.files} files, {a.runs} runs, "
          f"page cache {'dropped' if a.cold else 'tree evicted' if a.evict else 'warm'}; "
          f"manifests identical")
    med = {k: statistics.median(v) for k, v in times.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"{'':8} {'median s':>9} {'CPU s':>7} {'files/s':>10} {'peak RSS':>10}")
    for k in cmds:
        print(f"{k:8} {med[k]:9.3f} {mcpu[k]:7.3f} {a.files / med[k]:10.0f} "
              f"{rss[k] / 2**20:7.1f} MiB")
    print(f"ratio (full / reuse): {med['full'] / med['reuse']:.1f}x wall, "
          f"{mcpu['full'] / mcpu['reuse']:.1f}x CPU")
    print(f"bound (full / floor): {med['full'] / med['floor']:.1f}x wall; "
          f"reuse / floor {med['reuse'] / med['floor']:.2f}")


if __name__ == "__main__":
    main()
