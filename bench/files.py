#!/usr/bin/env python3
"""bench/files: the cost per small file, trawl against the simplest peers, in one run.

Generates (once, under bench/data/) a tree of 200,000 files of 1-200 bytes in 200 directories,
then runs, interleaved round by round, `trawl scan -d xxh3 --no-reduce`, `trawl scan -d sha256
--no-reduce` and the default scan, each also with its manifest on stdout (`-m ALGsum:-`, like the
peers' output), against `find -print0 | xargs -0 -P2 xxhsum -H3`, `xargs -P2 sha256sum` and
`rhash --sha256 -r` (every output sent to /dev/null); prints medians and ratios (peer time over trawl's: above 1,
trawl is faster), then the system calls per file of trawl's xxh3 scan on 20,000 of those files
(`strace -c -f`) and the peak RSS of each command (wait4).

    python3 bench/files.py [--runs N] [--trawl PATH] [--baseline PATH] [--files N]
                           [--slope 10000,1000000]

With --baseline, every trawl row also runs that build in the same rounds, and base / trawl is
printed for each.

`--slope` also scans trees of those sizes (files of 0-4 KiB in 1,000 directories, made once)
with `-d xxh3 --no-reduce -m sha256sum:F`, and prints the time per file and the peak RSS of
each, and the bytes of RSS per file between the smallest and the largest (where the disk lacks
the inodes for a size, it says so and skips it).

`--scale` measures memory at scale (each tree made once; skipped with a message where the disk
lacks the inodes): the peak RSS of the default scan with `-m sha256sum:F --json J` at 10^4 and
10^6 files of 0-4 KiB (1,000 directories) and at 5x10^6 empty files (1,000 directories), with
the slope in bytes per file; `verify` of the 5x10^6-line manifest that scan wrote; an audit
registration of each tree and a re-audit of the 10^6 files, with the catalog's bytes per file;
`bag create --out --link` (hard links) and `bag validate` of each tree; and a scan of
one directory holding 10^6 empty files. `--scale-sizes` changes the three tree sizes.
"""

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_tree(path, n):
    stamp = os.path.join(path, ".complete")
    if os.path.exists(stamp):
        return
    shutil.rmtree(path, ignore_errors=True)
    rng = random.Random(20261124)
    for i in range(n):
        d = os.path.join(path, f"d{i % 200:03d}")
        if i < 200:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:07d}"), "wb") as f:
            f.write(rng.randbytes(rng.randint(1, 200)))
    open(stamp, "w").close()


def make_once(path, n, fill):
    """Makes a tree of n files at `path` with fill() unless a finished one is there; False (with
    a message) where the disk lacks the inodes."""
    stamp = os.path.join(path, ".complete")
    if os.path.exists(stamp):
        return True
    st = os.statvfs(os.path.dirname(path))
    if st.f_favail < n + 10_000:
        print(f"SKIPPED: {n:,} files: the disk has {st.f_favail:,} free inodes")
        return False
    shutil.rmtree(path, ignore_errors=True)
    fill()
    open(stamp, "w").close()
    return True


def make_slope_tree(path, n):
    """n files of 0-4 KiB in 1,000 directories."""
    def fill():
        rng = random.Random(n)
        for d in range(1000):
            os.makedirs(os.path.join(path, f"d{d:03d}"), exist_ok=True)
        for i in range(n):
            with open(os.path.join(path, f"d{i % 1000:03d}", f"f{i:08d}"), "wb") as f:
                f.write(rng.randbytes(rng.randint(0, 4096)))
    return make_once(path, n, fill)


def make_empty_tree(path, n, dirs):
    """n empty files in `dirs` directories (os.mknod: one system call a file)."""
    def fill():
        for d in range(dirs):
            os.makedirs(os.path.join(path, f"d{d:04d}"), exist_ok=True)
        for i in range(n):
            os.mknod(os.path.join(path, f"d{i % dirs:04d}", f"f{i:08d}"))
    return make_once(path, n, fill)


