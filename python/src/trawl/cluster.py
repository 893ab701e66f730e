"""trawl-dask: one trawl scan over a Dask cluster, with the report one machine would write.

The client walks the tree with listing tasks (each returns a few directories' files and the
subdirectories left), packs the files into even shards (bounded files and bytes, largest first),
runs one map task per shard (digests, records, and fingerprints packed per partition), reduce
tasks over ranges of fingerprint partitions (exact counts), and writes the outputs from the merged
parts with trawl's own writers. Scheduling, transport, membership and retries are Dask's; what
is trawl's: fixed task keys (a retried task is the same task), deterministic map outputs, a
watchdog for shards pinned to a lost host, speculative copies of the last shards, checkpoints
of finished shards for ``--resume``, and a version check before any work.
"""

import argparse
import contextlib
import os
import sys

from . import _native
from ._audit import Audit
from ._checkpoints import CheckpointError, _checkpoint_decode, _checkpoint_encode, _private_dir
from ._common import Fatal, Terminated, _on_terminate, _say, _scheduler_lost
from ._scan import Run

__all__ = ["main"]
# Kept importable from here (tests, embedding programs).
_ = (CheckpointError, _checkpoint_decode, _checkpoint_encode)


def _parse_size(s):
    """A size as trawl's own flags read it (one rule, in Rust), of at least a byte."""
    try:
        n = _native.parse_size(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))
    if n < 1:
        raise argparse.ArgumentTypeError(f"{s!r}: at least 1 byte")
    return n


#: The longest a SECONDS flag waits: a day. Past it, a frozen worker, a lost host or a
#: scheduler that never answers would hold a run for days.
SECONDS_MAX = 86400


def _seconds(s):
    """A SECONDS flag's value: a finite number of seconds from 1 to ``SECONDS_MAX``."""
    try:
        v = float(s)
    except ValueError:
        v = None
    # NaN fails both comparisons.
    if v is None or not 1 <= v <= SECONDS_MAX:
        raise argparse.ArgumentTypeError(
            f"{s!r}: expected a number of seconds from 1 to {SECONDS_MAX} (a day; past it, a frozen "
            "worker or a scheduler that never answers would hold the run for days)"
        )
    return v


def _count(lo, hi, what):
    """A count flag's value: a whole number from ``lo`` to ``hi``; ``what`` says why the bounds."""

    def parse(s):
        try:
            v = int(s)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{s!r}: expected a whole number from {lo} to {hi} ({what})")
        return v

    return parse


#: Each count flag's bounds: a local cluster's processes, as many as trawl's own -j; the
#: partitions a batch's format can number; files per shard, whose names travel in one task.
_LOCAL = _count(1, 1024, "worker processes on this machine")
_PARTITIONS = _count(1, 65536, "fingerprint partitions")
_REDUCERS = _count(0, 65536, "reduce tasks; 0: twice the workers")
_SHARD_FILES = _count(1, 1_000_000, "files per task, whose names travel with it")


