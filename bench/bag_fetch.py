#!/usr/bin/env python3
"""bench/bag_fetch: validating a holey bag (fetch.txt naming N files not present), trawl against
bagit-python, at N = 20,000 to 160,000: the time must grow in proportion to N (matching the
manifests against fetch.txt is one hash lookup per entry).

The bag: two small payload files made by `trawl bag create`, then N entries appended to every
payload manifest and to fetch.txt (none present), tag manifest removed. Both tools report the bag
as not valid (N files to fetch); each is timed RUNS times per N, the two interleaved, and the table
gives medians, the ratio (>1: trawl is faster) and trawl's time per entry.

    python3 bench/bag_fetch.py [--runs N] [--trawl PATH] [--sizes 20000,40000,80000,160000]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def make_bag(trawl, top, n):
    bag = os.path.join(top, f"bag{n}")
    shutil.rmtree(bag, ignore_errors=True)
    os.makedirs(bag)
    for name, body in [("one.txt", b"one\n"), ("two.txt", b"two\n")]:
        with open(os.path.join(bag, name), "wb") as f:
            f.write(body)
    subprocess.run([trawl, "bag", "create", bag, "-q"], check=True)
    with open(os.path.join(bag, "fetch.txt"), "w") as f:
        for i in range(n):
            f.write(f"https://example.invalid/f{i} 1 data/f{i:07}\n")
    for name in os.listdir(bag):
        if name.startswith("manifest-") and name.endswith(".txt"):
            hexlen = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}[name[9:-4]]
            with open(os.path.join(bag, name), "a") as f:
                zero = "0" * hexlen
                for i in range(n):
                    f.write(f"{zero}  data/f{i:07}\n")
        if name.startswith("tagmanifest-"):
            os.remove(os.path.join(bag, name))
    return bag


def run_once(cmd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if p.returncode == 0:
        sys.exit(f"expected 'not valid' from: {' '.join(cmd)}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--sizes", default="20000,40000,80000,160000")
    a = ap.parse_args()
    bagit = shutil.which("bagit.py")
    if not bagit:
        sys.exit("bagit.py is not installed (pip install bagit)")
    sizes = [int(s) for s in a.sizes.split(",")]
    print(f"trawl {a.trawl}; bagit.py {bagit}; {a.runs} interleaved runs per size; medians")
    print(f"{'entries':>8} {'trawl s':>9} {'bagit.py s':>11} {'ratio':>7} {'trawl us/entry':>15}")
    with tempfile.TemporaryDirectory(prefix="trawl-bench-fetch-") as top:
        for n in sizes:
            bag = make_bag(a.trawl, top, n)
            cmds = {
                "trawl": [a.trawl, "bag", "validate", bag, "-q"],
                "bagit": [sys.executable, bagit, "--validate", "--quiet", bag],
            }
            times = {k: [] for k in cmds}
            for k, c in cmds.items():
                run_once(c)  # warm-up
            for _ in range(a.runs):
                for k, c in cmds.items():
                    times[k].append(run_once(c))
            t, b = statistics.median(times["trawl"]), statistics.median(times["bagit"])
            print(f"{n:>8} {t:>9.3f} {b:>11.3f} {b / t:>6.2f}x {t / n * 1e6:>15.2f}")


if __name__ == "__main__":
    main()
