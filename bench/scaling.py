#!/usr/bin/env python3
"""bench/scaling: how `trawl scan` grows with threads, against peers that use every core, in one run.

Data (made once, by one gen_corpus.py process per part, in parallel, under --data; default
/dev/shm/trawl-scaling where /dev/shm exists, so the disk is out of the picture):
  mixed  --mib MiB of gen_corpus.py `mixed` in --parts parts (seeds differ, so parts do not
         duplicate one another beyond what each part holds);
  small  --small files of 1-64 KiB (gen_corpus.py `small`), in parts;
  tiny   --tiny files of 0-1 KiB (gen_corpus.py `tiny`), in parts.

Rows, each timed --runs times with the rounds interleaved (every command once per round):
  on mixed: the default scan, sha256 only (`-d sha256 --no-reduce`) and reduction only
  (`-d none --dedup 4k,...,128k --cdc 16k --compress lz4,zstd:1`) at `-j` 1, 2, 4, ... up to
  --max-j (default: the CPU count), and `find | xargs -0 -P N sha256sum` at N = --max-j;
  on small: sha256 only at -j1 and -j N, and xargs sha256sum at -P N;
  on tiny: the default scan at -j1 and -j N, and `xargs -P N xxhsum -H3`.
For each: the median wall time, the cores busy over the run ((user + sys) / wall, from the
children's rusage of that run), the speed-up over the same work at -j1, and for peers the ratio
peer / trawl at the same parallelism (above 1: trawl is faster). Every trawl run's exit code
is checked (0); a peer's output goes to /dev/null.

With --baseline PATH, every trawl row also runs that build, in the same rounds, and its row
gives base / trawl (above 1: this build is faster). With --js 1,2,16 the thread counts are
those (on a machine with fewer cores, -j16 shows what oversubscription costs). After the table,
each trawl row is run once more with TRAWL_CONTENTION=1, and the counts it prints (batches
handed to key partitions, those that found their partition busy, slots found busy) are listed.

With --rss, the peak RSS (wait4) of the default scan on trees of --tiny/10 and --tiny tiny
files, at each -j, for this build and the baseline, and how much it grows between them.

    python3 bench/scaling.py [--trawl PATH] [--baseline PATH] [--runs N] [--max-j N]
                             [--js LIST] [--mib N] [--small N] [--tiny N] [--parts N]
                             [--data DIR] [--only mixed,small,tiny] [--rss] [--no-warmup]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def generate(data, kind, total, parts, seed0, name=None):
    """`total` (MiB or files) of gen_corpus.py `kind` under data/NAME (default: the kind), in
    `parts` parts made by as many processes at once; returns the tree."""
    tree = os.path.join(data, name or kind)
    done = os.path.join(tree, ".scaling-done")
    tag = f"{kind} {total} {parts} {seed0}"
    if os.path.exists(done) and open(done).read() == tag:
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    gen = os.path.join(HERE, "gen_corpus.py")
    procs = []
    for k in range(parts):
        share = total // parts + (1 if k < total % parts else 0)
        part = os.path.join(tree, f"part{k:02d}")
        args = [sys.executable, gen, kind, part, str(share), str(seed0 + k)]
        procs.append(subprocess.Popen(args))
    for p in procs:
        if p.wait() != 0:
            sys.exit(f"gen_corpus.py {kind} failed")
    with open(done, "w") as f:
        f.write(tag)
    return tree


def timed(cmd):
    """One run of a shell command: (wall seconds, cores busy)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {cmd}\n{r.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu / wall


def peak_rss(cmd):
    """Peak RSS (bytes) of one run of a command (an argument list), from wait4."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {cmd}")
    return ru.ru_maxrss * 1024


def rss_growth(a, T):
    """The default scan's peak RSS on --tiny/10 and --tiny tiny files (trees of their own,
    made in parts) at each -j, and what it grows between them; the median of --runs runs."""
    small = generate(a.data, "tiny", a.tiny // 10, a.parts, 400, "tiny-tenth")
    large = generate(a.data, "tiny", a.tiny, a.parts, 500, "tiny-all")
    builds = [("trawl", T)] + ([("base", a.baseline)] if a.baseline else [])
    print(f"\npeak RSS of the default scan, {a.tiny // 10:,} and {a.tiny:,} files of 0-1 KiB "
          f"(median of {a.runs}):")
    print(f"{'build':<6} {'-j':>4} {'small MiB':>10} {'large MiB':>10} {'growth MiB':>11}")
    for j in js(a.max_j, a.js):
        for name, b in builds:
            got = []
            for tree in (small, large):
                got.append(statistics.median(
                    peak_rss([b, "scan", tree, "-q", "-j", str(j)]) for _ in range(a.runs)))
            print(f"{name:<6} {j:>4} {got[0] / 2**20:>10.1f} {got[1] / 2**20:>10.1f} "
                  f"{(got[1] - got[0]) / 2**20:>11.1f}")


def js(max_j, given=None):
    if given:
        return [int(x) for x in given.split(",")]
    out, j = [], 1
    while j < max_j:
        out.append(j)
        j *= 2
    return out + [max_j]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-j", type=int, default=os.cpu_count())
    ap.add_argument("--mib", type=int, default=8192, help="size of the mixed tree")
    ap.add_argument("--small", type=int, default=40_000, help="files of 1-64 KiB")
    ap.add_argument("--tiny", type=int, default=200_000, help="files of 0-1 KiB")
    ap.add_argument("--parts", type=int, default=os.cpu_count(), help="generator processes")
    default_data = "/dev/shm/trawl-scaling" if os.path.isdir("/dev/shm") else os.path.join(HERE, "data", "scaling")
    ap.add_argument("--data", default=default_data)
    ap.add_argument("--only", default="mixed,small,tiny")
    ap.add_argument("--baseline", help="another trawl binary, run beside this one in every trawl row")
    ap.add_argument("--js", help="thread counts for the trawl rows (default 1, 2, 4, ... --max-j)")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no warm-up round (data on tmpfs has no cache to warm)")
    ap.add_argument("--rss", action="store_true",
                    help="also the peak RSS of the default scan on --tiny/10 and --tiny files")
    a = ap.parse_args()
    only = set(a.only.split(","))
    T, N = a.trawl, a.max_j
    for tool in ("sha256sum", "find", "xargs"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (apt install coreutils findutils)")
    if not shutil.which("xxhsum"):
        print("xxhsum is not installed (apt install xxhash): the tiny files' peer row is left out")
    os.makedirs(a.data, exist_ok=True)
    cases = []  # (section, label, work, j, command)
    if "mixed" in only:
        tree = generate(a.data, "mixed", a.mib, a.parts, 100)
        works = {
            "default scan": f"{T} scan {tree} -q",
            "sha256 only": f"{T} scan {tree} -q -d sha256 --no-reduce",
            "reduction only": f"{T} scan {tree} -q -d none --dedup 4k,8k,16k,32k,64k,128k "
                              "--cdc 16k --compress lz4,zstd:1",
        }
        for work, cmd in works.items():
            for j in js(N, a.js):
                cases.append(("mixed", f"trawl {work} -j{j}", work, j, f"{cmd} -j {j}"))
        cases.append(("mixed", f"xargs -P{N} sha256sum", "sha256 only", N,
                      f"find {tree} -type f -print0 | xargs -0 -P {N} -n 64 sha256sum > /dev/null"))
    if "small" in only:
        tree = generate(a.data, "small", a.small, a.parts, 200)
        cmd = f"{T} scan {tree} -q -d sha256 --no-reduce"
        for j in (js(N, a.js) if a.js else sorted({1, N})):
            cases.append(("small", f"trawl sha256 only -j{j}", "sha256 only", j, f"{cmd} -j {j}"))
        cases.append(("small", f"xargs -P{N} sha256sum", "sha256 only", N,
                      f"find {tree} -type f -print0 | xargs -0 -P {N} -n 256 sha256sum > /dev/null"))
    if "tiny" in only:
        tree = generate(a.data, "tiny", a.tiny, a.parts, 300)
        cmd = f"{T} scan {tree} -q"
        for j in (js(N, a.js) if a.js else sorted({1, N})):
            cases.append(("tiny", f"trawl default scan -j{j}", "default scan", j, f"{cmd} -j {j}"))
        if shutil.which("xxhsum"):
            cases.append(("tiny", f"xargs -P{N} xxhsum -H3", "default scan", N,
                          f"find {tree} -type f -print0 | xargs -0 -P {N} -n 1024 xxhsum -H3 > /dev/null"))
    if a.baseline:
        mine = [c for c in cases if c[1].startswith("trawl")]
        for c in mine:
            cases.insert(cases.index(c) + 1, (c[0], "base" + c[1][len("trawl"):], c[2], c[3],
                                              c[4].replace(T, a.baseline, 1)))
    # A warm-up round (page cache, first runs), then the timed rounds, interleaved.
    if not a.no_warmup:
        for c in cases:
            timed(c[4])
    walls = {c[:2]: [] for c in cases}
    busy = {c[:2]: [] for c in cases}
    for _ in range(a.runs):
        for c in cases:
            w, b = timed(c[4])
            walls[c[:2]].append(w)
            busy[c[:2]].append(b)
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"trawl {T}; {os.cpu_count()} CPUs; data under {a.data}; median of {a.runs}, rounds interleaved\n")
    if a.baseline:
        print(f"base {a.baseline}")
    print(f"{'data':<6} {'command':<34} {'median s':>9} {'cores busy':>11} {'vs -j1':>7} {'peer/trawl':>11}")
    for section, label, work, j, _ in cases:
        k = (section, label)
        line = f"{section:<6} {label:<34} {med[k]:>9.3f} {statistics.median(busy[k]):>11.1f}"
        who = label.split(" ")[0]
        one = (section, f"{who} {work} -j1")
        if who in ("trawl", "base") and one in med:
            line += f" {med[one] / med[k]:>6.2f}x"
        if who == "base":
            line += f" {'':>1}base/trawl {med[k] / med[(section, 'trawl' + label[4:])]:.2f}x"
        elif who != "trawl":
            mine = (section, f"trawl {work} -j{j}")
            line += f" {'':>7} {med[k] / med[mine]:>10.2f}x" if mine in med else ""
        print(line)
    if a.rss:
        rss_growth(a, T)
    print("\ncontention (one more run of each trawl row, TRAWL_CONTENTION=1):")
    for section, label, work, j, cmd in cases:
        if not label.startswith("trawl") or "--no-reduce" in cmd:
            continue
        r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           env={**os.environ, "TRAWL_CONTENTION": "1"})
        said = [l for l in r.stderr.decode(errors="replace").splitlines() if l.startswith("contention:")]
        print(f"{section:<6} {label:<34} {said[0] if said else '(none printed)'}")


if __name__ == "__main__":
    main()
