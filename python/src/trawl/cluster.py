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
import json
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
    """A size as trawl's own flags read it (one rule, in Rust)."""
    try:
        return _native.parse_size(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


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
    s.add_argument("--partitions", type=int, default=64, help="fingerprint partitions, each counted apart (default 64)")
    s.add_argument("--reducers", type=int, default=0, help="reduce tasks, each counting a range of partitions (default: twice the workers)")
    s.add_argument("--shard-files", type=int, default=10000, help="at most this many files per shard (default 10000)")
    s.add_argument("--shard-size", type=_parse_size, default=8 << 30, help="at most this many bytes per shard (default 8GiB)")
    s.add_argument("--state", metavar="DIR", help="checkpoint each finished shard here (for --resume)")
    s.add_argument("--resume", action="store_true", help="take the shards already checkpointed in --state DIR")
    s.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS", help="give up reaching the scheduler after this long (default 30)")
    s.add_argument(
        "--lost-worker-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="shards pinned to a host with no worker for this long are named and the run ends "
        "with exit code 2 (default 120)",
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
    a.add_argument("--shard-files", type=int, default=10000, help="at most this many files per read task (default 10000)")
    a.add_argument("--shard-size", type=_parse_size, default=8 << 30, help="at most about this many bytes per read task (default 8GiB)")
    a.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS", help="give up reaching the scheduler after this long (default 30)")
    _worker_timeout(a, "")
    a.add_argument("--stats", metavar="FILE", help="write the run's cluster figures (JSON)")
    return p


def _worker_timeout(p, also):
    p.add_argument(
        "--worker-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help=f"a worker not heard from for this long{also} is taken as lost and its work runs "
        "on the others (default 60)",
    )


def _where(p):
    """The options that say which cluster runs the work, and how to reach it."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running scheduler (tcp://HOST:8786, tls://HOST:8786)")
    where.add_argument("--scheduler-file", metavar="FILE", help="a running scheduler's address, from the file "
                       "`dask scheduler --scheduler-file FILE` writes (as dask-jobqueue and dask-mpi hand it over)")
    where.add_argument("--local", metavar="N", type=int, help="start a local cluster of N worker processes")
    p.add_argument("--tls-ca-file", metavar="FILE", help="a tls:// scheduler: the CA certificate(s) to trust")
    p.add_argument("--tls-cert", metavar="FILE", help="a tls:// scheduler: this client's certificate")
    p.add_argument("--tls-key", metavar="FILE", help="a tls:// scheduler: this client's private key (if not in --tls-cert)")


def _scheduler_address(o):
    """The scheduler's address: --scheduler, or the one in --scheduler-file."""
    if not o.scheduler_file:
        return o.scheduler
    try:
        with open(o.scheduler_file) as f:
            address = json.load(f).get("address")
    except OSError as e:
        raise Fatal(f"--scheduler-file {o.scheduler_file}: cannot read it: {e.strerror or e}")
    except (ValueError, AttributeError):
        raise Fatal(f"--scheduler-file {o.scheduler_file}: not a scheduler file (JSON with an \"address\")")
    if not isinstance(address, str) or "://" not in address:
        raise Fatal(f"--scheduler-file {o.scheduler_file}: no scheduler address in it")
    return address


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
        if o.local < 1:
            raise Fatal("--local N: N must be at least 1")
        if o.tls_ca_file or o.tls_cert or o.tls_key:
            raise Fatal("--tls-*: for a running tls:// scheduler, not a local cluster")
        cluster = LocalCluster(
            n_workers=o.local,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        )
        return Client(cluster), cluster
    o.scheduler = _scheduler_address(o)
    if not o.scheduler:
        raise Fatal("name a scheduler (--scheduler tcp://HOST:8786 or --scheduler-file FILE) or start a "
                    "local cluster (--local N)")
    security = _security(o, o.scheduler)
    try:
        return Client(o.scheduler, timeout=o.connect_timeout, security=security), None
    except (OSError, TimeoutError) as e:
        raise Fatal(f"cannot reach the scheduler at {o.scheduler} within {o.connect_timeout:g} s: {e}")
    except (TypeError, ValueError) as e:
        # Dask's words for an address or a security setting it cannot use.
        raise Fatal(f"cannot connect to the scheduler at {o.scheduler}: {e}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts, rest = _parser().parse_known_args(argv)
    if opts.command == "audit":
        return _main(opts, lambda client: Audit(opts, rest, client).run())
    if opts.resume and not opts.state:
        _say("--resume needs --state DIR")
        return 2
    if opts.state:
        try:
            _private_dir(opts.state)
        except Fatal as e:
            _say(str(e))
            return 2
    if opts.partitions < 1 or opts.partitions > 65536:
        _say("--partitions: between 1 and 65536")
        return 2
    return _main(opts, lambda client: Run(opts, rest, client).run())


def _main(opts, run):
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
        client, cluster = _client(opts)
        return run(client)
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
