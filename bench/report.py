#!/usr/bin/env python3
"""bench/report: what the reports cost. The reduction benchmark's scan of the ~2 GiB mixed tree
(gen_corpus.py, bench/data/mixed) without outputs, with --html, and with every report at once
(--html --json --duplicates --ncdu), in interleaved rounds; medians and the ratio to the scan
without outputs (goal for --html: at most 1.05x). Then the page's size for that tree and for
10^6 small files (goal under 2 MB), with the time the scan took.

    python3 bench/report.py [--runs N] [--trawl PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    took = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit(f"failed: {cmd}")
    return took, ru.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    a = ap.parse_args()
    tree = os.path.join(HERE, "data", "mixed")
    subprocess.check_call([sys.executable, os.path.join(HERE, "gen_corpus.py"), "mixed", tree, "2048"])
    out = tempfile.mkdtemp(prefix="trawl-report-bench-")
    base = f"{a.trawl} scan {tree} -q --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1"
    html = os.path.join(out, "r.html")
    cases = [
        ("scan (reduction benchmark)", base),
        ("  ... --html", f"{base} --html {html}"),
        ("  ... --html --json --duplicates --ncdu",
         f"{base} --html {html} --json {out}/r.json --duplicates {out}/d.txt --ncdu {out}/n.json"),
    ]
    for _, c in cases:
        run(c)  # warm-up
    times = {n: [] for n, _ in cases}
    rss = {n: 0 for n, _ in cases}
    for _ in range(a.runs):
        for n, c in cases:
            t, r = run(c)
            times[n].append(t)
            rss[n] = max(rss[n], r)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
    print(f"{size / 2**30:.2f} GiB mixed tree; {os.cpu_count()} CPUs; median of {a.runs}, rounds interleaved")
    print()
    print(f"| {'command':<42} | {'median s':>9} | {'vs plain':>8} | {'peak RSS':>9} |")
    print(f"|{'-' * 44}|{'-' * 11}|{'-' * 10}|{'-' * 11}|")
    plain = statistics.median(times[cases[0][0]])
    for n, _ in cases:
        m = statistics.median(times[n])
        print(f"| {n:<42} | {m:>9.2f} | {m / plain:>7.3f}x | {rss[n] / 2**20:>5.0f} MiB |")
    print()
    m = statistics.median(times[cases[1][0]])
    print(f"--html costs {100 * (m / plain - 1):+.1f}% (goal at most +5%)")
    print(f"page for the mixed tree: {os.path.getsize(html) / 1024:.0f} KiB")
    big = os.path.join(HERE, "data", "slope1000000")
    if os.path.isdir(big):
        t, r = run(f"{a.trawl} scan {big} -q --html {html}")
        n = sum(len(fs) for _, _, fs in os.walk(big))
        print(f"page for {n:,} files: {os.path.getsize(html) / 1024:.0f} KiB (goal under 2 MB), "
              f"scan {t:.1f} s, peak RSS {r / 2**20:.0f} MiB")
    else:
        print("SKIPPED: the 10^6-file tree (bench/files.py --scale makes bench/data/slope1000000)")
    subprocess.run(["rm", "-rf", out])


if __name__ == "__main__":
    main()
