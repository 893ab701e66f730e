#!/usr/bin/env python3
"""bench/policy: thirty simulated nights of a 30-day policy on a collection of N files.

The issue's goal, at full size: a collection of N files (default 100,000; sizes 100 B to 4 KiB,
fixed by the seed) is registered at T0, given `--every 30d --max-bytes TOTAL/30`, and audited
with `trawl audit --policy` once a night for thirty nights under a fixed clock (TRAWL_NOW=T0 +
k days: no waiting). On night 12, before the audit, one file past two thirds of the path order
has a byte flipped with its size and mtime kept (silent corruption).

Checked, and the run stops with an error where one fails:
  - each night reads at least the budget and less than the budget and one file more;
  - every file is read in the thirty nights (its last verification past T0, in the catalog,
    read with Python's sqlite3), the corrupt one aside;
  - `trawl catalog due` after night 30 lists nothing;
  - the corrupt file is reported on the first night that reads it after night 12, and by
    every audit after (exit 1).

Printed: the registration's time, each night's median, min and max time, the bytes per night as
a ratio to TOTAL/30 (min, median, max), `catalog due`'s time, the catalog's size.

    python3 bench/policy.py [--files N] [--trawl PATH] [--keep DIR]
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
T0 = 1_800_000_000
DAY = 86_400


def trawl(exe, now, args, ok=(0,)):
    env = dict(os.environ, TRAWL_NOW=str(now), TZ="UTC")
    t0 = time.perf_counter()
    p = subprocess.run([exe] + args, env=env, capture_output=True)
    dt = time.perf_counter() - t0
    if p.returncode not in ok:
        sys.exit(f"exit {p.returncode}: trawl {' '.join(args)}\n{p.stderr.decode(errors='replace')}")
    return dt, p


def make_tree(root, n):
    rnd = random.Random(59)
    sizes = {}
    for i in range(n):
        d = os.path.join(root, f"d{i % 100:02d}")
        if i < 100:
            os.makedirs(d, exist_ok=True)
        name = f"d{i % 100:02d}/f{i:06d}"
        size = rnd.randint(100, 4096)
        with open(os.path.join(root, name), "wb") as f:
            f.write(rnd.randbytes(size))
        sizes[name] = size
    return sizes


def flip(path):
    st = os.stat(path)
    with open(path, "r+b") as f:
        f.seek(10)
        b = f.read(1)
        f.seek(10)
        f.write(bytes([b[0] ^ 0x20]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target/release/trawl"))
    ap.add_argument("--keep", help="work in DIR and leave it (default: a temporary directory)")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="trawl-policy-")
    os.makedirs(work, exist_ok=True)
    tree, cat = os.path.join(work, "t"), os.path.join(work, "cat.db")
    try:
        t = time.perf_counter()
        sizes = make_tree(tree, a.files)
        print(f"tree: {a.files} files, {sum(sizes.values())} bytes, made in {time.perf_counter() - t:.1f} s")
        run(a.trawl, tree, cat, sizes)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(exe, tree, cat, sizes):
    total, biggest = sum(sizes.values()), max(sizes.values())
    budget = -(-total // 30)
    reg, _ = trawl(exe, T0, ["audit", tree, "-c", cat, "-q"])
    trawl(exe, T0, ["catalog", "policy", "-c", cat, "--every", "30d", "--max-bytes", str(budget)])
    victim = sorted(sizes)[len(sizes) * 2 // 3]
    times, ratios, reported = [], [], None
    jpath = os.path.join(os.path.dirname(cat), "night.json")
    for k in range(1, 31):
        if k == 12:
            flip(os.path.join(tree, victim))
        dt, p = trawl(exe, T0 + k * DAY, ["audit", tree, "-c", cat, "--policy", "-q", "--json", jpath], ok=(0, 1))
        v = json.load(open(jpath))
        got = v["bytes_read"]
        if not budget <= got < budget + biggest:
            sys.exit(f"night {k}: read {got} bytes, budget {budget}")
        bad = [e["path"] for e in v["events"] if e["state"] == "corrupt"]
        if bad and reported is None:
            reported = k
        if reported is not None and (p.returncode != 1 or not any(b.endswith("/" + victim) for b in bad)):
            sys.exit(f"night {k}: the corrupt file, reported on night {reported}, is not reported")
        if reported is None and k >= 12 and p.returncode != 0:
            sys.exit(f"night {k}: exit {p.returncode} before the corrupt file's turn")
        times.append(dt)
        ratios.append(got / (total / 30))
    if reported is None or reported <= 12:
        sys.exit(f"the corrupt file was reported on night {reported}, not on its turn after night 12")
    dt_due, p = trawl(exe, T0 + 30 * DAY, ["catalog", "due", "-c", cat, "--json"])
    due = json.loads(p.stdout)
    if due["totals"]["files"] != 0:
        sys.exit(f"due after night 30: {due['totals']}")
    c = sqlite3.connect(f"file:{cat}?mode=ro", uri=True)
    stale = c.execute(
        "SELECT CAST(d.path || f.name AS TEXT) FROM files f JOIN dirs d ON d.id = f.dir WHERE f.last_verified <= ?",
        (T0,)).fetchall()
    if [s[0] for s in stale] != [victim]:
        sys.exit(f"files not read in thirty nights: {stale[:5]} ({len(stale)})")
    print(f"registration: {reg:.2f} s; budget {budget} bytes a night (TOTAL/30)")
    print(f"a night: median {statistics.median(times):.2f} s, min {min(times):.2f}, max {max(times):.2f}")
    print(f"bytes a night / (TOTAL/30): min {min(ratios):.4f}, median {statistics.median(ratios):.4f}, max {max(ratios):.4f}")
    print(f"corrupt file (flipped on night 12) reported from night {reported} to 30")
    print(f"catalog due after night 30: 0 files, in {dt_due:.2f} s; catalog {os.path.getsize(cat)} bytes")
    print("every file read at least once in the thirty nights")


if __name__ == "__main__":
    main()
