"""trawl-dask scan's client: the walk by listing tasks, the shards, the maps (watched,
speculated, checkpointed), the reduce tasks past the scheduler, and the outputs written by
trawl's own writers."""

import hashlib
import os
import pickle
import secrets
import statistics
import sys
import time

from . import _native
from ._checkpoints import _private_dir
from ._cluster import _Cluster
from ._common import Fatal, _say, _write_run_file
from ._progress import Progress, human_bytes, human_duration
from ._reduce import Reduce
from ._scan_checkpoints import _Checkpoints
from ._scan_workers import _Workers
from ._tasks import _list, _map, _meta, _reduce, _shares_plugin

def _located(root):
    """Whether ``root`` (bytes) means the same on every machine: an absolute path, or an
    ``s3://`` prefix (never looked at here: the workers list and read it)."""
    return os.path.isabs(root) or bytes(root).startswith(b"s3://")


def _absolute_roots(args):
    """``args`` (trawl scan's) with each relative PATH made absolute (from this process's
    directory): the arguments the plan places the paths at, and no other; an ``s3://`` root
    names the same objects everywhere and is kept as given."""
    args = list(args)
    for i in _native.Plan(args).path_places():
        if i is not None and not _located(args[i]):
            args[i] = os.fsencode(os.path.abspath(args[i]))
    return args


