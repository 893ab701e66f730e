"""What trawl-dask's modules share: how it speaks, the errors that end a run, and how a lost
scheduler is told apart."""

import sys

from ._progress import clear_shown


def _say(msg):
    # The progress line, if one is shown, is cleared first (it is drawn again a second later).
    clear_shown()
    # A stderr whose reader has gone (`2>&1 | head`) loses the message, nothing else.
    try:
        print(f"trawl-dask: {msg}", file=sys.stderr, flush=True)
    except (BrokenPipeError, ValueError):
        pass


class Fatal(Exception):
    """An error that ends the run with exit code 2 and a message."""


def _write_run_file(out, value):
    """Writes ``value`` as JSON to a file of the run's own (``_native.RunFile``, opened as
    trawl's outputs are); a write that fails (a full disk) ends the run with exit code 2,
    leaving whatever was at that name as it was."""
    import json

    try:
        out.write((json.dumps(value, indent=2) + "\n").encode())
    except OSError as e:
        raise Fatal(str(e).strip())


class Terminated(BaseException):
    """SIGTERM or SIGHUP (what `timeout`, `kubectl` and `scancel` send): the run unwinds, so that
    no output is left half-written, and exits 128 + the signal."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _on_terminate(signum, _frame):
    raise Terminated(signum)


def _scheduler_lost(e, client):
    """Whether ``e`` (a cancellation: one future's, or a group's) came from losing the
    scheduler: the reason Dask gives the cancelled futures, or a client no longer running."""
    lost = "scheduler-connection-lost"
    reasons = [getattr(e, "reason", None)] + [g.reason for g in getattr(e, "error_groups", ())]
    return lost in reasons or (client is not None and client.status != "running")