def scale(T, sizes):
    """Peak RSS of scan, verify and audit as the file count grows."""
    small, mid, big = sizes
    trees = []
    for n, kind in [(small, "0-4 KiB"), (mid, "0-4 KiB"), (big, "empty")]:
        if kind == "empty":
            t = os.path.join(HERE, "data", f"empty{n}")
            ok = make_empty_tree(t, n, 1000)
        else:
            t = os.path.join(HERE, "data", f"slope{n}")
            ok = make_slope_tree(t, n)
        if ok:
            trees.append((n, kind, t))
    print("\nscale: peak RSS (wait4) of each command, one run after a warm-up")
    print(f"| {'command':<52} | {'files':>10} | {'seconds':>8} | {'us/file':>8} | {'peak RSS':>9} |")
    print(f"|{'-' * 54}|{'-' * 12}|{'-' * 10}|{'-' * 10}|{'-' * 11}|")

    def row(name, n, took, rss):
        print(f"| {name:<52} | {n:>10,} | {took:8.2f} | {took / n * 1e6:8.2f} | "
              f"{rss / 2**20:5.0f} MiB |", flush=True)

    scans = []
    with tempfile.TemporaryDirectory(dir=os.path.join(HERE, "data")) as tmp:
        for n, kind, t in trees:
            m, j = os.path.join(tmp, f"m{n}"), os.path.join(tmp, f"j{n}")
            cmd = [T, "scan", t, "-q", "-m", f"sha256sum:{m}", "--json", j]
            run_once(cmd, False)
            took, rss = run_once(cmd, False)
            scans.append((n, took, rss))
            row(f"scan -m sha256sum:F --json J ({kind})", n, took, rss)
        for n, kind, t in [x for x in trees if x[0] == mid]:
            # The fingerprint index of 10^6 distinct files is most of that tree's RSS: with
            # one budget for records and fingerprints it stays within it.
            m, j = os.path.join(tmp, f"m{n}"), os.path.join(tmp, f"j{n}")
            cmd = [T, "scan", t, "-q", "-m", f"sha256sum:{m}", "--json", j, "--memory", "64M",
                   "--temp-dir", tmp]
            took, rss = run_once(cmd, False)
            row(f"scan -m sha256sum:F --json J --memory 64M ({kind})", n, took, rss)
        if len(scans) >= 2:
            (n0, s0, r0), (n1, s1, r1) = scans[0], scans[-1]
            print(f"scan RSS slope {n0:,} -> {n1:,} files: {(r1 - r0) / (n1 - n0):.1f} bytes per "
                  f"file (goal < 4); {(r1 - r0) / 2**20:.0f} MiB apart (goal within 64)")
            for (na, sa, _), (nb, sb, _) in zip(scans, scans[1:2]):
                print(f"time per file {nb:,} vs {na:,} files (same kind of tree): "
                      f"{sb / nb * 1e6:.2f} vs {sa / na * 1e6:.2f} us")
        for n, kind, t in [trees[0], trees[-1]] if len(trees) > 1 else trees:
            m = os.path.join(tmp, f"m{n}")
            cmd = [T, "verify", m, "--root", t, "-q"]
            took, rss = run_once(cmd, False)
            row(f"verify of the {n:,}-line manifest ({kind})", n, took, rss)
            if kind == "empty":
                took, rss = run_once(cmd + ["--strict"], False)
                row(f"verify --strict of the {n:,}-line manifest ({kind})", n, took, rss)
        for n, kind, t in trees:
            cat = os.path.join(tmp, f"catalog{n}.db")
            took, rss = run_once([T, "audit", t, "--catalog", cat, "-q", "--temp-dir", tmp], False)
            row(f"audit (registration, {kind})", n, took, rss)
            if n == mid:
                took, rss = run_once([T, "audit", t, "--catalog", cat, "-q", "--temp-dir", tmp],
                                     False)
                row(f"audit (re-audit, nothing changed, {kind})", n, took, rss)
            size = sum(os.path.getsize(cat + x) for x in ["", "-wal", "-shm"]
                       if os.path.exists(cat + x))
            print(f"catalog of {n:,} files: {size / n:.0f} bytes per file ({size / 2**20:.0f} MiB;"
                  f" goal <= 250 at 10^6)", flush=True)
            os.remove(cat)
        for n, kind, t in trees:
            # Hard links into a new bag (`--link`, as the figures were measured before copying
            # became the default): the source tree is left as it is.
            bag = os.path.join(tmp, f"bag{n}")
            took, rss = run_once([T, "bag", "create", t, "--out", bag, "--link", "-q",
                                  "--temp-dir", tmp], False)
            row(f"bag create --out ({kind})", n, took, rss)
            took, rss = run_once([T, "bag", "validate", bag, "-q", "--temp-dir", tmp], False)
            row(f"bag validate ({kind})", n, took, rss)
            shutil.rmtree(bag)
    flat = os.path.join(HERE, "data", f"onedir{mid}")
    if make_empty_tree(flat, mid, 1):
        cmd = [T, "scan", flat, "-q", "-d", "xxh3", "--no-reduce"]
        run_once(cmd, False)
        took, rss = run_once(cmd, False)
        row("scan -d xxh3 --no-reduce (one directory)", mid, took, rss)


