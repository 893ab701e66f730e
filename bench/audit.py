#!/usr/bin/env python3
"""bench/audit: re-auditing an unchanged collection, trawl's catalog against hashdeep's audit mode.

Data (bench/data, made by gen_corpus.py, hard-linked into one tree so nothing is copied):
the 20,000 small files (1-64 KiB) and the 2 GiB file; page cache warm (one warm-up run each).

  trawl:    trawl audit TREE --catalog CAT -q         (registered once before timing; sha256)
  hashdeep: hashdeep -c sha256 -r -a -k known.txt TREE (known.txt made once before timing)

Each is timed RUNS times (default 5); the table gives medians, peak RSS and the ratio (>1: trawl
is faster). Then: catalog size per file and audit RSS at 20,000 and 200,000 files, and the time
of `--metadata-only` on 200,000 files.

With --baseline PATH (another trawl build, e.g. the previous commit's), that build re-audits
the same trees too, its runs interleaved with the first one's, and the table gives both and
their ratio (>1: the build under test is faster).

    python3 bench/audit.py [--runs N] [--trawl PATH] [--baseline PATH]
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
DATA = os.path.join(HERE, "data")


def run_once(cmd, ok=(0,)):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in ok:
        sys.exit(f"command failed ({code}): {' '.join(cmd)}\n{err}")
    return dt, ru.ru_maxrss * 1024


def measure(cmd, runs):
    run_once(cmd)
    times, rss = [], 0
    for _ in range(runs):
        dt, r = run_once(cmd)
        times.append(dt)
        rss = max(rss, r)
    return statistics.median(times), rss


def measure_pair(a, b, runs):
    """Two commands timed in alternation (a warm-up each first): medians and peak RSS of each."""
    run_once(a)
    run_once(b)
    ta, tb, ra, rb = [], [], 0, 0
    for _ in range(runs):
        dt, r = run_once(a)
        ta.append(dt)
        ra = max(ra, r)
        dt, r = run_once(b)
        tb.append(dt)
        rb = max(rb, r)
    return statistics.median(ta), ra, statistics.median(tb), rb


def mib(b):
    return f"{b / 2**20:.1f} MiB"


def link_tree(dst, parts):
    """A tree of hard links to the corpora (no bytes copied)."""
    if os.path.exists(os.path.join(dst, ".linked")):
        return
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for src, name in parts:
        if os.path.isfile(src):
            os.link(src, os.path.join(dst, name))
        else:
            subprocess.check_call(["cp", "-al", src, os.path.join(dst, name)])
    open(os.path.join(dst, ".linked"), "w").close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--baseline", help="another trawl build, timed interleaved with --trawl")
    args = ap.parse_args()
    gen = os.path.join(HERE, "gen_corpus.py")
    subprocess.check_call([sys.executable, gen, "big", os.path.join(DATA, "big"), "2048"])
    subprocess.check_call([sys.executable, gen, "small", os.path.join(DATA, "small"), "20000"])
    subprocess.check_call([sys.executable, gen, "tiny", os.path.join(DATA, "tiny200k"), "200000"])
    hd = shutil.which("hashdeep")
    if not hd:
        sys.exit("hashdeep is not installed (apt install hashdeep)")
    work = os.path.join(DATA, "audit-work")
    os.makedirs(work, exist_ok=True)
    trees = {
        "small (20,000 files)": [(os.path.join(DATA, "small"), "small")],
        "big (2 GiB file)": [(os.path.join(DATA, "big", "big.bin"), "big.bin")],
    }
    print(f"trawl audit vs hashdeep -a -k (sha256), {os.cpu_count()} CPUs, median of {args.runs}\n")
    print(f"{'data':<22} {'tool':<9} {'median s':>9} {'peak RSS':>10} {'trawl faster':>13}")
    for label, parts in trees.items():
        tree = os.path.join(work, label.split()[0])
        link_tree(tree, parts)
        cat = os.path.join(work, label.split()[0] + ".db")
        for f in (cat, cat + "-wal", cat + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        run_once([args.trawl, "audit", tree, "-c", cat, "-q"])
        known = os.path.join(work, label.split()[0] + ".known")
        with open(known, "wb") as f:
            subprocess.check_call([hd, "-c", "sha256", "-r", tree], stdout=f)
        if args.baseline:
            base_cat = cat + ".baseline"
            for f in (base_cat, base_cat + "-wal", base_cat + "-shm"):
                if os.path.exists(f):
                    os.remove(f)
            run_once([args.baseline, "audit", tree, "-c", base_cat, "-q"])
            t_trawl, r_trawl, t_base, r_base = measure_pair(
                [args.trawl, "audit", tree, "-c", cat, "-q"],
                [args.baseline, "audit", tree, "-c", base_cat, "-q"],
                args.runs,
            )
        else:
            t_trawl, r_trawl = measure([args.trawl, "audit", tree, "-c", cat, "-q"], args.runs)
        t_hd, r_hd = measure([hd, "-c", "sha256", "-r", "-a", "-k", known, tree], args.runs)
        print(f"{label:<22} {'trawl':<9} {t_trawl:>9.3f} {mib(r_trawl):>10}")
        if args.baseline:
            print(f"{'':<22} {'baseline':<9} {t_base:>9.3f} {mib(r_base):>10} {t_base / t_trawl:>12.2f}x")
        print(f"{'':<22} {'hashdeep':<9} {t_hd:>9.3f} {mib(r_hd):>10} {t_hd / t_trawl:>12.2f}x")
        if label.startswith("small"):
            size = os.path.getsize(cat)
            print(f"{'':<22} catalog {mib(size)} for 20,000 files: {size / 20000:.0f} B per file")
    # Scale: 200,000 tiny files.
    tree = os.path.join(DATA, "tiny200k")
    cat = os.path.join(work, "tiny200k.db")
    for f in (cat, cat + "-wal", cat + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    t_reg, r_reg = run_once([args.trawl, "audit", tree, "-c", cat, "-q"])
    t_re, r_re = run_once([args.trawl, "audit", tree, "-c", cat, "-q"])
    t_meta, r_meta = measure([args.trawl, "audit", tree, "-c", cat, "-q", "--metadata-only"], args.runs)
    size = os.path.getsize(cat)
    print(f"\n200,000 files of 0-1 KiB:")
    print(f"  register   {t_reg:7.2f} s  peak RSS {mib(r_reg)}")
    print(f"  re-audit   {t_re:7.2f} s  peak RSS {mib(r_re)}")
    print(f"  --metadata-only (median of {args.runs}) {t_meta:7.2f} s  peak RSS {mib(r_meta)}")
    print(f"  catalog {mib(size)}: {size / 200000:.0f} B per file")


if __name__ == "__main__":
    main()
