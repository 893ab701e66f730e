#!/usr/bin/env python3
"""bench/cluster: `trawl-dask scan --local 2` against `trawl scan` on one machine, in one run.

On the ~2 GiB mixed tree (bench/data/mixed, made by gen_corpus.py), interleaved round by round:
`trawl scan` (default digest and reduction), and `trawl-dask scan --local 2` with 16 and with
256 fingerprint partitions. Prints the median wall times (the cluster's including its start:
two worker processes), the overhead ratio (cluster over one machine; goal <= 1.15), and from
the cluster's --stats: fingerprints and bytes shipped (bytes per fingerprint, against 16 bytes
per block for a record per block), task results (against a message per block), the bytes each
reducer held at most and in all, and the spread of shard times.

On 200,000 small files (bench/data/files200000, made by files.py), the same with `-d xxh3
--no-reduce`: files per second of `trawl scan`, of the whole cluster scan, and of its
distributed walk alone (the listing tasks, from --stats).

Audits (section `audit`): `trawl audit` against `trawl-dask audit --local 2`, each with a
catalog of its own outside the tree: the first audit (registration: walk, read, record every
file) with a new catalog each round, then a second audit of the same tree (every file read and
verified again), on the mixed tree and on the 200,000 small files; their counts must agree.

Every figure checks first that the two reports agree (reduction and totals).

    python3 bench/cluster.py [--runs N] [--trawl PATH] [--mixed DIR] [--files DIR] [--local N]
                             [--sections scan,files,audit,running] [--shapes 2x1,4x4]
                             [--sizes 0.5,2 [--data-dir /dev/shm]]

Section `running` (not run by default): a scheduler and --shapes workers (default 2x1: two
single-threaded workers) started once, as an operator starts them; `trawl-dask scan --scheduler` against `trawl scan`, wall time
and CPU seconds of the whole cluster (client, scheduler, workers: /proc of each, the client's
rusage) over trawl scan's; and Dask's floor: the same cluster running as many tasks as the scan
ran, each doing nothing, from a client that imports what trawl-dask imports (what no change to
trawl's own work can take away). With --sizes, each size's tree is measured on one cluster
and the fixed cost and the cost per GiB of both sides are fitted through the smallest and the
largest.

trawl and the package are the same build: `cargo build --profile python --bin trawl --features
openssl,s3` and the
wheel of `maturin build --profile python -m python/Cargo.toml` (what `pip install ./python`
builds), so that the ratio is the cluster's, not two compilers'.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return dt


def same(a, b, what):
    ra, rb = json.load(open(a)), json.load(open(b))
    for k in ("files", "bytes"):
        assert ra["totals"][k] == rb["totals"][k], (what, k)
    assert ra.get("reduction") == rb.get("reduction"), f"{what}: the reductions differ"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "python", "trawl"))
    ap.add_argument("--mixed", default=os.path.join(HERE, "data", "mixed"))
    ap.add_argument("--files", default=os.path.join(HERE, "data", "files200000"))
    ap.add_argument("--sections", default="scan,files,audit")
    ap.add_argument("--local", type=int, default=2,
                    help="worker processes of trawl-dask --local in sections scan and files")
    ap.add_argument("--sizes", default="",
                    help="section running: trees of these many GiB (e.g. 0.5,2; mixed, made once "
                         "under --data-dir) instead of --mixed, and the fixed and per-GiB costs "
                         "fitted through them")
    ap.add_argument("--data-dir", default="/dev/shm",
                    help="where --sizes makes its trees (default /dev/shm)")
    ap.add_argument("--gen-parts", type=int, default=1,
                    help="--sizes: make each tree in this many parts, by as many processes")
    ap.add_argument("--shapes", default="2x1",
                    help="section running: clusters of WORKERSxTHREADS, e.g. 4x4,8x2; trawl scan "
                         "runs with -j WORKERS*THREADS beside each")
    a = ap.parse_args()
    sections = a.sections.split(",")
    dask = [sys.executable, "-m", "trawl.cluster", "scan", "--local", str(a.local)]
    tmp = tempfile.mkdtemp(prefix="trawl-bench-cluster-")
    j = lambda n: os.path.join(tmp, n)
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"bench/cluster: {os.cpu_count()} cores, commit {rev}, {a.runs} interleaved rounds, medians")

    if "scan" in sections:
        mixed(a, dask, j)
    if "files" in sections:
        files(a, dask, j)
    if "audit" in sections:
        audits(a, j)
    if "running" in sections:
        trees = [(None, a.mixed)]
        if a.sizes:
            trees = []
            for g in (float(x) for x in a.sizes.split(",")):
                name = f"trawl-bench-mixed-{int(g * 1024)}"
                if a.gen_parts > 1:
                    import scaling

                    tree = scaling.generate(a.data_dir, "mixed", int(g * 1024), a.gen_parts, 100, name)
                else:
                    tree = os.path.join(a.data_dir, name)
                    subprocess.run([sys.executable, os.path.join(HERE, "gen_corpus.py"), "mixed", tree,
                                    str(int(g * 1024))], check=True, stdout=subprocess.DEVNULL)
                trees.append((g, tree))
        for shape in a.shapes.split(","):
            workers, threads = (int(x) for x in shape.split("x"))
            fits = [running(a, j, workers, threads, tree) for _, tree in trees]
            if len(trees) >= 2:
                per_gib(trees, fits)


#: Dask's own cost for a run of N tasks: a client that imports trawl's cluster module and Dask,
#: connects, runs N tasks that do nothing (as many as a scan runs), and closes.
FLOOR = """
import sys, trawl.cluster
from distributed import Client
with Client(sys.argv[1], timeout=60) as c:
    n = int(sys.argv[2])
    c.gather([c.submit(int, i, key=f"noop-{i}") for i in range(n)])