def _parser():
    p = argparse.ArgumentParser(
        prog="trawl-dask",
        description="One trawl scan over a Dask cluster: the same options and outputs as "
        "`trawl scan`, one exact report.",
        epilog="Every option not listed here is trawl scan's (see trawl scan --help).",
    )
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser(
        "scan",
        help="scan PATH... on the cluster",
        epilog="Every other option is trawl scan's (--digest, --manifest, --json, --cdc, ...).",
    )
    _where(s)
    s.add_argument(
        "--on",
        metavar="HOST:PATH",
        action="append",
        default=[],
        help="local disks: PATH on the worker(s) of HOST (a host name or address, or a worker's "
        "name); its shards run only there (repeatable; instead of PATH...)",
    )
    s.add_argument("--partitions", type=_PARTITIONS, default=64, help="fingerprint partitions, each counted apart (1 to 65536; default 64)")
    s.add_argument("--reducers", type=_REDUCERS, default=0, help="reduce tasks, each counting a range of partitions (default: twice the workers)")
    s.add_argument("--shard-files", type=_SHARD_FILES, default=10000, help="at most this many files per shard (1 to 1000000; default 10000)")
    s.add_argument("--shard-size", type=_parse_size, default=8 << 30, help="at most this many bytes per shard (default 8GiB)")
    s.add_argument("--state", metavar="DIR", help="checkpoint each finished shard here (for --resume)")
    s.add_argument("--resume", action="store_true", help="take the shards already checkpointed in --state DIR")
    _connect_timeout(s)
    s.add_argument(
        "--lost-worker-timeout",
        type=_seconds,
        default=120.0,
        metavar="SECONDS",
        help="shards pinned to a host with no worker for this long are named and the run ends "
        "with exit code 2 (1 to 86400; default 120)",
    )
    _worker_timeout(s, ", or that does not answer a request for map results within it,")
    s.add_argument("--no-speculate", action="store_true", help="do not re-issue the last shards on idle workers")
    s.add_argument("--stats", metavar="FILE", help="write the run's cluster figures (JSON)")
    a = sub.add_parser(
        "audit",
        help="audit PATH... against a catalog kept here, reading on the cluster",
        epilog="Every other option is trawl audit's (--catalog is required; --digest, --json, "
        "--max-bytes, ...). The paths must be the same on this machine and on every worker.",
    )
    _where(a)
    a.add_argument("--shard-files", type=_SHARD_FILES, default=10000, help="at most this many files per read task (1 to 1000000; default 10000)")
    a.add_argument("--shard-size", type=_parse_size, default=8 << 30, help="at most about this many bytes per read task (default 8GiB)")
    _connect_timeout(a)
    _worker_timeout(a, "")
    a.add_argument("--stats", metavar="FILE", help="write the run's cluster figures (JSON)")
    return p


def _connect_timeout(p):
    p.add_argument("--connect-timeout", type=_seconds, default=30.0, metavar="SECONDS",
                   help="give up reaching the scheduler after this long (1 to 86400; default 30)")


def _worker_timeout(p, also):
    p.add_argument(
        "--worker-timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help=f"a worker not heard from for this long{also} is taken as lost and its work runs "
        "on the others (1 to 86400; default 60)",
    )