class Run(_Workers, _Checkpoints, _Cluster):
    """One trawl-dask scan."""

    def __init__(self, opts, scan_args):
        super().__init__(opts)
        # Roots: PATH... as given, or the --on paths (each pinned to its host).
        self.pins = []  # per root: None or the host spec
        if opts.on:
            roots = []
            for spec in opts.on:
                if ":" not in spec:
                    raise Fatal(f"--on {spec!r}: expected HOST:PATH")
                host, path = spec.split(":", 1)
                roots.append(path)
                self.pins.append(host)
            scan_args = roots + scan_args
        self.args = [os.fsencode(a) for a in scan_args]
        try:
            # --exclude-from is read here, once: the workers get its patterns.
            self.args = [bytes(a) for a in _native.worker_args("scan", self.args)]
            self.plan = _native.Plan(self.args)
        except ValueError as e:
            raise Fatal(str(e).strip())
        self.roots = self.plan.roots()
        # A running cluster's workers (--scheduler, --scheduler-file) resolve a relative path in
        # their own directories, not this one: a relative root is made absolute here. A pinned
        # host's directory is not known here: refused by name. (A local cluster's workers start
        # here.)
        for root, pin in zip(self.roots, self.pins or [None] * len(self.roots)):
            if pin is not None and bytes(root).startswith(b"s3://"):
                raise Fatal(f"--on {pin}:{os.fsdecode(root)}: an s3:// prefix is read by every worker "
                            f"from the store: give it as a PATH, without --on")
            if not os.path.isabs(root) and pin is not None:
                raise Fatal(f"--on {pin}:{os.fsdecode(root)}: a relative path, which host {pin} "
                            f"would resolve in its own directory: give it from /")
        if opts.local is None and not all(_located(r) for r in self.roots):
            self.args = _absolute_roots(self.args)
            self.plan = _native.Plan(self.args)
            self.roots = self.plan.roots()
        if not self.pins:
            self.pins = [None] * len(self.roots)
        elif len(self.roots) != len(self.pins):
            raise Fatal("--on: give each HOST:PATH once, with no other PATH")
        # What decides a shard's result (not where outputs go, but what they need computed):
        # the checkpoints' key.
        self.result_args = [os.fsdecode(a) for a in self.plan.result_args()]
        self.computes = list(self.plan.computes())
        # The checkpoints are named by a hash of the result options, so that --resume finds
        # them.
        self.state_key = hashlib.blake2b(
            "\0".join(self.result_args).encode(errors="surrogateescape")
            + f"|{opts.partitions}|{','.join(self.computes)}".encode(),
            digest_size=8,
        ).hexdigest()
        # Everything on the cluster is named by a key of this run's own (task keys, the shares
        # plugin and handler, repins, scattered results): two runs with the same options on one
        # cluster share nothing, and one ending (which removes its handler) leaves the other be.
        self.run_key = secrets.token_hex(8)
        self.damaged = 0  # checkpoints refused by --resume (each named)
        self.sent = 0  # resumed shards' results sent to the workers
        self.saving = bool(opts.state)  # false once a checkpoint could not be written
        self.stats["partitions"] = opts.partitions
        self.root_of = {}  # task key -> root number, for the watchdog
        self.what = {}  # task key -> what it is, for messages
        self.lost = {}  # host -> since when it has had no worker
        self.speculated = 0
        self.dropped = set()  # keys of copies cancelled because the other copy won
        self.timeline = []  # (worker, start after the maps began, seconds) per shard
        self.resolved = {}  # host spec -> its address, or None
        self.pinned_keys = {}  # task key -> root number, for every task pinned by --on
        self.pin_addr = {}  # worker name given to --on -> the address its tasks are pinned to
        # The progress line (a terminal, no -q): what the run is doing, and how far it is.
        self.progress = Progress(False)
        self.doing = "versions"
        self.found = None  # the walk's `_native.Walk`, while it goes on
        self.shards_done = self.shards_total = 0
        self.bytes_done = self.bytes_total = 0
        self.resumed_bytes = 0  # taken from checkpoints, not read
        self.read_lately = []  # (time, bytes read this run) over the last seconds: the rate
        self.steps = (None, 0, 0, time.time())  # the reduce or the merge: (phase, done, of, since)
        self.open_outputs()

    def quiet(self):
        return self.plan.quiet()

    # -- the progress line --

    def tick(self):
        """Draws the progress line again (at most about once a second)."""
        self.progress.tick(self.describe)

    def describe(self):
        """The progress line's text: the phase, shards done of all, bytes read of all (by whole
        shards, as each finishes), the read rate over the last seconds, and the time left."""
        if self.doing == "versions":
            return "starting: the workers' versions, the shares handler on each"
        if self.doing == "walk":
            files, _ = self.found.counts() if self.found is not None else (0, 0)
            return f"walk: {files:,} files found"
        shards = f"{self.shards_done:,}/{self.shards_total:,} shards"
        read = f"{human_bytes(self.bytes_done)} of {human_bytes(self.bytes_total)}"
        if self.doing == "maps":
            now = time.time()
            lately = self.read_lately
            lately.append((now, self.bytes_done - self.resumed_bytes))
            while len(lately) > 1 and now - lately[0][0] > 10:
                lately.pop(0)
            secs = now - lately[0][0]
            rate = (lately[-1][1] - lately[0][1]) / secs if secs >= 0.5 else 0.0
            eta = human_duration((self.bytes_total - self.bytes_done) / rate) if rate > 0 else "-"
            speed = f"{human_bytes(rate)}/s" if rate > 0 else "-"
            return f"maps: {shards}, {read}, {speed}, ETA {eta}"
        _, done, of, since = self.steps
        eta = human_duration((time.time() - since) * (of - done) / done) if done else "-"
        what = "reduce tasks" if self.doing == "reduce" else "shards merged"
        return f"{self.doing}: {done:,}/{of:,} {what}; {shards}, {read}, ETA {eta}"

    def step(self, done, of):
        """The reduce's or the merge's progress: ``done`` of ``of`` (its time counted from its
        first step)."""
        phase, _, _, since = self.steps
        self.steps = (self.doing, done, of, since if phase == self.doing else time.time())
        self.tick()

    # -- the walk --

    def walk(self, excluded):
        """Lists the roots with listing tasks (each lists many directories and hands back the
        rest); what they find is taken in by a ``_native.Walk``, which leaves out ``excluded``
        (the outputs' (device, inode)) and cuts the files into shards."""
        found = self.found = _native.Walk(list(excluded))
        n = 0

        def submit(idx, dirs):
            nonlocal n
            n += 1
            f = self.client.submit(
                _list, self.args, idx, dirs, key=f"trawl-list-{self.run_key}-{n}", **self.pinned(idx)
            )
            self.root_of[f.key] = idx
            self.note_pin(f, idx)
            self.what[f.key] = f"listing under {os.fsdecode(self.roots[idx])}"
            return f

        def done(f):
            self.failed(f, self.what[f.key])
            listing, who = self.fetch(f)
            idx = self.root_of.pop(f.key)
            dirs = found.add(idx, listing, who)
            f.release()
            # Batches small enough that every worker has one while the tree is narrow.
            step = _native.listing_batch(len(dirs), self.stats.get("workers", 1))
            return [submit(idx, dirs[i : i + step]) for i in range(0, len(dirs), step)]

        t = time.perf_counter()
        self.drain([submit(i, None) for i in range(len(self.roots))], done)
        files, tasks = found.counts()
        self.stats["walk"] = {"seconds": time.perf_counter() - t, "listing_tasks": tasks, "files": files}
        return found

    # -- shards --

    def shards(self, found):
        """The files cut into shards (see ``trawl_cluster::Walk::shards``: per root, every name
        of a multiply linked file in the shard of its first name, four shards a worker)."""
        nw = max(1, self.stats.get("workers", 1))
        return [
            {"key": key, "root": root, "files": names, "bytes": nbytes}
            for key, root, names, nbytes in found.shards(self.o.shard_size, self.o.shard_files, nw)
        ]

    # -- maps --

    def downstream(self, shard, m):
        """As soon as a shard's map has its result: the task that takes its metadata to the
        client, run while the other maps still read (the reducers fetch their shares of the
        result themselves, see `_gather`)."""
        key = shard["key"]
        self.early[key] = (self.client.submit(_meta, m, key=f"trawl-meta-{self.run_key}-{key}"), m)

    def maps(self, shards):
        """Runs (or takes from the checkpoints) every shard's map; one future per shard, in
        shard order."""
        p = self.o.partitions if self.plan.reducing() else 0
        r = min(p, self.o.reducers or 2 * max(1, self.stats.get("workers", 1)))
        self.bounds = [(i * p // r, (i + 1) * p // r) for i in range(r)]
        self.early = {}
        self.resumed = set()  # keys of the shards taken from their checkpoints
        self.maps_began = time.time()
        delay = float(os.environ.get("TRAWL_DASK_MAP_DELAY", "0") or 0)
        if self.o.state:
            _private_dir(self.o.state)
        winner, resumed = {}, 0
        owner = {}  # task key -> shard key
        self.shards_total = len(shards)
        self.bytes_total = sum(s["bytes"] for s in shards)
        self.resumed_bytes = 0
        by_key = {s["key"]: s for s in shards}
        copies = {}  # shard key -> its futures still running

        def submit(s, near=None):
            where = self.pinned(s["root"])
            if near and not where:
                # A preference, not a pin: the worker whose map just finished.
                where = {"workers": [near], "allow_other_workers": True}
            f = self.client.submit(
                _map, self.args, b"\0".join(s["files"]), self.o.partitions, delay, self.wire,
                key=f"trawl-map-{self.run_key}-{s['key']}", **where,
            )
            self.root_of[f.key] = s["root"]
            self.note_pin(f, s["root"])
            self.what[f.key] = f"shard {s['key']} ({len(s['files'])} files from {os.fsdecode(s['files'][0])})"
            owner[f.key] = s["key"]
            copies[s["key"]] = [f]
            return f

        # Shards on shared storage are handed out as the workers' threads come free, the next
        # to the worker whose map just finished: given all at once, Dask placed tasks on the
        # workers ahead of time and the last ones waited behind a busy worker while another
        # sat idle (2 GiB on two workers: 5 shards against 3). A pinned shard can run on its
        # host only: those go at once.
        waiting = []
        first = []
        for s in shards:
            prior = self.load(s) if self.o.resume else None
            if prior is not None:
                # Its metadata stays here; its pieces go to the workers for the reducers.
                winner[s["key"]] = None
                self.resumed.add(s["key"])
                self.early[s["key"]] = (_meta(prior), self.scatter(s["key"], prior))
                resumed += 1
                self.shards_done += 1
                self.bytes_done += s["bytes"]
                self.resumed_bytes += s["bytes"]
            elif self.pins[s["root"]] is not None:
                first.append(submit(s))
            else:
                waiting.append(s)
        waiting.reverse()  # taken from the end, in shard order
        threads = [self.threads()]

        def top_up(near=None):
            """Maps for the waiting shards while fewer run than the workers have threads."""
            running = sum(1 for k in copies if self.pins[by_key[k]["root"]] is None)
            new = []
            while waiting and running < threads[0]:
                new.append(submit(waiting.pop(), near))
                running += 1
                near = None
            return new

        first += top_up()
        started = time.time()

        def done(f):
            k = owner.get(f.key)
            if k is None or k in winner:
                return None  # a copy that lost
            if f.status != "finished" and len(copies[k]) > 1:
                copies[k].remove(f)  # the other copy may still finish
                return None
            self.failed(f, self.what.get(f.key, f.key))
            # The first result wins; the other copy is dropped.
            winner[k] = f
            self.shards_done += 1
            self.bytes_done += by_key[k]["bytes"]
            self.downstream(by_key[k], f)
            for g in copies.pop(k):
                if g is not f:
                    self.dropped.add(g.key)
                    g.cancel()
            if self.o.state:
                self.save(by_key[k], self.fetch(f))
            if not waiting:
                return None
            held = self.client.who_has([f]).get(f.key) or [None]
            return top_up(held[0])

        def speculate(pending):
            if self.o.no_speculate or time.time() - started < 2.0:
                return None
            idle = [w for w, ts in self.client.processing().items() if not ts]
            new = []
            for k, fs in copies.items():
                if not idle:
                    break
                if len(fs) > 1 or self.pins[by_key[k]["root"]] is not None:
                    continue  # already copied, or pinned to its host's disks
                w = idle.pop()
                g = self.client.submit(
                    _map, self.args, b"\0".join(by_key[k]["files"]), self.o.partitions, 0, self.wire,
                    # A preference, not a pin: a copy whose worker dies after it won is computed
                    # again elsewhere (shared storage) instead of waiting for that worker.
                    key=f"trawl-spec-{self.run_key}-{k}", workers=[w], allow_other_workers=True,
                )
                owner[g.key] = k
                fs.append(g)
                new.append(g)
                self.speculated += 1
            return new

        asked = [time.time()]

        # Only the last shards are copied: once none waits and fewer run than there are
        # workers. Workers that joined since are given shards too.
        def each_round(pending):
            if time.time() - asked[0] >= 1.0:
                threads[0], asked[0] = self.threads(), time.time()
            more = top_up()
            if not waiting and copies and len(copies) < len(self.client.processing()):
                more += speculate(pending) or []
            return more

        self.drain(first, done, each_round)
        self.stats["resumed_shards"] = resumed
        if self.o.resume and resumed == 0:
            self.say_why_none_resumed()
        self.stats["speculative_copies"] = self.speculated
        return [winner[s["key"]] for s in shards]

    def threads(self):
        """The threads of the workers now (at least 1)."""
        workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers))

    # -- reduce and finish --

    def reduce(self, maps, shards):
        """The partitions counted and the shards merged (see `Reduce`): the merger, each
        shard's (seconds, fingerprints, blocks), the reducers' results and every partition's
        counts in order."""
        return Reduce(self, maps, shards).run()

    def source_of(self, shard):
        """Where a shard's result came from, for a message."""
        if shard["key"] in self.resumed:
            return f"its checkpoint {self.checkpoint_path(shard)}"
        return "its map's result"

    def delete_hint(self, shard):
        if shard["key"] in self.resumed:
            return "; delete that checkpoint and run again with --resume"
        return ""

    def record_stats(self, metas, reduced, shards):
        """``metas``: per shard, (seconds, fingerprints shipped, non-zero blocks)."""
        fps = sum(f for _, f, _ in metas)
        blocks = sum(b for _, _, b in metas)
        shipped = sum(r["input_bytes"] for r in reduced)
        secs = sorted(s for s, _, _ in metas)
        self.stats.update(
            {
                "shards": len(shards),
                "fingerprints": fps,
                "blocks": blocks,
                "batch_bytes": shipped,
                "bytes_per_fingerprint": shipped / fps if fps else None,
                "naive_bytes": 16 * blocks,
                "task_results": self.stats.get("walk", {}).get("listing_tasks", 0)
                + (len(shards) - self.stats.get("resumed_shards", 0)) * 2
                + len(reduced),
                "naive_messages": blocks,
                "shard_seconds": {
                    "min": secs[0] if secs else 0,
                    "median": statistics.median(secs) if secs else 0,
                    "p90": secs[int(0.9 * (len(secs) - 1))] if secs else 0,
                    "max": secs[-1] if secs else 0,
                },
                "reducer_input_bytes_max": max((r["input_bytes"] for r in reduced), default=0),
                "reducer_held_bytes_max": max((r["input_bytes"] + r["held_bytes"] for r in reduced), default=0),
                "worker_peak_rss_max": max((r["peak_rss"] for r in reduced), default=0),
                "reduce_seconds_max": max((r["seconds"] for r in reduced), default=0),
            }
        )

    def open_outputs(self):
        """Opens the outputs and --stats (refused by trawl's rules: a root, a file inside one,
        another output), as trawl scan does before anything is read, and here before any
        cluster is contacted: a bad path costs nothing. Their files are left out of the walk."""
        self.stats_file = None
        if self.o.stats:
            try:
                self.stats_file = self.plan.open_run_output("--stats", os.fsencode(self.o.stats))
            except ValueError as e:
                raise Fatal(str(e).strip())
        try:
            self.outputs, self.excluded = self.plan.open_outputs()
        except ValueError as e:
            raise Fatal(str(e).strip())
        if self.stats_file is not None and self.stats_file.identity() is not None:
            self.excluded.append(self.stats_file.identity())

    def run_on_cluster(self):
        phases = {}
        t = time.perf_counter()

        def phase(name):
            nonlocal t
            now = time.perf_counter()
            phases[name] = round(now - t, 3)
            t = now

        self.check_versions()
        self.progress = Progress(Progress.wanted(self.plan.quiet()))
        outputs, excluded, stats = self.outputs, self.excluded, self.stats_file
        # Every worker (and any that joins) serves this run's map shares to its reduce tasks,
        # until the run ends.
        plugin = _shares_plugin(self.run_key)
        # Every worker answers these: under the watchdog (a frozen worker is removed, not
        # waited for).
        self.on_loop(self.client._register_worker_plugin(plugin, plugin.name, idempotent=False))
        try:
            return self.run_registered(phases, phase, outputs, excluded, stats)
        finally:
            self.progress.end()
            try:
                self.on_loop(self.client._unregister_worker_plugin(plugin.name))
            except Exception:
                pass  # the scheduler is gone, or the plugin with it

    def run_registered(self, phases, phase, outputs, excluded, stats):
        self.check_pins()
        phase("versions")
        self.doing = "walk"
        found = self.walk(excluded)
        phase("walk")
        shards = self.shards(found)
        phase("shards")
        self.doing = "maps"
        maps = self.maps(shards)
        phase("maps")
        self.doing = "reduce"
        merger, metas, reduced, counts = self.reduce(maps, shards)
        phase("reduce")
        # Cleared before the outputs are written and the summary printed.
        self.progress.end()
        self.record_stats(metas, reduced, shards)
        code = self.plan.finish(
            outputs,
            merger,
            counts,
            found,
            time.time() - self.started,
        )
        phase("merge and outputs")
        self.say_worker_changes()
        self.stats["phase_seconds"] = phases
        self.stats["shard_timeline"] = sorted(self.timeline, key=lambda x: (str(x[0]), x[1]))
        s = self.stats
        # The run's figures are a summary line: -q, which silences trawl's summary, silences it.
        if s["fingerprints"] and not self.plan.quiet():
            _say(
                f"{s['shards']} shards on {s['workers']} workers, {s['partitions']} partitions: "
                f"{s['fingerprints']:,} fingerprints in {s['batch_bytes']:,} bytes "
                f"({s['bytes_per_fingerprint']:.2f} each; a record per block: {s['naive_bytes']:,}); "
                f"{s['task_results']:,} task results (a message per block: {s['naive_messages']:,}); "
                f"shard seconds {s['shard_seconds']['min']:.2f}/{s['shard_seconds']['median']:.2f}/"
                f"{s['shard_seconds']['max']:.2f} (min/median/max)"
            )
        if stats is not None:
            _write_run_file(stats, s)
        return code
