#!/usr/bin/env python3
"""bench/shuffle: two ways for a Dask cluster to move M maps' outputs to R reducers, measured on
the same cluster and the same bytes in one run (the choice in docs/decisions/0009).

  pieces  what trawl-dask does today: M map tasks, then one task per (map, reducer) that cuts
          the map's output to the reducer's share, then R reduce tasks, each depending on its M
          pieces (Dask moves each piece from the map's worker to the reducer's).
  gather  M map tasks, then R reduce tasks, each fetching its share of every map's output
          straight from the worker holding it (a handler a WorkerPlugin adds to every worker),
          in parallel; the scheduler sees only the map and reduce tasks.

Each map's output is R shares of --kib KiB of random bytes (what a map ships per reducer);
each reducer returns the bytes it got. Rounds interleaved; per shuffle: the median wall time
of the whole run (maps submitted to every reducer's result on the client), and the scheduler
tasks it ran (transitions to processing, counted by a SchedulerPlugin). A ratio above 1: gather is faster.

    python3 bench/shuffle.py [--workers N] [--maps M] [--reducers R] [--kib K] [--runs N]
"""

import argparse
import os
import statistics
import time


def make_output(i, reducers, kib):
    """A map's output: one share per reducer."""
    return [os.urandom(kib << 10) for _ in range(reducers)]


def cut(output, r):
    return output[r]


def reduce_pieces(*pieces):
    return sum(len(p) for p in pieces)


async def reduce_gather(r, where):
    """Fetches share ``r`` of every map's output from the worker holding it, all at once."""
    import asyncio

    from distributed import get_worker

    w = get_worker()

    async def one(key, addr):
        if addr == w.address:
            return w.data[key][r]
        return await w.rpc(addr).trawl_share(key=key, r=r)

    got = await asyncio.gather(*[one(k, a) for k, a in where])
    return sum(len(x) for x in got)


def main():
    from distributed import Client, LocalCluster, SchedulerPlugin, WorkerPlugin

    class Shares(WorkerPlugin):
        """Adds the handler a reducer calls for its share of a map's output."""

        name = "trawl-shares"

        def setup(self, worker):
            def share(key, r):
                return worker.data[key][r]

            worker.handlers["trawl_share"] = share

    class Count(SchedulerPlugin):
        name = "trawl-count"

        def __init__(self):
            self.tasks = 0

        def transition(self, key, start, finish, *args, **kwargs):
            # Every task the scheduler sends to a worker to run.
            if finish == "processing":
                self.tasks += 1

    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--maps", type=int, default=64)
    ap.add_argument("--reducers", type=int, default=32)
    ap.add_argument("--kib", type=int, default=16)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    M, R = a.maps, a.reducers
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as lc, Client(lc) as c:
        c.register_plugin(Shares())
        c.register_plugin(Count())

        def tasks():
            return c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["trawl-count"].tasks)

        def pieces(n):
            maps = [c.submit(make_output, i, R, a.kib, key=f"map-p{n}-{i}", pure=False) for i in range(M)]
            cuts = [[c.submit(cut, m, r, key=f"piece-{n}-{i}-{r}") for i, m in enumerate(maps)]
                    for r in range(R)]
            reds = [c.submit(reduce_pieces, *cuts[r], key=f"reduce-p{n}-{r}") for r in range(R)]
            return sum(c.gather(reds))

        def gather(n):
            from distributed import wait

            maps = [c.submit(make_output, i, R, a.kib, key=f"map-g{n}-{i}", pure=False) for i in range(M)]
            wait(maps)
            who = c.who_has(maps)
            where = [(m.key, who[m.key][0]) for m in maps]
            reds = [c.submit(reduce_gather, r, where, key=f"reduce-g{n}-{r}") for r in range(R)]
            return sum(c.gather(reds))

        want = M * R * (a.kib << 10)
        walls = {"pieces": [], "gather": []}
        made = {}
        for n in range(a.runs + 1):
            for name, fn in (("pieces", pieces), ("gather", gather)):
                before = tasks()
                t = time.perf_counter()
                got = fn(n)
                dt = time.perf_counter() - t
                assert got == want, (name, got, want)
                made[name] = tasks() - before
                if n:  # the first round warms up
                    walls[name].append(dt)
        med = {k: statistics.median(v) for k, v in walls.items()}
        print(f"{a.workers} workers, {M} maps x {R} reducers, {a.kib} KiB per share "
              f"({want / 2**20:.0f} MiB moved); median of {a.runs}, rounds interleaved")
        print(f"{'shuffle':<8} {'median s':>9} {'scheduler tasks':>16}")
        for k in ("pieces", "gather"):
            print(f"{k:<8} {med[k]:>9.3f} {made[k]:>16}")
        print(f"pieces / gather: {med['pieces'] / med['gather']:.2f}x")


if __name__ == "__main__":
    main()
