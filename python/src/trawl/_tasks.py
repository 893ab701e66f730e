"""What runs on trawl-dask's workers: listing, map and reduce tasks, the plugin that serves
the maps' shares to the reduce tasks, and an audit's listing and read tasks. Module-level, so
that Dask pickles them by reference: a worker runs the trawl it has installed (its version is
checked before and in every map)."""

import hashlib
import json
import pickle
import time

def _worker_here():
    """This worker's address, and how failures name it: its name and address (the address
    alone when it has no name of its own); "client" for both outside a worker."""
    from distributed import get_worker

    try:
        w = get_worker()
    except ValueError:
        return "client", "client"
    name = str(w.name) if w.name is not None else ""
    return w.address, w.address if not name or name == w.address else f"{name} ({w.address})"


def _list(args, idx, dirs):
    """Lists root number ``idx`` (``dirs`` None) or each of ``dirs``, depth first within a
    task's budget: one bytes object (Dask sends each bytes object of a result as a frame of
    its own, and tens of thousands of names cost seconds that way), and the worker that listed."""
    from trawl import _native as n

    return n.Plan(args).list(idx, dirs), _worker_here()[1]


def _same_version(expect):
    """Refuses to work for a client of another version: a worker that joined after the check
    at the start is checked here, by the first task it runs."""
    from trawl import _native as n

    mine = n.wire_version()
    if expect is not None and mine != expect:
        try:
            from distributed import get_worker

            where = get_worker().address
        except ValueError:
            where = "this worker"
        raise RuntimeError(
            f"worker {where} runs {mine}; the client runs {expect}: refusing to mix versions"
        )


def _map(args, files, partitions, delay, expect=None):
    """One shard's map (``files``: its names joined by NUL, one bytes object); ``delay`` (seconds before reading, TRAWL_DASK_MAP_DELAY) is a knob
    for fault tests, to have a worker die mid-shard; ``expect``: the client's wire version."""
    from trawl import _native as n

    _same_version(expect)
    if delay:
        time.sleep(delay)
    t = time.perf_counter()
    began = time.time()
    files = files.split(b"\0") if files else []
    report, records, totals, parts = n.Plan(args).map(files, partitions)
    where, label = _worker_here()
    out = {
        "report": report,
        "records": records,
        "totals": totals,
        "parts": parts,
        "seconds": time.perf_counter() - t,
        "began": began,
        "worker": where,
        "worker_label": label,
    }
    out["digest"] = _output_digest(out)
    return out


def _output_digest(result):
    """A digest of a map's whole output (its report, records, totals and every partition's
    batches): a map computed again (its worker lost) must give the result the reducers counted,
    and the client checks it by this, shard by shard."""
    h = hashlib.blake2b(digest_size=16)
    blobs = [result["report"], result["records"], result["totals"], *result["parts"]]
    h.update(len(blobs).to_bytes(8, "little"))
    for b in blobs:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


class SharesLost(RuntimeError):
    """A reduce task could not fetch a map's share (its worker gone, or the result lost with
    it): the client runs the reduce again once the maps are back."""


class BatchRefused(RuntimeError):
    """A reduce task refused map ``map``'s batch of partition ``partition`` (``why``): made by
    another configuration or damaged. The client ends the run, naming that map's shard."""

    def __init__(self, map, partition, why):
        super().__init__(map, partition, why)
        self.map, self.partition, self.why = map, partition, why

    def __str__(self):
        return f"partition {self.partition}: map {self.map}: {self.why}"


def _shares_handler(run_key):
    """The name of the handler that serves run ``run_key``'s shares on its workers."""
    return f"trawl_shares_{run_key}"


def _shares_plugin(run_key):
    """The worker plugin that serves one run's map shares to its reduce tasks (made here, so
    that only workers import Dask's plugin class): registered under the run's key, serving
    only that run's map results, and removed (with its handler) when the run ends."""
    from distributed import WorkerPlugin

    handler = _shares_handler(run_key)
    mine = (f"trawl-map-{run_key}-", f"trawl-spec-{run_key}-", f"trawl-resumed-{run_key}-")

    class Shares(WorkerPlugin):
        """Adds the run's handler: partitions lo..hi of the run's map results this worker
        holds, each with the digest of the result they are taken from; any other key is
        refused."""

        name = f"trawl-shares-{run_key}"

        def setup(self, worker):
            def shares(comm=None, keys=(), lo=0, hi=0):
                bad = [k for k in keys if not str(k).startswith(mine)]
                if bad:
                    raise KeyError(f"not a map result of run {run_key}: {bad[0]}")
                # As `_share` does, written out: the plugin travels by value, and a worker of
                # another trawl (refused by its first map) must still be able to load it.
                return [(worker.data[k].get("digest"), worker.data[k]["parts"][lo:hi]) for k in keys]

            worker.handlers[handler] = shares

        def teardown(self, worker):
            worker.handlers.pop(handler, None)

    return Shares()