"""


def cpu_of(pid):
    """CPU seconds (user + system) a running process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_gib(trees, fits):
    """The fixed cost and the cost per GiB of each side, from the smallest and largest trees'
    medians (wall and CPU), and the cluster's over one machine's."""
    (g1, _), (g2, _) = min(trees), max(trees)
    f1, f2 = fits[trees.index(min(trees))], fits[trees.index(max(trees))]
    print(f"\n  fitted through {g1:g} and {g2:g} GiB: fixed + per GiB")
    print(f"  {'':<24} {'fixed s':>8} {'s/GiB':>7} {'fixed CPU':>10} {'CPU s/GiB':>10}")
    rows = {}
    for k in f1:
        (t1, c1), (t2, c2) = f1[k], f2[k]
        st, sc = (t2 - t1) / (g2 - g1), (c2 - c1) / (g2 - g1)
        rows[k] = (t1 - st * g1, st, c1 - sc * g1, sc)
        print(f"  {k:<24} {rows[k][0]:>8.2f} {st:>7.2f} {rows[k][2]:>10.2f} {sc:>10.2f}")
    one, dask = rows["trawl scan"], rows["trawl-dask --scheduler"]
    print(f"  per GiB, cluster / one machine: wall {dask[1] / one[1]:.2f}x (goal 1.1x), "
          f"CPU {dask[3] / one[3]:.2f}x (goal 1.15x); the cluster's fixed wall {dask[0]:.2f} s "
          f"(goal 0.6 s)")


