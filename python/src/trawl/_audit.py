"""trawl-dask audit's client: ``trawl audit`` run here, catalog and all, its walk and reads
done by tasks on the workers."""

import os
import pickle
import secrets
import socket
import statistics
import sys
import time

from . import _native
from ._common import Fatal, _say, _write_run_file
from ._cluster import _Cluster
from ._tasks import _audit_list, _audit_read

class Audit(_Cluster):
    """One trawl-dask audit: trawl audit runs here, with the catalog; its walk and its reads
    are tasks on the workers, pulled from the two generators below as it records them."""

    def __init__(self, opts, audit_args):
        super().__init__(opts)
        self.args = [os.fsencode(a) for a in audit_args]
        try:
            # --exclude-from is read here, once: the workers get its patterns.
            self.args = [bytes(a) for a in _native.worker_args("audit", self.args)]
        except ValueError as e:
            raise Fatal(str(e).strip())
        # The run's own key, for its task keys: two audits on one cluster share no task.
        self.run_key = secrets.token_hex(8)
        # Opened before any cluster is contacted, as the audit's own outputs are opened before
        # anything is read: a bad path costs nothing.
        self.stats_file = None
        if opts.stats:
            try:
                self.stats_file = _native.open_audit_output(self.args, "--stats", os.fsencode(opts.stats))
            except ValueError as e:
                raise Fatal(str(e).strip())

    def quiet(self):
        # trawl audit's -q, as its flags read it (one rule, in Rust).
        return _native.audit_quiet(self.args)

    def walk(self, spec, roots):
        """Yields the listings of the roots, as listing tasks (a few directories each) end."""
        from distributed import as_completed

        n = 0
        root_of, what = {}, {}

        def submit(idx, dirs):
            nonlocal n
            n += 1
            f = self.client.submit(_audit_list, self.args, spec, idx, dirs, key=f"trawl-audit-list-{self.run_key}-{n}")
            root_of[f.key] = idx
            what[f.key] = f"listing under root {idx}" if dirs is None else f"listing {os.fsdecode(dirs[0])}"
            return f

        t = time.perf_counter()
        ac = as_completed([submit(i, None) for i in range(roots)])
        try:
            while not ac.is_empty():
                f = self.next_done(ac)
                self.failed(f, what[f.key])
                idx = root_of.pop(f.key)
                items, dirs = pickle.loads(self.fetch(f))
                f.release()
                step = _native.listing_batch(len(dirs), self.stats.get("workers", 1))
                for i in range(0, len(dirs), step):
                    ac.add(submit(idx, dirs[i : i + step]))
                yield from items
        finally:
            ac.clear()
        self.stats["walk"] = {"seconds": time.perf_counter() - t, "listing_tasks": n}

    def read(self, feed):
        """Yields the reads of the plan's files, a shard per task, as the tasks end; at most
        two shards a worker are out at once, so that the budget and a stop are kept to."""
        from distributed import as_completed

        nw = max(1, self.stats.get("workers", 1))
        # About four shards a worker (the slowest cannot hold the run back), within the flags:
        # a scan's shards' rule.
        max_files, max_bytes = feed.caps(self.o.shard_size, self.o.shard_files, nw)
        delay = float(os.environ.get("TRAWL_DASK_MAP_DELAY", "0") or 0)
        ac = as_completed()
        live, n, seconds = 0, 0, []
        what = {}
        t = time.perf_counter()

        def fill():
            nonlocal live, n
            while live < 2 * nw:
                shard = feed.next(max_files, max_bytes)
                if shard is None:
                    return
                n += 1
                f = self.client.submit(_audit_read, self.args, shard, delay, self.wire,
                                       key=f"trawl-audit-read-{self.run_key}-{n}")
                what[f.key] = f"shard {n}"
                ac.add(f)
                live += 1

        try:
            fill()
            while live:
                f = self.next_done(ac)
                live -= 1
                self.failed(f, what.pop(f.key))
                r = self.fetch(f)
                f.release()
                seconds.append(r["seconds"])
                fill()
                yield r["reads"]
        finally:
            ac.clear()
        self.stats["reads"] = {
            "seconds": time.perf_counter() - t,
            "shards": n,
            "shard_seconds_max": max(seconds, default=0),
            "shard_files_max": max_files,
            "shard_bytes_max": max_bytes,
        }

    def run_on_cluster(self):
        self.check_versions()
        code = _native.audit(self.args, self.walk, self.read)
        self.say_worker_changes()
        if self.stats_file is not None:
            _write_run_file(self.stats_file, self.stats)
        return code
