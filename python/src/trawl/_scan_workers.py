"""trawl-dask scan's workers: where each root's tasks may run (`--on`, pinned by host, name or
address, and moved with a worker that starts again), and the wait on the tasks under the
watchdog that ends a run whose pinned host has had no worker for too long."""

import os
import socket
import time

from ._common import Fatal, _scheduler_lost


class _Workers:
    """The `Run` methods that place tasks on workers and wait on them (state: `Run`'s)."""

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