def running(a, j, workers=2, threads=1, tree=None):
    """`trawl-dask scan --scheduler` on a cluster already running (a `dask scheduler` and
    `workers` `dask worker` processes of `threads` threads, started once, as an operator starts
    them) against `trawl scan -j workers*threads`: wall time, and CPU seconds of the whole
    cluster (client, scheduler and workers) against trawl scan's."""
    import socket

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = so.getsockname()[1]
    addr = f"tcp://127.0.0.1:{port}"
    tree = tree or a.mixed
    log = open(j("cluster.log"), "w")
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                               "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=log, stderr=log)]
    for n in range(workers):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads", str(threads),
             "--no-nanny", "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{n}"],
            stdout=log, stderr=log))
    try:
        from distributed import Client

        with Client(addr, timeout=60) as c:
            c.wait_for_workers(workers, timeout=60)

        def timed(cmd, cluster):
            before = os.times()
            held = sum(cpu_of(p.pid) for p in procs) if cluster else 0.0
            t = run(cmd)
            if cluster and cmd is not floor:
                own.append(json.load(open(j("rd.json")))["totals"]["seconds"])
            after = os.times()
            cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
            if cluster:
                cpu += sum(cpu_of(p.pid) for p in procs) - held
            return t, cpu

        cmds = {
            "trawl scan": ([a.trawl, "scan", tree, "-q", "-j", str(workers * threads),
                            "--json", j("r1.json")], False),
            "trawl-dask --scheduler": ([sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", addr,
                                        tree, "-q", "--json", j("rd.json"), "--stats", j("st.json")], True),
        }
        # Dask's floor: a client that imports what trawl-dask imports, connects, and runs as
        # many tasks as the scan ran (listings, maps, their metadata, reducers) doing nothing.
        floor = [sys.executable, "-c", FLOOR, addr, "0"]
        got = {k: [] for k in cmds}
        own = []  # the cluster run's own seconds (its report: from the client's start of work)
        timed(*cmds["trawl-dask --scheduler"])  # warm-up: the workers import trawl
        own.clear()
        st = json.load(open(j("st.json")))
        floor[-1] = str(st["task_results"])
        cmds["Dask's floor (no-op tasks)"] = (floor, True)
        got["Dask's floor (no-op tasks)"] = []
        for _ in range(a.runs):
            for k, (cmd, cluster) in cmds.items():
                got[k].append(timed(cmd, cluster))
        same(j("r1.json"), j("rd.json"), "running cluster")
        one = json.load(open(j("r1.json")))
        print(f"\n{tree}: {one['totals']['bytes'] / 2**30:.2f} GiB; a running scheduler and "
              f"{workers} workers of {threads} thread(s) (their start not counted) against trawl scan "
              f"-j{workers * threads}; reports equal")
        base_t = statistics.median(t for t, _ in got["trawl scan"])
        base_c = statistics.median(c for _, c in got["trawl scan"])
        print(f"  {'command':<24} {'median s':>9} {'CPU s':>7} {'wall vs one':>12} {'CPU vs one':>11}")
        for k, v in got.items():
            t = statistics.median(x for x, _ in v)
            cpu = statistics.median(x for _, x in v)
            print(f"  {k:<24} {t:>9.2f} {cpu:>7.2f} {t / base_t:>11.2f}x {cpu / base_c:>10.2f}x")
        floor_c = statistics.median(c for _, c in got["Dask's floor (no-op tasks)"])
        print(f"  Dask's floor: {st['task_results']} no-op tasks and a client's start cost "
              f"{floor_c:.2f} CPU s; trawl scan's CPU plus that floor is "
              f"{(base_c + floor_c) / base_c:.2f}x trawl scan's (the goal: 1.25x)")
        imp = run([sys.executable, "-c", "import trawl.cluster, distributed"])
        print(f"  the cluster run's own seconds (its report, after the client started): "
              f"{statistics.median(own):.2f} s, {statistics.median(own) / base_t:.2f}x; "
              f"the client's Python importing trawl and distributed alone: {imp:.2f} s")
        return {k: (statistics.median(x for x, _ in v), statistics.median(x for _, x in v))
                for k, v in got.items()}
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a worker retrying its gone scheduler
                p.kill()
                p.wait()


def mixed(a, dask, j):
    cmds = {
        "trawl scan": [a.trawl, "scan", a.mixed, "-q", "--json", j("one.json")],
        "trawl-dask, 16 partitions": dask + ["--partitions", "16", a.mixed, "-q", "--json", j("p16.json"), "--stats", j("p16.stats")],
        "trawl-dask, 256 partitions": dask + ["--partitions", "256", a.mixed, "-q", "--json", j("p256.json"), "--stats", j("p256.stats")],
    }
    times = {k: [] for k in cmds}
    runs = {16: [], 256: []}  # the cluster's own seconds (its report), and its phases
    for _ in range(a.runs):
        for k, c in cmds.items():
            times[k].append(run(c))
        for p in runs:
            runs[p].append((json.load(open(j(f"p{p}.json")))["totals"]["seconds"], json.load(open(j(f"p{p}.stats")))))
    same(j("one.json"), j("p16.json"), "16 partitions")
    same(j("one.json"), j("p256.json"), "256 partitions")
    one = json.load(open(j("one.json")))
    gib = one["totals"]["bytes"] / 2**30
    print(f"\n{a.mixed}: {one['totals']['files']} files, {gib:.2f} GiB (reports equal: reduction and totals)")
    base = statistics.median(times["trawl scan"])
    print(f"  {'command':<28} {'median s':>9} {'GiB/s':>7} {'vs one machine':>15}")
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"  {k:<28} {m:>9.2f} {gib / m:>7.2f} {m / base:>14.2f}x")
    for p in (16, 256):
        s = json.load(open(j(f"p{p}.stats")))
        ss = s["shard_seconds"]
        own = statistics.median(r[0] for r in runs[p])
        phases = {k: statistics.median(r[1]["phase_seconds"][k] for r in runs[p]) for k in s["phase_seconds"]}
        print(
            f"  {p} partitions, without the cluster's start (the run's own seconds): {own:.2f} s, "
            f"{own / base:.2f}x one machine; phases: " + ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
        )
        print(
            f"  {p} partitions: {s['shards']} shards; "
            f"{s['fingerprints']:,} fingerprints in {s['batch_bytes']:,} bytes = "
            f"{s['bytes_per_fingerprint']:.2f} bytes each (a record per block: {s['naive_bytes']:,} bytes, "
            f"{s['naive_bytes'] / s['batch_bytes']:.1f}x more); {s['task_results']:,} task results "
            f"(a message per block: {s['naive_messages']:,}); the reducers held at most "
            f"{s['reducer_held_bytes_max'] / 2**20:.1f} MiB each ({s['reducers']} reduce tasks); "
            f"shard seconds min/median/p90/max {ss['min']:.2f}/{ss['median']:.2f}/{ss['p90']:.2f}/{ss['max']:.2f}"
        )



