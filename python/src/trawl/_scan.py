"""trawl-dask scan's client: the walk by listing tasks, the shards, the maps (watched,
speculated, checkpointed), the reduce tasks past the scheduler, and the outputs written by
trawl's own writers."""

import hashlib
import json
import os
import pickle
import secrets
import socket
import statistics
import sys
import time

from . import _native
from ._checkpoints import (
    CheckpointError,
    _checkpoint_read,
    _checkpoint_write,
    _json_write,
    _private_dir,
)
from ._cluster import _Cluster
from ._common import Fatal, _say, _scheduler_lost, _write_run_file
from ._progress import Progress, human_bytes, human_duration
from ._reduce import Reduce
from ._tasks import _list, _map, _meta, _output_digest, _reduce, _shares_plugin

def _absolute_roots(args):
    """``args`` (trawl scan's) with each relative PATH made absolute (from this process's
    directory): the arguments the plan places the paths at, and no other."""
    args = list(args)
    for i in _native.Plan(args).path_places():
        if i is not None and not os.path.isabs(args[i]):
            args[i] = os.fsencode(os.path.abspath(args[i]))
    return args


class Run(_Cluster):
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
            if not os.path.isabs(root) and pin is not None:
                raise Fatal(f"--on {pin}:{os.fsdecode(root)}: a relative path, which host {pin} "
                            f"would resolve in its own directory: give it from /")
        if opts.local is None and not all(os.path.isabs(r) for r in self.roots):
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

    # -- workers --

    def matching(self, spec):
        """The workers a host spec names: by host (name or address), worker name or address."""
        if spec not in self.resolved:  # once: a resolver may take seconds to say no
            try:
                self.resolved[spec] = socket.gethostbyname(spec)
            except OSError:
                self.resolved[spec] = None
        ip = self.resolved[spec]
        return [
            a
            for a, w in self.workers().items()
            if spec in (w.get("host"), str(w.get("name")), a) or (ip and w.get("host") == ip)
        ]

    def check_pins(self):
        """Every --on HOST names something: a worker (by name, host or address) or a host name
        that resolves here (its workers may join later). One that is neither is refused at the
        start, by name: its shards would wait --lost-worker-timeout for a host that cannot be."""
        for idx, spec in enumerate(self.pins):
            if spec is None or self.matching(spec) or self.resolved.get(spec):
                continue
            names = sorted(str(w.get("name")) for w in self.workers().values())
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise Fatal(f"--on {spec}:{os.fsdecode(self.roots[idx])}: {spec} is no worker's name and no "
                        f"host name that resolves here (the workers: {shown or 'none'})")

    def pinned(self, idx):
        """Where root ``idx``'s tasks may run (submit keywords)."""
        spec = self.pins[idx]
        if spec is None:
            return {}
        # Dask takes a worker's name, its address or its host as it knows it (an IP address);
        # a host's name it matches literally against that IP, never resolving it, and the
        # tasks would wait forever. A name that is none of those is pinned by its address.
        workers = self.workers()
        named = [a for a, w in workers.items() if str(w.get("name")) == spec]
        if named:
            # A worker's name: pinned by its address now, and moved to its next address if it
            # starts again (see `repin`).
            self.pin_addr.setdefault(spec, named[0])
            return {"workers": [self.pin_addr[spec]], "allow_other_workers": False}
        known = any(spec in (a, w.get("host")) for a, w in workers.items())
        if not known:
            self.matching(spec)  # resolves it, once
            spec = self.resolved.get(spec) or spec
        return {"workers": [spec], "allow_other_workers": False}

    def note_pin(self, f, idx):
        """Remembers a task pinned by --on (it may have to move with its worker)."""
        if self.pins[idx] is not None:
            self.pinned_keys[f.key] = idx

    def repin(self):
        """A worker named by --on that started again (its nanny's restart) has a new address;
        every task pinned to the old one (waiting, running, or to be computed again because its
        result was lost with the worker) is pinned to the new one: Dask would wait for the old
        address forever."""
        if not self.pin_addr:
            return
        workers = self.workers()
        for spec, old in list(self.pin_addr.items()):
            now = [a for a, w in workers.items() if str(w.get("name")) == spec]
            if not now or now[0] == old:
                continue
            new = now[0]
            keys = [k for k, r in self.pinned_keys.items() if self.pins[r] == spec]
            stimulus = f"trawl-repin-{self.run_key}-{new}"

            # Runs on the scheduler (pickled by value: the scheduler needs no trawl).
            def move(dask_scheduler, keys=keys, new=new, stimulus=stimulus):
                again = {}
                for k in keys:
                    ts = dask_scheduler.tasks.get(k)
                    if ts is None:
                        continue
                    ts.worker_restrictions = {new}
                    if ts.state == "no-worker":
                        again[k] = "waiting"
                if again:
                    dask_scheduler.transitions(again, stimulus_id=stimulus)
                return len(again)

            try:
                self.client.run_on_scheduler(move)
            except Exception as e:
                raise Fatal(
                    f"worker {spec} started again at {new}, and its tasks could not be moved "
                    f"there ({type(e).__name__}: {e})"
                )
            self.pin_addr[spec] = new

    # -- waiting, with the watchdog --

    def drain(self, futures, on_done, each_round=None):
        """Waits for every future, calling ``on_done(f)`` as each finishes (it may return more
        futures to wait for) and ``each_round(pending)`` at least every second. A task failed
        for good ends the run, naming it; so do tasks pinned to a host that has had no worker
        for longer than --lost-worker-timeout (Dask would wait for it forever)."""
        from distributed import wait
        from distributed.client import FuturesCancelledError

        pending = set(futures)
        while pending:
            # Copies cancelled because the other one won are not waited for.
            pending = {f for f in pending if f.key not in self.dropped}
            if not pending:
                break
            try:
                done, rest = wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
            except TimeoutError:  # nothing finished within the second
                done, rest = [], pending
            except FuturesCancelledError as e:
                if _scheduler_lost(e, self.client):
                    raise
                # Cancelled (an input lost with a worker): done, for `on_done` to decide.
                done = [f for f in pending if f.status == "cancelled"]
                rest = [f for f in pending if f.status != "cancelled"]
            pending = set(rest)
            for f in done:
                more = on_done(f)
                if more:
                    pending |= set(more)
            self.watch(pending)
            if each_round:
                pending |= set(each_round(pending) or ())

    def keep_watch(self, futures):
        self.watch(set(futures))

    def watch(self, pending):
        """The watchdog, run every second while the client waits on workers: silent workers
        removed, tasks pinned to a worker name moved to its new address, and the run ended when
        a host that ``pending`` tasks are pinned to has had no worker for --lost-worker-timeout.
        The progress line is drawn again too."""
        self.tick()
        self.drop_silent()
        self.repin()
        now = time.time()
        hosts = {self.pins[self.root_of[f.key]] for f in pending if f.key in self.root_of}
        hosts.discard(None)
        for h in list(self.lost):
            if h not in hosts:
                del self.lost[h]
        for h in hosts:
            if self.matching(h):
                self.lost.pop(h, None)
                continue
            self.lost.setdefault(h, now)
            if now - self.lost[h] > self.o.lost_worker_timeout:
                left = sorted(
                    self.what.get(f.key, f.key)
                    for f in pending
                    if f.key in self.root_of and self.pins[self.root_of[f.key]] == h
                )
                raise Fatal(
                    f"host {h}: no worker for {self.o.lost_worker_timeout:g} s; "
                    f"{len(left)} shard(s) not scanned: {'; '.join(left)}"
                )

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

    def checkpoint_path(self, shard):
        return os.path.join(self.o.state, f"{self.state_key}-{shard['key']}.shard")

    def save(self, shard, result):
        """Checkpoints a finished shard; a checkpoint that cannot be written (a full disk) is
        said once, and the run goes on without checkpoints: its report does not need them."""
        if not self.saving:
            return
        path = self.checkpoint_path(shard)
        run = os.path.join(self.o.state, f"{self.state_key}.run")
        # The file being written, named if it cannot be (not a temporary file's name, nor the
        # checkpoint's when it is the run's file that failed).
        writing = run
        try:
            if not os.path.exists(run):
                # What the checkpoints are of, for --resume to say what differs when none is taken.
                _json_write(self.o.state, run, {"args": self.result_args, "partitions": self.o.partitions,
                                                "computes": self.computes})
            writing = path
            _checkpoint_write(self.o.state, path, result)
        except OSError as e:
            self.saving = False
            _say(f"--state {self.o.state}: cannot write {writing}: {e.strerror or e}; "
                 f"the run goes on without checkpoints (a --resume reads the shards not saved again)")

    def say_why_none_resumed(self):
        """--resume took no checkpoint: says of what runs the folder holds them, and how those
        runs differ from this one."""
        if self.damaged:
            _say(f"--resume: {self.damaged} checkpoint(s) in {self.o.state} could not be taken "
                 f"(named above); every shard is scanned")
            return
        now = self.result_args + [f"--partitions={self.o.partitions}"]
        others = []
        for name in sorted(os.listdir(self.o.state)):
            if not name.endswith(".run") or name == f"{self.state_key}.run":
                continue
            try:
                with open(os.path.join(self.o.state, name), "rb") as f:
                    r = json.loads(f.read(1 << 20))
                args = list(map(str, r["args"])) + [f"--partitions={int(r['partitions'])}"]
                others.append((args, [str(c) for c in r.get("computes", [])]))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        if not others:
            _say(f"--resume: no checkpoint in {self.o.state}; every shard is scanned")
            return
        for then, computed in others:
            gone = [a for a in then if a not in now]
            new = [a for a in now if a not in then]
            if not gone and not new:
                lacking = [c for c in self.computes if c not in computed] or ["what this run computes"]
                _say(f"--resume: the checkpoints in {self.o.state} hold no {', '.join(lacking)} "
                     f"(their run wrote other outputs), which this run needs; every shard is read again")
                continue
            _say(f"--resume: the checkpoints in {self.o.state} are of a run with other options "
                 f"(then: {' '.join(gone) or '-'}; now: {' '.join(new) or '-'}); every shard is scanned")

    def load(self, shard):
        path = self.checkpoint_path(shard)
        try:
            prior = _checkpoint_read(path)
            # Its digest, as its map gave it (checked against what the reducers counted).
            prior["digest"] = _output_digest(prior)
            return prior
        except FileNotFoundError:
            return None
        except CheckpointError as e:
            self.damaged += 1
            _say(f"{path}: {e}; the shard is read again")
            return None

    def downstream(self, shard, m):
        """As soon as a shard's map has its result: the task that takes its metadata to the
        client, run while the other maps still read (the reducers fetch their shares of the
        result themselves, see `_gather`)."""
        key = shard["key"]
        self.early[key] = (self.client.submit(_meta, m, key=f"trawl-meta-{self.run_key}-{key}"), m)

    def scatter(self, shard_key, prior):
        """A resumed shard's result sent to a worker under a key of this run's (the shares
        handler serves no other), for the reducers to fetch their shares of; sent again after
        a loss, it gets a new key. Under the watchdog (the worker Dask sends it to may be frozen:
        removed as silent, the sending fails, and it is sent once more, to another)."""
        for attempt in (1, 2):
            self.sent += 1
            key = f"trawl-resumed-{self.run_key}-{shard_key}-{self.sent}"
            try:
                return self.on_loop(self.client.scatter({key: prior}, hash=False, asynchronous=True))[key]
            except (OSError, TimeoutError):  # a comm error is an OSError
                if attempt == 2 or self.client.status != "running":
                    raise

    def recover(self, shards):
        """Resumed shards whose result was lost with the worker holding it (data sent from
        here cannot be computed again): sent again from their checkpoints. Whether any was."""
        again = False
        for s in shards:
            k = s["key"]
            if k not in self.resumed or self.early[k][1].status != "cancelled":
                continue
            prior = self.load(s)
            if prior is None:
                raise Fatal(
                    f"shard {k}: its result was lost with a worker and its checkpoint "
                    f"({self.checkpoint_path(s)}) can no longer be read"
                )
            self.early[k] = (self.early[k][0], self.scatter(k, prior))
            self.stats["resent_shards"] = self.stats.get("resent_shards", 0) + 1
            again = True
        return again

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
