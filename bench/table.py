#!/usr/bin/env python3
"""bench/table: the fingerprint table against a std HashMap<u128, u32>, one core, same keys.

Runs crates/trawl-reduce/examples/table_bench.rs (release) RUNS times for each and prints the
median inserts per second, bytes per distinct key and the ratio.

    python3 bench/table.py [--keys N] [--dup PERCENT] [--runs R]
"""
import argparse
import statistics
import subprocess


def run(keys, dup, which, env=None):
    import os
    e = dict(os.environ, **(env or {}))
    out = subprocess.run(["cargo", "run", "-q", "--release", "-p", "trawl-reduce", "--example",
                          "table_bench", "--", str(keys), str(dup), which],
                         capture_output=True, text=True, check=True, env=e).stdout.split()
    return {out[i]: out[i + 1] for i in range(1, len(out) - 1, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=64_000_000)
    ap.add_argument("--dup", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    res = {}
    variants = [
        ("fptable", "fptable", None, "batches of 65,536 in arrival order, prefetch (what the scan does)"),
        ("sorted", "fptable", {"SORTED_BATCH": str(8 << 20)}, "batches of 8 Mi keys sorted by partition first"),
        ("hashmap", "hashmap", None, "std HashMap<u128, u32>"),
    ]
    for label, which, env, what in variants:
        rs = [run(a.keys, a.dup, which, env) for _ in range(a.runs)]
        rate = statistics.median(float(r["inserts_per_s"].rstrip("M")) for r in rs)
        bpd = statistics.median(float(r["rss_bytes_per_distinct"]) for r in rs)
        res[label] = rate
        print(f"{label:<8} ({what}) {a.keys:,} keys ({a.dup}% repeats, {rs[0]['distinct']} distinct): "
              f"median {rate:.1f} M inserts/s, {bpd:.2f} B of RSS per distinct key"
              + (f", table slots {float(rs[0]['table_bytes_per_distinct']):.2f} B" if which == "fptable" else ""))
    print(f"fptable / hashmap: {res['fptable'] / res['hashmap']:.2f}x; sorted / hashmap: {res['sorted'] / res['hashmap']:.2f}x")


if __name__ == "__main__":
    main()
