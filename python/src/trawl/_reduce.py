"""A trawl-dask scan's reduce phase: reduce tasks over ranges of fingerprint partitions, each
fetching its share of every map's result from the worker holding it (no task per map and
reducer: each costs the scheduler a few milliseconds, see bench/shuffle.py); a reducer whose
shares were lost with a worker runs again once the maps are back; a map's batch a reducer
refuses ends the run, naming its shard and worker; then every shard's records and totals are
merged, in map order."""

import json
import os
import time

from ._common import Fatal, _scheduler_lost
from ._tasks import BatchRefused, SharesLost, _reduce

#: Times the maps' results are had again after a loss before a reducer's loss ends the run.
RECOVERIES = 5


class Reduce:
    """The reduce phase of one run (``run``: its `Run`), over ``maps`` (each shard's map task,
    None for a resumed shard) and ``shards``."""

    def __init__(self, run, maps, shards):
        self.run_ = run
        self.client = run.client
        self.maps = maps
        self.shards = shards
        # Where every shard's result is: (its key, the worker holding it), in map order.
        self.where = []
        # How many times the maps' results were had again after a loss.
        self.recovered = 0
        self.delay = float(os.environ.get("TRAWL_DASK_REDUCE_DELAY", "0") or 0)
        self.reducers = []
        # Each reducer's result, taken as it finishes (see `take`).
        self.got = []
        # Reducer key -> its place; and the recovery its inputs are from.
        self.which = {}
        self.made_after = {}

    def locate(self):
        """Where every shard's result is now (after a loss: once Dask has it again, or, for a
        resumed shard, once it is sent again from its checkpoint)."""
        from distributed import wait
        from distributed.client import FuturesCancelledError

        r = self.run_
        for attempt in range(5):
            r.recover(self.shards)
            results = [r.early[s["key"]][1] for s in self.shards]
            try:
                # Under the watchdog: a result lost with a worker may be computed again on one
                # that freezes.
                while True:
                    try:
                        wait(results, timeout=1.0)
                        break
                    except TimeoutError:
                        r.keep_watch(results)
            except FuturesCancelledError as e:
                if _scheduler_lost(e, self.client) or attempt == 4:
                    raise
                continue
            who = self.client.who_has(results)
            self.where[:] = [(f.key, (who.get(f.key) or [""])[0]) for f in results]
            return

    def submit(self, i, attempt=0):
        """Reducer ``i`` (its range of partitions), run again after ``attempt`` recoveries."""
        r = self.run_
        lo, hi = r.bounds[i]
        return self.client.submit(
            _reduce, lo, hi, list(self.where), r.run_key, self.delay if not attempt else 0.0,
            r.o.worker_timeout,
            key=f"trawl-reduce-{r.run_key}-{lo}" + (f"-again{attempt}" if attempt else ""),
        )

    def refused(self, e):
        """The message that ends the run when a reducer refused a map's batch."""
        shard = self.shards[e.map]
        m = self.maps[e.map]
        who = (self.client.who_has([m]).get(m.key) if m is not None else None) or [self.run_.source_of(shard)]
        return (f"partition {e.partition}: shard {shard['key']} (from {', '.join(who)}): "
                f"{e.why}{self.run_.delete_hint(shard)}")

    def take(self, f):
        """A finished reducer's result, taken and let go at once; a reducer whose shares were
        lost runs again once the maps are back (more futures to wait for). Any other future
        that failed ends the run, naming it."""
        if f.key in self.which and f.status == "finished":
            # Fetched at once and let go: a worker that dies later, holding a finished
            # reducer's result, takes nothing the run still needs (Dask would compute the
            # reducer again, from map results lost with that worker).
            try:
                self.got[self.which[f.key]] = self.run_.fetch(f)
                f.release()
                self.run_.step(sum(g is not None for g in self.got), len(self.got))
                return None
            except SharesLost:
                pass
            except Exception:  # noqa: BLE001 - a cancellation is sorted just below
                if f.status != "cancelled":
                    raise
        if f.key in self.which and f.status == "error" and isinstance(f.exception(), BatchRefused):
            raise Fatal(self.refused(f.exception()))
        if f.key in self.which and self.lost(f):
            # A share was lost with a worker: the maps' results are had again (Dask reads a
            # lost shard again; a resumed one is sent again from its checkpoint), once for
            # every reducer that lost them, and the reducer runs again.
            if self.made_after[f.key] == self.recovered and self.recovered < RECOVERIES:
                self.locate()
                self.recovered += 1
            if self.made_after[f.key] < self.recovered:
                i = self.which.pop(f.key)
                again = self.submit(i, self.recovered)
                self.reducers[i] = again
                self.which[again.key] = i
                self.made_after[again.key] = self.recovered
                return [again]
        self.run_.failed(f, self.run_.what.get(f.key, f.key))
        return None

    @staticmethod
    def lost(f):
        """Whether reducer ``f`` lost its inputs with a worker (its shares, or itself)."""
        if f.status == "cancelled":
            return True
        return f.status == "error" and isinstance(f.exception(), SharesLost)

    def run(self):
        """Counts every partition and merges every shard: the merger, each shard's (seconds,
        fingerprints shipped, non-zero blocks), the reducers' results, every partition's counts
        in order."""
        r = self.run_
        # Tests only: once every reducer has finished, the directory this names is made and the
        # run waits (a minute at most) until it is gone, before the merge.
        pause = os.environ.get("TRAWL_DASK_MERGE_PAUSE")
        metas = [r.early[s["key"]][0] for s in self.shards]
        self.locate()
        self.reducers = [self.submit(i) for i in range(len(r.bounds))]
        self.got = [None] * len(self.reducers)
        self.which = {f.key: i for i, f in enumerate(self.reducers)}
        self.made_after = {f.key: 0 for f in self.reducers}
        r.step(0, len(self.reducers))
        # A resumed shard's metadata is here already (a dict); the others' come from tasks.
        tasks = [(i, m) for i, m in enumerate(metas) if not isinstance(m, dict)]
        # A pinned shard whose result was lost with its host is read again there: the watchdog
        # goes on watching those hosts through the shards' metadata tasks.
        r.root_of = {m.key: self.shards[i]["root"] for i, m in tasks}
        for i, m in tasks:
            s = self.shards[i]
            r.what[m.key] = f"shard {s['key']} ({len(s['files'])} files from {os.fsdecode(s['files'][0])})"
        pending = {m.key: i for i, m in tasks}
        merged = [m if isinstance(m, dict) else None for m in metas]

        def done(f):
            more = self.take(f)
            if f.key in pending:
                merged[pending.pop(f.key)] = f
            return more

        r.drain(self.reducers + [m for _, m in tasks], done)
        if pause:
            os.mkdir(pause)
            t = time.time()
            while os.path.exists(pause) and time.time() - t < 60:
                time.sleep(0.05)
        merger, seconds = self.merge(merged)
        r.stats["reduces_again"] = self.recovered
        r.stats.setdefault("resent_shards", 0)
        r.stats.setdefault("silent_workers", 0)
        r.stats["reducers"] = len(self.reducers)
        counts = []
        for got in self.got:
            counts += got["counts"]
        return merger, seconds, self.got, counts

    def check_counted(self, i, m):
        """Shard ``i``'s metadata ``m`` is of the result the reducers counted: a map computed
        again after its worker was lost (for a reducer that ran again, or for the merge) reads
        its files again, and files changed during the run give another result; the report would
        mix two readings. Every reducer must have counted the same result, and the metadata
        merged must be of it (by the digest of the map's whole output); else the run ends."""
        counted = {got["digests"][i] for got in self.got}
        if len(counted) <= 1 and (not counted or m.get("digest") in counted):
            return  # no reducer (no reduction asked for), or all of one result, the merged one
        shard = self.shards[i]
        raise Fatal(
            f"shard {shard['key']} ({len(shard['files'])} files from {os.fsdecode(shard['files'][0])}): "
            f"read again after its worker was lost, it gave another result than the one counted (its "
            f"files changed during the run?); the report would mix the two: no manifest or report "
            f"was written"
        )

    def merge(self, merged):
        """Every shard's records and totals merged, one at a time, in map order (the partitions
        number files by their map's place), each let go once merged: the merger, and each
        shard's (seconds, fingerprints shipped, non-zero blocks)."""
        r = self.run_
        merger = r.plan.merge()
        seconds = []
        r.doing = "merge"
        for i, f in enumerate(merged):
            r.step(i, len(merged))
            m = f if isinstance(f, dict) else r.fetch(f)
            shard = self.shards[i]
            self.check_counted(i, m)
            # The walk says which worker listed a file its reader could not find or open (a
            # resumed shard was read by a worker of another run: not compared).
            walk = None if isinstance(f, dict) else r.found
            try:
                merger.add(m["report"], m["records"], m["totals"], m.get("worker_label") or m.get("worker"), walk)
                t = json.loads(m["totals"])
            except ValueError as e:
                raise Fatal(f"shard {shard['key']}: {r.source_of(shard)} does not decode "
                            f"({str(e).strip()}){r.delete_hint(shard)}")
            blocks = sum(w["blocks"] - w["zero_blocks"] for w in t["ways"])
            seconds.append((m["seconds"], t.get("fingerprints", 0), blocks))
            r.timeline.append((m.get("worker"), round(m.get("began", 0) - r.maps_began, 3), round(m["seconds"], 3)))
            if not isinstance(f, dict):
                f.release()
        return merger, seconds
