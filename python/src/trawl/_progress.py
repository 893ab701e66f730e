"""trawl-dask's progress line: one line on stderr, only when it is a terminal and not with -q,
redrawn in place at most about once a second, cleared before anything else is said and at the
end. Its figures are trawl scan's units (``trawl_printer::human_bytes`` and its kin):
``1.5 GiB``, ``12.0 MiB/s``, ``1m15s``."""

import os
import sys
import time

#: The line on the terminal now, if any: cleared before a message is said (see ``_common._say``).
_shown = []


def human_bytes(n):
    """``n`` bytes as trawl says them: ``512 B``, ``1.5 GiB``."""
    units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    v, u = float(n), 0
    while v >= 1024.0 and u < len(units) - 1:
        v /= 1024.0
        u += 1
    return f"{int(n)} B" if u == 0 else f"{v:.1f} {units[u]}"


def human_duration(secs):
    """``75`` -> ``1m15s``; ``3725`` -> ``1h02m``."""
    s = int(round(max(secs, 0.0)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


def clear_shown():
    """Clears the progress line on the terminal, if one is shown (before a message is said)."""
    for p in list(_shown):
        p.clear()


class Progress:
    """The progress line of one run; ``on`` when stderr is a terminal and -q was not given.
    ``tick(describe)`` redraws it with ``describe()``'s text when a second has passed since it
    was last drawn (the first time a second into the run: a run that takes less shows none)."""

    def __init__(self, on):
        self.on = on
        self.drawn = time.monotonic()
        self.shown = False

    @staticmethod
    def wanted(quiet):
        """Whether a run shows one: stderr a terminal, and no -q."""
        try:
            return not quiet and sys.stderr.isatty()
        except (AttributeError, ValueError):
            return False

    def tick(self, describe):
        if not self.on:
            return
        now = time.monotonic()
        if now - self.drawn < 1.0:
            return
        self.drawn = now
        try:
            width = os.get_terminal_size(sys.stderr.fileno()).columns
        except (OSError, ValueError):
            width = 0
        width = width or 80  # a terminal that gives no size (a pseudo-terminal not set up)
        # Never wider than the terminal: a line that wraps is not redrawn in place.
        text = f"trawl-dask: {describe()}"[: max(width - 1, 10)]
        self.write(f"\r{text}\x1b[K")
        self.shown = True
        if self not in _shown:
            _shown.append(self)

    def clear(self):
        if self.shown:
            self.write("\r\x1b[K")
            self.shown = False
        if self in _shown:
            _shown.remove(self)

    def end(self):
        """Clears the line for good: nothing is drawn after."""
        self.clear()
        self.on = False

    def write(self, s):
        # A terminal that has gone loses the line, nothing else.
        try:
            sys.stderr.write(s)
            sys.stderr.flush()
        except (BrokenPipeError, OSError, ValueError):
            self.on = False