def run_once(cmd, shell):
    start = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {cmd}")
    return took, ru.ru_maxrss * 1024


def syscalls_per_file(trawl, tree, n):
    if not shutil.which("strace"):
        return None
    with tempfile.TemporaryDirectory() as t:
        out = os.path.join(t, "strace.txt")
        subprocess.run(["strace", "-c", "-f", "-o", out, trawl, "scan", tree, "-q", "--no-reduce",
                        "-d", "xxh3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=True)
        calls = 0
        for line in open(out):
            parts = line.split()
            if len(parts) >= 5 and parts[0][0].isdigit() and parts[3].isdigit() and parts[-1] != "total":
                calls += int(parts[3])
        return calls / n


def peers(a, T):
    tree = os.path.join(HERE, "data", f"files{a.files}")
    make_tree(tree, a.files)
    small = os.path.join(HERE, "data", "files20000")
    make_tree(small, 20_000)
    q = f"'{tree}'"
    # The peers write a digest line per file to stdout (sent to /dev/null). trawl is run both
    # ways: as the goals name it (no output: it computes every digest and keeps nothing per
    # file) and like for like (`-m ALGsum:-`, its manifest on stdout, in path order).
    cases = [
        ("trawl -d xxh3 --no-reduce", [T, "scan", tree, "-q", "-d", "xxh3", "--no-reduce"], False),
        ("  ... -m xxh3sum:-", [T, "scan", tree, "-q", "-d", "xxh3", "--no-reduce",
                                "-m", "xxh3sum:-"], False),
        ("xargs -P2 xxhsum -H3", f"find {q} -type f -print0 | xargs -0 -P2 xxhsum -H3", True),
        ("trawl -d sha256 --no-reduce", [T, "scan", tree, "-q", "--no-reduce"], False),
        ("  ... -m sha256sum:-", [T, "scan", tree, "-q", "--no-reduce", "-m", "sha256sum:-"],
         False),
        ("xargs -P2 sha256sum", f"find {q} -type f -print0 | xargs -0 -P2 sha256sum", True),
        ("rhash --sha256 -r", ["rhash", "--sha256", "-r", tree] if shutil.which("rhash") else None, False),
        ("trawl (default scan)", [T, "scan", tree, "-q"], False),
        ("  ... -m sha256sum:- ", [T, "scan", tree, "-q", "-m", "sha256sum:-"], False),
    ]
    cases = [c for c in cases if c[1] is not None]
    if a.baseline:
        # The build before a change, in the same rounds: every trawl row twice.
        twins = []
        for name, cmd, shell in cases:
            twins.append((name, cmd, shell))
            if isinstance(cmd, list) and cmd[0] == T:
                twins.append(("base " + name, [a.baseline] + cmd[1:], shell))
        cases = twins
    print(f"{a.files:,} files of 1-200 bytes in 200 directories; {os.cpu_count()} CPUs; "
          f"median of {a.runs}, rounds interleaved")
    for _, cmd, shell in cases:
        run_once(cmd, shell)  # warm-up: page cache, dentries
    times = {name: [] for name, _, _ in cases}
    rss = {name: 0 for name, _, _ in cases}
    for _ in range(a.runs):
        for name, cmd, shell in cases:
            t, r = run_once(cmd, shell)
            times[name].append(t)
            rss[name] = max(rss[name], r)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n| {'command':<30} | {'median s':>9} | {'us/file':>8} | {'peak RSS':>9} |")
    print(f"|{'-' * 32}|{'-' * 11}|{'-' * 10}|{'-' * 11}|")
    for name, _, _ in cases:
        print(f"| {name:<30} | {med[name]:9.3f} | {med[name] / a.files * 1e6:8.2f} | "
              f"{rss[name] / 2**20:5.0f} MiB |")
    print()
    pairs = [
        ("trawl -d xxh3 --no-reduce", "  ... -m xxh3sum:-", "xargs -P2 xxhsum -H3", 1.2),
        ("trawl -d sha256 --no-reduce", "  ... -m sha256sum:-", "xargs -P2 sha256sum", 1.5),
        ("trawl -d sha256 --no-reduce", "  ... -m sha256sum:-", "rhash --sha256 -r", 1.5),
        ("trawl (default scan)", "  ... -m sha256sum:- ", "xargs -P2 xxhsum -H3", 1.0),
    ]
    if a.baseline:
        print(f"base {a.baseline}: base / trawl (above 1: this build is faster)")
        for name in [n for n, _, _ in cases if n.startswith("base ")]:
            mine = name[5:]
            print(f"  {mine.strip():<30} {med[name] / med[mine]:.2f}x")
    for ours, with_m, theirs, goal in pairs:
        if theirs in med:
            print(f"{ours} vs {theirs}: {med[theirs] / med[ours]:.2f}x (goal {goal}x); "
                  f"with its manifest: {med[theirs] / med[with_m]:.2f}x")

    per = syscalls_per_file(T, small, 20_000)
    if per is not None:
        print(f"system calls per file (strace -c -f, 20,000 files, -d xxh3 --no-reduce): {per:.1f}")
    else:
        print("system calls per file: SKIPPED (strace is not installed)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--files", type=int, default=200_000)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--slope", help="tree sizes for the memory and time slope, e.g. 10000,1000000")
    ap.add_argument("--scale", action="store_true", help="memory of scan, verify and audit at scale")
    ap.add_argument("--scale-sizes", default="10000,1000000,5000000",
                    help="the three tree sizes of --scale")
    ap.add_argument("--skip-peers", action="store_true", help="only the --slope/--scale parts")
    ap.add_argument("--baseline", help="another trawl binary: every trawl row also runs it, in the same rounds")
    a = ap.parse_args()
    if not os.path.exists(a.trawl):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    T = a.trawl
    if not a.skip_peers:
        peers(a, T)
    if a.scale:
        scale(T, [int(x) for x in a.scale_sizes.split(",")])
    if a.slope:
        print("\nslope: scan -d xxh3 --no-reduce -m sha256sum:F (one warm-up, median of 3)")
        got = []
        for n in [int(x) for x in a.slope.split(",")]:
            t = os.path.join(HERE, "data", f"slope{n}")
            if not make_slope_tree(t, n):
                continue
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [T, "scan", t, "-q", "-d", "xxh3", "--no-reduce", "-m",
                       f"sha256sum:{os.path.join(tmp, 'm')}"]
                run_once(cmd, False)
                runs = [run_once(cmd, False) for _ in range(3)]
            sec = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            got.append((n, sec, rss))
            print(f"  {n:>10,} files: {sec:7.2f} s, {sec / n * 1e6:6.2f} us/file, "
                  f"peak RSS {rss / 2**20:6.0f} MiB")
        if len(got) >= 2:
            (n0, _, r0), (n1, _, r1) = got[0], got[-1]
            print(f"  RSS slope: {(r1 - r0) / (n1 - n0):.0f} bytes per file (goal < 4)")


if __name__ == "__main__":
    main()