def _share(result, lo, hi):
    """Partitions lo..hi of a map's result, and the digest of the whole result."""
    return result.get("digest"), result["parts"][lo:hi]


def _gather(where, lo, hi, run_key, deadline=60.0):
    """Partitions lo..hi of every map's result (``where``: (key, worker) per map, in map
    order), fetched from the workers holding them past the scheduler: one request per worker,
    for all of its maps, every worker at once. Returns, per map, the digest of the result its
    share was taken from, and the shares."""
    import asyncio

    from distributed import get_worker
    from distributed.utils import sync

    w = get_worker()
    # Where they are now: a worker that died since the client looked would cost a connection
    # attempt of Dask's timeout (30 s) before the fetch fails.
    keys = [k for k, _ in where]
    try:
        from distributed import get_client

        c = get_client()
        now = c.sync(c.scheduler.who_has, keys=keys)
    except Exception as e:
        raise SharesLost(f"{type(e).__name__}: {e}") from None
    by_worker = {}
    for i, key in enumerate(keys):
        held = now.get(key) or []
        if not held:
            raise SharesLost(f"the result {key} is held by no worker")
        addr = w.address if w.address in held else held[0]
        by_worker.setdefault(addr, []).append((i, key))

    async def one(addr, items):
        keys = [k for _, k in items]
        if addr == w.address and all(k in w.data for k in keys):
            return [_share(w.data[k], lo, hi) for k in keys]
        request = getattr(w.rpc(addr), _shares_handler(run_key))(keys=keys, lo=lo, hi=hi)
        try:
            return await asyncio.wait_for(request, deadline)
        except asyncio.TimeoutError:
            raise SharesLost(f"worker {addr} did not answer within {deadline:g} s (--worker-timeout)") from None

    async def every():
        return await asyncio.gather(*[one(a, items) for a, items in by_worker.items()])

    try:
        got = sync(w.loop, every)
    except Exception as e:
        raise SharesLost(f"{type(e).__name__}: {e}") from None
    digests, out = [None] * len(where), [None] * len(where)
    for (addr, items), shares in zip(by_worker.items(), got):
        for (i, _), (digest, share) in zip(items, shares):
            digests[i], out[i] = digest, share
    return digests, out


async def _drop_silent(dask_scheduler=None, seconds=60.0):
    """Run on the scheduler: removes the workers it has not heard from for ``seconds`` (a frozen
    process; Dask itself waits for its worker-ttl, 5 minutes by default), so that their tasks
    and the results only they held are computed elsewhere. Returns their addresses."""
    now = time.time()
    silent = sorted(a for a, ws in dask_scheduler.workers.items() if now - ws.last_seen > seconds)
    for a in silent:
        await dask_scheduler.remove_worker(address=a, stimulus_id=f"trawl-silent-{now}", close=False)
    return silent


def _meta(result):
    return {k: v for k, v in result.items() if k != "parts"}


def _reduce(lo, hi, where, run_key, delay=0.0, deadline=60.0):
    """Counts partitions lo..hi-1, one at a time, from every map's share, fetched first (in map
    order): what the task holds at once is its maps' encoded batches and one partition
    decoded. ``delay`` (seconds before fetching, TRAWL_DASK_REDUCE_DELAY) is a knob for fault
    tests, to have a map's worker die before its share is fetched."""
    import resource

    from trawl import _native as n

    if delay:
        time.sleep(delay)
    t = time.perf_counter()
    digests, pieces = _gather(where, lo, hi, run_key, deadline)
    out = []
    for i in range(len(pieces[0]) if pieces else 0):
        try:
            counts = n.reduce_partition([p[i] for p in pieces])
        except n.BatchError as e:
            bad, why = e.args
            raise BatchRefused(bad, lo + i, why) from None
        out.append(counts)
    return {
        "counts": out,
        # Per map, the digest of the result counted: the client checks that every reducer and
        # the merge had the same one.
        "digests": digests,
        "held_bytes": max((json.loads(c).get("held_bytes", 0) for c in out), default=0),
        "input_bytes": sum(len(b) for p in pieces for b in p),
        "seconds": time.perf_counter() - t,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def _audit_list(args, spec, idx, dirs):
    """An audit's listing of root number ``idx`` (``dirs`` None) or of each of ``dirs``, within
    a listing task's budget: (each directory's listing, the directories left), pickled."""
    from trawl import _native as n

    items, subdirs = n.AuditWorker(args).list_task(spec, idx, dirs)
    return pickle.dumps((items, subdirs), protocol=pickle.HIGHEST_PROTOCOL)


def _audit_read(args, shard, delay, expect=None):
    """An audit's reads of one shard of its plan (``delay`` and ``expect``: as for ``_map``)."""
    from trawl import _native as n

    _same_version(expect)
    if delay:
        time.sleep(delay)
    t = time.perf_counter()
    reads = n.AuditWorker(args).read(shard)
    return {"reads": reads, "seconds": time.perf_counter() - t}