def _where(p):
    """The options that say which cluster runs the work, and how to reach it."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running scheduler (tcp://HOST:8786, tls://HOST:8786)")
    where.add_argument("--scheduler-file", metavar="FILE", help="a running scheduler's address, from the file "
                       "`dask scheduler --scheduler-file FILE` writes (as dask-jobqueue and dask-mpi hand it over)")
    where.add_argument("--local", metavar="N", type=_LOCAL, help="start a local cluster of N worker processes (1 to 1024)")
    p.add_argument("--tls-ca-file", metavar="FILE", help="a tls:// scheduler: the CA certificate(s) to trust")
    p.add_argument("--tls-cert", metavar="FILE", help="a tls:// scheduler: this client's certificate")
    p.add_argument("--tls-key", metavar="FILE", help="a tls:// scheduler: this client's private key (if not in --tls-cert)")


def _scheduler_address(o):
    """The scheduler's address: --scheduler, or the one in --scheduler-file (read as trawl reads
    a small input: never waiting on a FIFO, a regular file of at most 1 MiB; one rule, in Rust)."""
    if not o.scheduler_file:
        return o.scheduler
    try:
        return _native.scheduler_address(os.fsencode(o.scheduler_file))
    except ValueError as e:
        raise Fatal(f"--scheduler-file {str(e).strip()}")


def _security(o, address):
    """Dask's Security for a tls:// scheduler (from --tls-*, else Dask's own settings); None for
    tcp://. Refused by name: tls:// with neither, --tls-* for another protocol, a file that
    cannot be read."""
    flags = {"--tls-ca-file": o.tls_ca_file, "--tls-cert": o.tls_cert, "--tls-key": o.tls_key}
    given = {k: v for k, v in flags.items() if v}
    tls = address.startswith("tls://")
    if given and not tls:
        raise Fatal(f"{', '.join(given)}: the scheduler {address} is not a tls:// address")
    if not tls:
        return None
    for k, v in given.items():
        try:
            open(v, "rb").close()
        except OSError as e:
            raise Fatal(f"{k} {v}: cannot read it: {e.strerror or e}")
    if given:
        if not (o.tls_ca_file and o.tls_cert):
            raise Fatal(f"{address}: a tls:// scheduler needs --tls-ca-file and --tls-cert (and --tls-key "
                        "unless the key is in the certificate's file)")
        from distributed.security import Security

        return Security(tls_ca_file=o.tls_ca_file, tls_client_cert=o.tls_cert,
                        tls_client_key=o.tls_key, require_encryption=True)
    import dask

    conf = dask.config.get("distributed.comm.tls", {}) or {}
    if not (conf.get("ca-file") and (conf.get("client") or {}).get("cert")):
        raise Fatal(
            f"{address}: a tls:// scheduler needs this client's certificate: --tls-ca-file, "
            "--tls-cert and --tls-key (or Dask's own settings, DASK_DISTRIBUTED__COMM__TLS__*)"
        )
    return None  # Dask's settings apply by themselves


def _client(o):
    from distributed import Client, LocalCluster

    if o.local is not None:
        if o.tls_ca_file or o.tls_cert or o.tls_key:
            raise Fatal("--tls-*: for a running tls:// scheduler, not a local cluster")
        import dask

        # No dashboard. Dask's scheduler starts an HTTP server whatever it is told (with
        # `dashboard_address=None` it took port 8787 on every interface, or moved to another
        # with a warning when 8787 was taken): here it serves nothing (no routes, no Bokeh
        # dashboard), on a free port of the loopback interface; the workers' serve nothing too.
        with dask.config.set({"distributed.scheduler.http.routes": [],
                              "distributed.worker.http.routes": []}):
            cluster = LocalCluster(
                n_workers=o.local,
                threads_per_worker=1,
                processes=True,
                dashboard_address="127.0.0.1:0",
                scheduler_kwargs={"dashboard": False},
                silence_logs=40,
            )
        return Client(cluster), cluster
    o.scheduler = _scheduler_address(o)
    security = _security(o, o.scheduler)
    try:
        return Client(o.scheduler, timeout=o.connect_timeout, security=security), None
    except (OSError, TimeoutError) as e:
        tls = _tls_failure(e)
        if tls:
            raise Fatal(f"the scheduler at {o.scheduler}: {tls}")
        raise Fatal(f"cannot reach the scheduler at {o.scheduler} within {o.connect_timeout:g} s: {e}")
    except (TypeError, ValueError) as e:
        # Dask's words for an address or a security setting it cannot use.
        raise Fatal(f"cannot connect to the scheduler at {o.scheduler}: {e}")


def _tls_failure(e):
    """What failed, in words, when connecting failed in the TLS handshake (an ``ssl`` error
    among the causes of ``e``, or named in Dask's words for it); None otherwise. Dask says a
    certificate "does not match", or a connection closed, the moment it fails: not a timeout."""
    import re
    import ssl

    err, seen = e, 0
    while err is not None and seen < 16 and not isinstance(err, ssl.SSLError):
        err, seen = err.__cause__ or err.__context__, seen + 1
    if isinstance(err, ssl.SSLCertVerificationError):
        why = err.verify_message or err.reason or str(err)
        return (f"the TLS handshake failed: this client does not trust the scheduler's certificate "
                f"({why}); check --tls-ca-file (or Dask's DASK_DISTRIBUTED__COMM__TLS__CA_FILE)")
    if isinstance(err, ssl.SSLError):
        kind, why = type(err).__name__, str(err.args[-1] if err.args else err)
    else:
        # Dask's words when it kept only the text: "...: SSLError: [SSL: ...] ... (_ssl.c:2580)".
        m = re.search(r"\b(SSL\w*Error): (.+)$", str(e))
        if not m:
            return None
        kind, why = m.groups()
    # "[SSL: TLSV1_ALERT_UNKNOWN_CA] tlsv1 alert unknown ca (_ssl.c:2580)": the words alone.
    why = re.sub(r" \(_ssl\.c:\d+\)$", "", re.sub(r"^\[SSL: [A-Z0-9_]+\] ", "", why))
    return (f"the TLS handshake failed ({kind}: {why}): the scheduler did not accept this client's "
            f"certificate? check --tls-cert and --tls-key (or Dask's TLS settings)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if isinstance(argv, (str, bytes)):
        raise TypeError("trawl.cluster.main: argv is a list of arguments, not one string")
    opts, rest = _parser().parse_known_args(argv)
    if opts.local is None and not opts.scheduler and not opts.scheduler_file:
        _say("name a scheduler (--scheduler tcp://HOST:8786 or --scheduler-file FILE) or start a "
             "local cluster (--local N)")
        return 2
    if opts.command == "audit":
        return _main(opts, lambda: Audit(opts, rest))
    if opts.resume and not opts.state:
        _say("--resume needs --state DIR")
        return 2
    if opts.state:
        try:
            _private_dir(opts.state)
        except Fatal as e:
            _say(str(e))
            return 2
    return _main(opts, lambda: Run(opts, rest))


def _main(opts, prepare):
    """Runs the job ``prepare()`` makes (its flags checked and its outputs opened before any
    cluster is contacted: a bad flag or path costs nothing) on the cluster the options name;
    the exit code."""
    import signal
    from concurrent.futures import CancelledError

    from distributed.client import FuturesCancelledError
    from distributed.comm.core import CommClosedError

    client = cluster = None
    # Outside the main thread (an embedding program) signals stay the program's; in it, the
    # handlers installed here are put back as they were when the run ends.
    before = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            before[sig] = signal.signal(sig, _on_terminate)
        except ValueError:
            pass
    lost = False
    try:
        job = prepare()
        client, cluster = _client(opts)
        return job.run(client)
    except Fatal as e:
        _say(str(e))
        return 2
    except (FuturesCancelledError, CancelledError, CommClosedError) as e:
        # The client talks to the scheduler alone: a connection closed under it is that one.
        if not isinstance(e, CommClosedError) and not _scheduler_lost(e, client):
            raise
        lost = True
        where = opts.scheduler or "the local cluster"
        resume = (" (what --state checkpointed is kept: run again with --resume)"
                  if getattr(opts, "state", None) else "")
        _say(f"lost the connection to the scheduler ({where}): the run cannot go on; "
             f"no manifest or report was written{resume}")
        return 2
    except KeyboardInterrupt:
        _say("interrupted; no manifest or report was left half-written")
        return 130
    except Terminated as t:
        name = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}.get(t.signum, str(t.signum))
        _say(f"terminated ({name}); no manifest or report was left half-written")
        return 128 + t.signum
    finally:
        # What Dask's client logs while it closes a connection already gone says nothing more:
        # its loggers are quiet while it closes, and as they were after.
        with _quiet_dask_logs(lost):
            if client is not None:
                client.close()
            if cluster is not None:
                cluster.close()
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _quiet_dask_logs(quiet):
    """Dask's loggers disabled inside the block when ``quiet``, each put back as it was after."""
    import logging

    names = [n for n in ["distributed", *logging.root.manager.loggerDict] if n.startswith("distributed")]
    loggers = [logging.getLogger(n) for n in names] if quiet else []
    was = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, w in zip(loggers, was):
            lg.disabled = w

if __name__ == "__main__":
    sys.exit(main())
