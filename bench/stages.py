#!/usr/bin/env python3
"""bench/stages: where a scan's CPU goes at -j16, by stage, and whether one thread caps it.

`trawl scan -j16 --stats --json` on each set, warm (one unmeasured run first), --runs runs
(default 3); for each set the median of each figure: wall, the process's CPU, each stage's share
of it (walk, order, read, lanes, reduce, merge, output: see docs/commands/scan.md, --stats) and
the busiest single thread's share of the whole run's CPU, with its stage. A thread above 1/N of
the CPU caps the speed-up on N cores wherever it runs, so shares measured on two cores say what
sixteen would meet; issue 60's goal is the busiest thread at most 1/12 on every set.

Sets (made once under --data, default /var/tmp/trawl-stages, by bench/scaling.py's generator,
gen_corpus.py; --scale shrinks them all):
  mixed      1 GiB of gen_corpus.py `mixed`, the default scan;
  small      20,000 files of 1-64 KiB, sha256 only (`-d sha256 --no-reduce`);
  tiny       100,000 files of 0-1 KiB, the default scan;
  reduction  the mixed tree, the reduction alone (`-d none --dedup 4k,...,128k --cdc 16k
             --compress lz4,zstd:1`, as bench/scaling.py's "reduction only").
With --plain, no --json: its `files[]` makes the scan keep every file's record (the `merge`
stage's work), which a scan without a report skips; the figures are then read from the table
--stats prints. Builds nothing: give a built trawl (default target/release/trawl). Every run's exit code is
checked (0). On a shared machine the times move; the shares are what to read.

    python3 bench/stages.py [--trawl PATH] [--runs N] [--scale F] [--j N] [--data DIR]
                            [--only mixed,small,tiny,reduction] [--parts N] [--plain]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from scaling import generate  # noqa: E402

STAGES = ["walk", "order", "read", "lanes", "reduce", "merge", "output"]
REDUCTION = "-d none --dedup 4k,8k,16k,32k,64k,128k --cdc 16k --compress lz4,zstd:1"


def sets(a):
    """(name, tree, extra flags) for each set asked for, made where missing."""
    s = a.scale
    mixed = lambda: generate(a.data, "mixed", max(1, int(1024 * s)), a.parts, 100)
    made = {
        "mixed": lambda: (mixed(), []),
        "small": lambda: (generate(a.data, "small", max(1, int(20_000 * s)), a.parts, 200),
                          ["-d", "sha256", "--no-reduce"]),
        "tiny": lambda: (generate(a.data, "tiny", max(1, int(100_000 * s)), a.parts, 300), []),
        "reduction": lambda: (mixed(), REDUCTION.split()),
    }
    for name in a.only.split(","):
        if name not in made:
            sys.exit(f"--only: unknown set {name!r} (mixed, small, tiny, reduction)")
        tree, extra = made[name]()
        yield name, tree, extra


def one_run(a, tree, extra, report):
    """One scan: (wall seconds, its `stages` object)."""
    out = [] if a.plain else ["--json", report]
    cmd = [a.trawl, "scan", tree, f"-j{a.j}", "--stats", "-q"] + out + extra
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    if a.plain:
        return wall, from_table(r.stdout)
    with open(report) as f:
        return wall, json.load(f)["stages"]


def from_table(text):
    """The `stages` object from the table `--stats` prints (shares only, as the JSON's)."""
    rows, s = [], {}
    for line in text.splitlines():
        w = line.split()
        if line.startswith("stages: "):
            s["cpu_seconds"] = float(w[1])
        elif w and w[0] in STAGES:
            rows.append({"stage": w[0], "share": float(w[3].rstrip("%")) / 100})
        elif line.strip().startswith("busiest thread: "):
            s["busiest_stage"] = w[2]
            s["busiest_share"] = float(w[3].lstrip("(").rstrip("%")) / 100
    s["stages"] = rows
    return s


def measure(a, name, tree, extra):
    """The medians of --runs warm runs of one set."""
    report = os.path.join(a.data, f"{name}.report.json")
    one_run(a, tree, extra, report)  # warm the cache
    runs = [one_run(a, tree, extra, report) for _ in range(a.runs)]
    med = lambda xs: statistics.median(xs)
    row = {
        "set": name,
        "wall": med([w for w, _ in runs]),
        "cpu": med([s["cpu_seconds"] for _, s in runs]),
        "busiest": med([s["busiest_share"] for _, s in runs]),
    }
    # The busiest stage of the median run (by the busiest thread's share).
    by_share = sorted(runs, key=lambda r: r[1]["busiest_share"])
    row["busiest_stage"] = by_share[len(by_share) // 2][1]["busiest_stage"]
    for st in STAGES:
        shares = [next(x["share"] for x in s["stages"] if x["stage"] == st) for _, s in runs]
        row[st] = med(shares)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target/release/trawl"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="shrink (or grow) every set")
    ap.add_argument("--j", type=int, default=16, help="-j of every scan")
    ap.add_argument("--data", default="/var/tmp/trawl-stages")
    ap.add_argument("--only", default="mixed,small,tiny,reduction")
    ap.add_argument("--parts", type=int, default=os.cpu_count(), help="generator processes")
    ap.add_argument("--plain", action="store_true",
                    help="no --json (which keeps every file's record for files[]): the figures "
                         "from the table --stats prints, the scan as it runs without a report")
    a = ap.parse_args()
    if not os.access(a.trawl, os.X_OK):
        sys.exit(f"{a.trawl}: no trawl binary there (cargo build --release, or --trawl PATH)")
    if a.runs < 1 or a.scale <= 0 or a.j < 1:
        sys.exit("--runs and --j must be at least 1, --scale above 0")
    os.makedirs(a.data, exist_ok=True)
    rows = [measure(a, *s) for s in sets(a)]
    goal = 1 / 12
    head = ["set", "wall s", "CPU s"] + STAGES + ["busiest thread", "<= 1/12"]
    how = "--stats alone" if a.plain else "--stats --json"
    print(f"\n{os.cpu_count()} CPUs, -j{a.j}, {how}, scale {a.scale}, median of {a.runs} warm "
          "runs; stage columns: share of the run's CPU")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["set"], f"{r['wall']:.2f}", f"{r['cpu']:.2f}"]
        cells += [f"{100 * r[st]:.1f}%" for st in STAGES]
        cells += [f"{100 * r['busiest']:.1f}% ({r['busiest_stage']})",
                  "yes" if r["busiest"] <= goal else "**no**"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
