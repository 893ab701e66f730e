#!/usr/bin/env python3
"""bench/reduce: trawl's one-pass data reduction against plain reading and the codec CLIs.

Data: a ~2 GiB mixed tree (text, structured binaries, random, exact and shifted duplicates, half-zero
files) made by gen_corpus.py under bench/data/mixed; page cache warm; median of RUNS.

The five commands below run in interleaved rounds (each round runs each once):
  trawl scan  --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1 --digest none
              the same with the default sha256 digest as well (the spilled and sampled runs too)
  cat         every file to /dev/null
  lz4 -1      every file, concatenated, through one lz4 -1
  zstd -1 -T1 every file, concatenated, through one zstd -1 -T1

    python3 bench/reduce.py [--runs N] [--trawl PATH]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def timed(cmd, runs, warm=True):
    if warm:
        subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ts, rss = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, st, ru = os.wait4(p.pid, 0)
        ts.append(time.perf_counter() - t0)
        rss = max(rss, ru.ru_maxrss * 1024)
        if os.waitstatus_to_exitcode(st) != 0:
            sys.exit(f"failed: {cmd}")
    return statistics.median(ts), rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--baseline", help="another trawl binary: its three scans run beside this build's")
    ap.add_argument("--compare-only", action="store_true", help="only the interleaved table (no spill or sampling runs)")
    a = ap.parse_args()
    tree = os.path.join(HERE, "data", "mixed")
    subprocess.check_call([sys.executable, os.path.join(HERE, "gen_corpus.py"), "mixed", tree, "2048"])
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(tree) for f in fs)
    cpus = os.cpu_count()
    files = f"find {tree} -type f -print0 | sort -z | xargs -0 cat"
    reduce = f"{a.trawl} scan {tree} -q --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1"
    cases = [
        # The reduction alone (no fixity digest).
        ("trawl scan (dedup 6 sizes + cdc 16k + lz4 + zstd:1)", reduce + " --digest none"),
        ("trawl scan (dedup 6 sizes + cdc 16k + lz4 + zstd:1 + sha256)", reduce),
        ("trawl scan (default: dedup 6 sizes + lz4 + sha256)", f"{a.trawl} scan {tree} -q"),
    ]
    if a.baseline:
        cases += [(f"baseline {name[len('trawl '):]}", cmd.replace(a.trawl, a.baseline, 1)) for name, cmd in cases[:3]]
    cases += [
        ("cat > /dev/null", f"{files} > /dev/null"),
        ("lz4 -1", f"{files} | lz4 -1 > /dev/null"),
        ("zstd -1 -T1", f"{files} | zstd -1 -T1 > /dev/null"),
    ]
    print(f"{size / 1e9:.2f} GB mixed tree, {cpus} CPUs, median of {a.runs} (runs interleaved)\n")
    if a.baseline:
        print(f"trawl: {a.trawl}; baseline: {a.baseline}")
    print(f"{'command':<62} {'s':>7} {'MB/s':>8} {'MB/s/core':>10} {'RSS':>9}")
    res = {}
    # Interleaved: each round runs every command once, so that the VM's drift falls on all alike.
    rounds = [[timed(cmd, 1, warm=i == 0) for _, cmd in cases] for i in range(a.runs)]
    for n, (name, cmd) in enumerate(cases):
        t = statistics.median(r[n][0] for r in rounds)
        rss = max(r[n][1] for r in rounds)
        res[name] = t
        per_core = size / t / 1e6 / (cpus if name.startswith(("trawl", "baseline")) else 1)
        print(f"{name:<62} {t:7.2f} {size / t / 1e6:8.0f} {per_core:10.0f} {rss / 2**20:7.0f}MiB")
    print()
    for name, _ in cases[:2]:
        full = res[name]
        print(f"{name} vs zstd -1 -T1 alone: {res['zstd -1 -T1'] / full:.2f}x; vs lz4 -1: {res['lz4 -1'] / full:.2f}x")
    if a.baseline:
        for name, _ in cases[:3]:
            b = "baseline " + name[len("trawl "):]
            print(f"{name}: this build {res[name]:.2f} s, baseline {res[b]:.2f} s: {res[b] / res[name]:.2f}x")
    if a.compare_only:
        return

    import json
    import tempfile

    # Spilled: the same run with the indexes bounded to 8 MiB (they need more), same JSON?
    outs = {}
    for name, extra in (("in RAM", ""), ("--memory 8M", f" --memory 8M --temp-dir {tempfile.gettempdir()}")):
        out = os.path.join(tempfile.gettempdir(), f"trawl-spill-{len(extra)}.json")
        t, rss = timed(cases[1][1] + extra + f" --json {out}", a.runs)
        outs[name] = (t, rss, json.load(open(out))["reduction"])
        print(f"\n{name:<12} {t:7.2f} s  peak RSS {rss / 2**20:.0f} MiB", end="")
    (t0, _, r0), (t1, _, r1) = outs["in RAM"], outs["--memory 8M"]
    print(f"\nspilled/in-RAM throughput {t0 / t1:.2f}x; reduction JSON identical: {r0 == r1}; "
          f"{r0['dedup'][0]['unique_blocks']:,} unique 4 KiB blocks")

    # Sampled runs: time and error against the full run.
    base = cases[1][1]
    reports = {}
    times = {}
    for rate in (None, 0.1, 0.01):
        out = os.path.join(tempfile.gettempdir(), f"trawl-reduce-{rate}.json")
        cmd = base + (f" --sample {rate}" if rate else "") + f" --json {out}"
        times[rate], _ = timed(cmd, a.runs)
        reports[rate] = json.load(open(out))["reduction"]
    ex = reports[None]
    print("\nsampled runs against the full run (error = estimate / exact - 1; interval 99%)")
    print(f"{'rate':>6} {'time':>7} {'speedup':>8}  figure: error [interval contains exact?]")
    for rate in (0.1, 0.01):
        r = reports[rate]
        figs = [
            ("dedup 4k unique_bytes", ex["dedup"][0]["unique_bytes"], r["dedup"][0]),
            ("dedup 128k unique_bytes", ex["dedup"][-1]["unique_bytes"], r["dedup"][-1]),
            ("cdc unique_bytes", ex["cdc"]["unique_bytes"], r["cdc"]),
        ]
        for i, c in enumerate(ex["compression"]):
            figs.append((f"{c['codec']}{'' if c['level'] is None else ':' + str(c['level'])} allocated", c["allocated_bytes"], r["compression"][i]))
        parts = []
        for name, truth, e in figs:
            est = e.get("unique_bytes", e.get("allocated_bytes"))
            smp = e["sample"]
            inside = smp["low"] <= truth <= smp["high"]
            parts.append(f"{name}: {est / truth - 1:+.2%} [{'yes' if inside else 'NO'}]")
        for i, c in enumerate(ex["compression"]):
            parts.append(f"{c['codec']}{'' if c['level'] is None else ':' + str(c['level'])} combined: {r['compression'][i]['combined_allocated_bytes'] / c['combined_allocated_bytes'] - 1:+.2%}")
        print(f"{rate:>6} {times[rate]:7.2f} {times[None] / times[rate]:7.2f}x  " + "; ".join(parts))


if __name__ == "__main__":
    main()
