#!/usr/bin/env python3
"""bench/premis: `trawl catalog export --format premis|premis-jsonl` at two sizes of catalog,
to show that the export streams: its peak RSS stays flat while the catalog grows tenfold.

Each tree is N small files (16 bytes each, 100 a directory) in a temporary directory, audited
twice (registered, then read ok: every file has a registration event and an ok check). Each
export is timed RUNS times (default 3; one warm-up first); the table gives the median time,
the peak RSS and the output's bytes per file. There is no peer: no other tool writes PREMIS
from a fixity catalog.

    python3 bench/premis.py [--runs N] [--sizes 10000,100000] [--trawl PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"command failed: {' '.join(cmd)}\n{err}")
    return dt, ru.ru_maxrss * 1024


def tree(top, n):
    for i in range(n):
        d = os.path.join(top, f"d{i // 100:05d}")
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{i:07d}"), "wb") as f:
            f.write(b"%016d" % i)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000")
    default = os.path.join(ROOT, "target", "release", "trawl")
    if not os.path.exists(default):
        default = os.path.join(ROOT, "target", "debug", "trawl")
    ap.add_argument("--trawl", default=default)
    a = ap.parse_args()
    print(f"trawl: {a.trawl}")
    print(f"{'files':>8} {'format':>13} {'median s':>9} {'peak RSS MiB':>13} {'bytes/file':>11}")
    for n in [int(s) for s in a.sizes.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            top, cat = os.path.join(tmp, "t"), os.path.join(tmp, "cat.db")
            tree(top, n)
            for _ in range(2):
                run_once([a.trawl, "audit", top, "-c", cat, "-q"])
            for fmt in ["premis", "premis-jsonl"]:
                out = os.path.join(tmp, "out")
                cmd = [a.trawl, "catalog", "export", "-c", cat, "--format", fmt, "-o", out]
                run_once(cmd)
                runs = [run_once(cmd) for _ in range(a.runs)]
                t = statistics.median(r[0] for r in runs)
                rss = max(r[1] for r in runs)
                size = os.path.getsize(out)
                print(f"{n:>8} {fmt:>13} {t:>9.2f} {rss / 2**20:>13.1f} {size / n:>11.0f}")


if __name__ == "__main__":
    main()
