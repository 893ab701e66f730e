#!/usr/bin/env python3
"""bench/table: the fingerprint table against a std HashMap<u128, u32>, one core, same keys.

Runs crates/trawl-reduce/examples/table_bench.rs (release) RUNS times for each and prints the
median inserts per second, bytes per distinct key and the ratio.

    python3 bench/table.py [--keys N] [--dup PERCENT] [--runs R] [--before BIN]
    python3 bench/table.py --sweep [--runs R] [--before BIN]

--sweep: instead, the table alone at 0.5 to 32 million keys (same repeats), to show the bytes of
RSS per distinct key at every scale (the index's bound holds "at any scale", not only at the top).

--before BIN: also run another build of table_bench (e.g. from an older commit, built with
`git worktree add /tmp/old REV && cargo build --release --example table_bench`) in the same
run, runs interleaved with this build's, to compare a change.
"""
import argparse
import statistics
import subprocess


def run(keys, dup, which, env=None, binary=None):
    import os
    e = dict(os.environ, **(env or {}))
    cmd = ([binary] if binary else ["cargo", "run", "-q", "--release", "-p", "trawl-reduce",
                                    "--example", "table_bench", "--"])
    out = subprocess.run(cmd + [str(keys), str(dup), which],
                         capture_output=True, text=True, check=True, env=e).stdout.split()
    return {out[i]: out[i + 1] for i in range(1, len(out) - 1, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=64_000_000)
    ap.add_argument("--dup", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", help="another table_bench binary to compare, same run")
    ap.add_argument("--sweep", action="store_true")
    a = ap.parse_args()
    if a.sweep:
        return sweep(a)
    res = {}
    variants = [
        ("fptable", "fptable", None, "staged one by one, merged in sorted batches (what the scan does)"),
        ("hashmap", "hashmap", None, "std HashMap<u128, u32>"),
    ]
    if a.before:
        # A build before the merged table (0c38faf and older) inserts in arrival order, or with
        # SORTED_BATCH in batches sorted by partition; newer builds ignore SORTED_BATCH.
        variants.insert(1, ("before", "fptable", None, f"{a.before}"))
        variants.insert(2, ("bsorted", "fptable", {"SORTED_BATCH": str(8 << 20)}, f"{a.before}, SORTED_BATCH"))
    binaries = {"before": a.before, "bsorted": a.before}
    # Runs interleaved (each round runs every variant once), so that drift on a shared machine
    # falls on all of them alike.
    runs = {label: [] for label, *_ in variants}
    for _ in range(a.runs):
        for label, which, env, _what in variants:
            runs[label].append(run(a.keys, a.dup, which, env, binaries.get(label)))
    for label, which, env, what in variants:
        rs = runs[label]
        rate = statistics.median(float(r["inserts_per_s"].rstrip("M")) for r in rs)
        bpd = statistics.median(float(r["rss_bytes_per_distinct"]) for r in rs)
        # Peak RSS while inserting (builds before 4272194 do not print it).
        pk = ([float(r["peak_rss_bytes_per_distinct"]) for r in rs if "peak_rss_bytes_per_distinct" in r])
        peak = f", peak {statistics.median(pk):.2f} B" if pk else ""
        res[label] = rate
        print(f"{label:<8} ({what}) {a.keys:,} keys ({a.dup}% repeats, {rs[0]['distinct']} distinct): "
              f"median {rate:.1f} M inserts/s, {bpd:.2f} B of RSS per distinct key at the end{peak}"
              + (f", table slots {float(rs[0]['table_bytes_per_distinct']):.2f} B" if which == "fptable" else ""))
    if a.before:
        print(f"fptable / before: {res['fptable'] / res['before']:.2f}x; "
              f"fptable / before SORTED_BATCH: {res['fptable'] / res['bsorted']:.2f}x")
    print(f"fptable / hashmap: {res['fptable'] / res['hashmap']:.2f}x")


def sweep(a):
    builds = [("this", None)] + ([("before", a.before)] if a.before else [])
    sizes = [500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000, 12_000_000, 16_000_000,
             24_000_000, 32_000_000]
    print(f"{'keys':>11} {'distinct':>11}  " + "  ".join(
        f"{name + ' M/s':>12} {name + ' RSS B':>12} {name + ' peak B':>12} {name + ' held B':>12}"
        for name, _ in builds))
    worst = {name: 0.0 for name, _ in builds}
    for n in sizes:
        runs = {name: [] for name, _ in builds}
        for _ in range(a.runs):
            for name, binary in builds:
                runs[name].append(run(n, a.dup, "fptable", None, binary))
        cols = []
        for name, _ in builds:
            rs = runs[name]
            rate = statistics.median(float(r["inserts_per_s"].rstrip("M")) for r in rs)
            rss = statistics.median(float(r["rss_bytes_per_distinct"]) for r in rs)
            slots = float(rs[0]["table_bytes_per_distinct"])
            pk = [float(r["peak_rss_bytes_per_distinct"]) for r in rs if "peak_rss_bytes_per_distinct" in r]
            peak = statistics.median(pk) if pk else None
            worst[name] = max(worst[name], rss, peak or 0)
            cols.append(f"{rate:>12.1f} {rss:>12.2f} {peak if peak is not None else float('nan'):>12.2f} {slots:>12.2f}")
        print(f"{n:>11,} {runs[builds[0][0]][0]['distinct']:>11}  " + "  ".join(cols))
    print("worst RSS (end or peak) per distinct key, any size: " +
          ", ".join(f"{name} {w:.2f} B" for name, w in worst.items()))


if __name__ == "__main__":
    main()