def files(a, dask, j):
    if not os.path.isdir(a.files):
        print(f"\n{a.files}: missing (bench/files.py makes it); skipped")
        return
    cmds = {
        "trawl scan": [a.trawl, "scan", a.files, "-q", "-d", "xxh3", "--no-reduce", "--json", j("f1.json")],
        "trawl-dask": dask + [a.files, "-q", "-d", "xxh3", "--no-reduce", "--json", j("fd.json"), "--stats", j("fd.stats")],
    }
    times = {k: [] for k in cmds}
    walks = []
    for _ in range(a.runs):
        for k, c in cmds.items():
            times[k].append(run(c))
        walks.append(json.load(open(j("fd.stats")))["walk"])
    same(j("f1.json"), j("fd.json"), "small files")
    n = json.load(open(j("f1.json")))["totals"]["files"]
    w = statistics.median(x["seconds"] for x in walks)
    print(f"\n{a.files}: {n:,} files, -d xxh3 --no-reduce (reports equal)")
    base = statistics.median(times["trawl scan"])
    for k, ts in times.items():
        m = statistics.median(ts)
        print(f"  {k:<28} {m:>7.2f} s {n / m:>10,.0f} files/s {m / base:>6.2f}x")
    print(
        f"  distributed walk alone: {w:.2f} s, {n / w:,.0f} files/s "
        f"({walks[-1]['listing_tasks']} listing tasks of up to 32 directories)"
    )


def audits(a, j):
    dask = [sys.executable, "-m", "trawl.cluster", "audit", "--local", "2"]
    for tree in (a.mixed, a.files):
        if not os.path.isdir(tree):
            print(f"\n{tree}: missing; skipped")
            continue
        cmds = {}
        for n in (1, 2):
            cmds[f"trawl audit #{n}"] = [a.trawl, "audit", tree, "-q", "-c", j("one.db"), "--json", j(f"a1-{n}.json")]
            cmds[f"trawl-dask audit #{n}"] = dask + [tree, "-q", "-c", j("dask.db"), "--json", j(f"ad-{n}.json"), "--stats", j(f"ad-{n}.stats")]
        times = {k: [] for k in cmds}
        own = {n: [] for n in (1, 2)}  # the cluster audit's own seconds (its report: no start)
        for _ in range(a.runs):
            for db in ("one.db", "dask.db"):
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(j(db + suffix)):
                        os.unlink(j(db + suffix))
            for k, c in cmds.items():
                times[k].append(run(c))
            for n in (1, 2):
                own[n].append(json.load(open(j(f"ad-{n}.json")))["seconds"])
        for n in (1, 2):
            w, g = json.load(open(j(f"a1-{n}.json"))), json.load(open(j(f"ad-{n}.json")))
            for k in ("counts", "files_read", "bytes_read", "status"):
                assert w[k] == g[k], (tree, n, k, w[k], g[k])
        r = json.load(open(j("a1-1.json")))
        s = json.load(open(j("ad-1.stats")))
        print(
            f"\n{tree}: audits, {r['files_read']:,} files, {r['bytes_read'] / 2**30:.2f} GiB "
            f"(#1 registers, #2 verifies; counts equal)"
        )
        print(f"  {'command':<24} {'median s':>9} {'files/s':>10} {'vs one machine':>15}")
        for n in (1, 2):
            base = statistics.median(times[f"trawl audit #{n}"])
            for k in (f"trawl audit #{n}", f"trawl-dask audit #{n}"):
                m = statistics.median(times[k])
                print(f"  {k:<24} {m:>9.2f} {r['files_read'] / m:>10,.0f} {m / base:>14.2f}x")
            m = statistics.median(own[n])
            print(f"  {'  without its start':<24} {m:>9.2f} {r['files_read'] / m:>10,.0f} {m / base:>14.2f}x")
        print(
            f"  trawl-dask #1: {s['walk']['listing_tasks']} listing tasks, {s['reads']['shards']} read tasks "
            f"(at most {s['reads']['shard_files_max']} files / {s['reads']['shard_bytes_max'] / 2**20:.0f} MiB each)"
        )


if __name__ == "__main__":
    main()
