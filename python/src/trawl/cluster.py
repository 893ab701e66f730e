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
    where = s.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running scheduler (tcp://HOST:8786)")
    where.add_argument("--local", metavar="N", type=int, help="start a local cluster of N worker processes")
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
    s.add_argument("--no-speculate", action="store_true", help="do not re-issue the last shards on idle workers")
    s.add_argument("--stats", metavar="FILE", help="write the run's cluster figures (JSON)")
    a = sub.add_parser(
        "audit",
        help="audit PATH... against a catalog kept here, reading on the cluster",
        epilog="Every other option is trawl audit's (--catalog is required; --digest, --json, "
        "--max-bytes, ...). The paths must be the same on this machine and on every worker.",
    )
    where = a.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="a running scheduler (tcp://HOST:8786)")
    where.add_argument("--local", metavar="N", type=int, help="start a local cluster of N worker processes")
    a.add_argument("--shard-files", type=int, default=10000, help="at most this many files per read task (default 10000)")
    a.add_argument("--shard-size", type=_parse_size, default=8 << 30, help="at most about this many bytes per read task (default 8GiB)")
    a.add_argument("--connect-timeout", type=float, default=30.0, metavar="SECONDS", help="give up reaching the scheduler after this long (default 30)")
    a.add_argument("--stats", metavar="FILE", help="write the run's cluster figures (JSON)")
    return p


def _client(o):
    from distributed import Client, LocalCluster

    if o.local is not None:
        if o.local < 1:
            raise Fatal("--local N: N must be at least 1")
        cluster = LocalCluster(
            n_workers=o.local,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=40,
        )
        return Client(cluster), cluster
    if not o.scheduler:
        raise Fatal("name a scheduler (--scheduler tcp://HOST:8786) or start a local cluster (--local N)")
    if o.scheduler.startswith("tls://"):
        import dask

        tls = dask.config.get("distributed.comm.tls", {}) or {}
        client = tls.get("client") or {}
        if not (tls.get("ca-file") and client.get("cert")):
            raise Fatal(
                f"--scheduler {o.scheduler}: a tls:// scheduler needs Dask's TLS settings (a CA file, "
                "and this client's certificate and key: DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
                "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT, DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY), "
                "and none are set"
            )
    try:
        return Client(o.scheduler, timeout=o.connect_timeout), None
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
    # Outside the main thread (an embedding program) signals stay the program's.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _on_terminate)
        except ValueError:
            pass
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
        # What Dask's client logs while it closes a connection already gone says nothing more.
        import logging

        for name in ["distributed", *logging.root.manager.loggerDict]:
            if name.startswith("distributed"):
                logging.getLogger(name).disabled = True
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
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    sys.exit(main())
