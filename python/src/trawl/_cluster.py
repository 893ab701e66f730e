"""What trawl-dask's scan and audit clients share: the client, the workers, the version check,
and waiting for tasks while silent workers are taken as lost."""

import time

from . import _native
from ._common import Fatal, _say


def _lost_result_warning(record):
    """A logging filter: false for Dask's warning that a result could not be fetched and is
    computed again."""
    return not str(record.msg).startswith("Couldn't gather")


class _Cluster:
    """What a scan and an audit share: the client, the workers, a version check. A job is made
    (its flags checked, its outputs opened) before any cluster is contacted, and run on one
    with ``run(client)``."""

    def __init__(self, opts):
        self.o = opts
        self.client = None
        self.started = time.time()
        self.stats = {}
        self.silent = set()  # the workers removed as silent (--worker-timeout)
        # The version every worker must run (checked at the start, and by each map or read).
        self.wire = _native.wire_version()

    def run(self, client):
        """Runs the job on the cluster ``client`` reaches; its exit code."""
        import logging

        self.client = client
        self.started = time.time()
        # Dask's client logs a warning each time a result it fetches was lost with a worker
        # (trawl-dask says which worker, once): left out while the run goes on.
        log = logging.getLogger("distributed.client")
        log.addFilter(_lost_result_warning)
        try:
            return self.run_on_cluster()
        finally:
            log.removeFilter(_lost_result_warning)

    def workers(self):
        return self.client.scheduler_info(n_workers=-1)["workers"]

    def check_versions(self):
        mine = self.wire = _native.wire_version()

        # Nested, so that Dask sends it by value: a worker whose trawl is another (or none)
        # still runs it and says which.
        def _wire_version():
            from trawl import _native as n

            return n.wire_version()

        got = self.ask_every_worker(_wire_version)
        if not got:
            # Workers often start after their scheduler: waited for, as long as for it.
            t = self.o.connect_timeout
            try:
                self.client.wait_for_workers(1, timeout=t)
            except TimeoutError:
                raise Fatal(f"no worker joined the scheduler within {t:g} s (--connect-timeout)")
            got = self.ask_every_worker(_wire_version)
            if not got:
                raise Fatal("the cluster has no workers")
        self.started_with = set(got)
        for addr, v in sorted(got.items()):
            if isinstance(v, BaseException):
                raise Fatal(f"worker {addr} cannot run trawl: {type(v).__name__}: {v}")
            if v != mine:
                raise Fatal(f"worker {addr} runs {v}; this client runs {mine}: refusing to mix versions")
        self.stats["workers"] = len(got)

    def ask_every_worker(self, fn):
        """``fn()`` run on every worker, under the watchdog (see `on_loop`): {address: what it
        returned, or the exception it raised}, without the workers removed meanwhile as
        silent (their answer is the broken connection)."""
        got = self.on_loop(self.client._run(fn, on_error="return"))
        return {a: v for a, v in got.items() if a not in self.silent}

    def failed(self, f, what):
        if f.status == "error":
            raise Fatal(f"{what}: {f.exception()}")
        if f.status == "cancelled":
            raise Fatal(f"{what}: cancelled")

    def quiet(self):
        """Whether -q was given: the run's figures and its notes are not said."""
        return False

    def say_worker_changes(self):
        """Says which workers left during the run (their work ran on the others) and which
        joined (a nanny's restart comes back under a new address), but with -q; in the stats
        always."""
        try:
            now = set(self.workers())
        except Exception:
            return
        before = getattr(self, "started_with", now)
        left, joined = sorted(before - now), sorted(now - before)
        self.stats["workers_left"], self.stats["workers_joined"] = left, joined
        if self.quiet():
            return
        if left:
            _say(f"{len(left)} worker(s) left during the run ({', '.join(left)}): their work ran on "
                 f"the others; the report is complete")
        if joined:
            _say(f"{len(joined)} worker(s) joined during the run ({', '.join(joined)})")

    def drop_silent(self):
        """Workers the scheduler has not heard from for --worker-timeout are removed (at most
        once a second): their work runs on the others."""
        now = time.time()
        if now - getattr(self, "_silent_checked", 0) < 1.0:
            return
        self._silent_checked = now
        from ._tasks import _drop_silent

        for a in self.client.run_on_scheduler(_drop_silent, seconds=self.o.worker_timeout):
            self.silent.add(a)
            _say(f"worker {a}: not heard from for {self.o.worker_timeout:g} s (--worker-timeout): "
                 "taken as lost, its work runs on the other workers")
            self.stats["silent_workers"] = self.stats.get("silent_workers", 0) + 1

    def keep_watch(self, futures):
        """What is done every second while the client waits on workers for ``futures``: the
        silent workers are removed (a scan watches its pinned hosts too, see `Run.watch`)."""
        self.drop_silent()

    def on_loop(self, coro, futures=()):
        """Runs ``coro`` (a request that waits on workers: a result fetched from the worker
        holding it, a message every worker answers) on the client's loop, and returns what it
        returns, calling `keep_watch` every second while it is under way. Dask asks a worker
        with no timeout: a frozen one would hold the client for its heartbeat timeout (5
        minutes). Removed as silent after --worker-timeout, the worker is cut off (Dask closes
        its connections), and the request, still under way, goes on without it: a result it
        held is computed again on the others and fetched from there. The request is never
        started again: a worker that is slow but still heard from (a large result) is waited
        for, never cut short and asked again."""
        import asyncio
        import concurrent.futures

        running = asyncio.run_coroutine_threadsafe(coro, self.client.loop.asyncio_loop)
        try:
            while True:
                try:
                    return running.result(timeout=1.0)
                except concurrent.futures.TimeoutError:
                    self.keep_watch(futures)
        finally:
            running.cancel()  # nothing, once it has ended; else it is not waited for

    def fetch(self, f):
        """The result of future ``f``, fetched from the worker holding it under the watchdog
        (see `on_loop`); the task's error, as ``f.result()`` raises it."""
        return self.on_loop(self.client.gather([f], asynchronous=True), [f])[0]

    def next_done(self, ac):
        """The next finished future of ``ac`` (an ``as_completed`` with futures left), with the
        silent workers removed once a second while none finishes (their tasks run elsewhere)."""
        from distributed import wait

        while True:
            done = ac.next_batch(block=False)
            if done:
                ac.update(done[1:])
                return done[0]
            try:
                wait(list(ac.futures), timeout=1.0, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
            self.drop_silent()
