"""trawl's engine in-process: ``trawl.scan(...)`` returns the report ``trawl scan --json``
writes, and ``trawl.main([...])`` runs any trawl command line. ``trawl.cluster`` (the
``trawl-dask`` command) spreads one scan over a Dask cluster."""

import errno as _errno
import json as _json
import logging as _logging
import numbers as _numbers
import os as _os
import re as _re
import tempfile as _tempfile

from . import _native

__version__ = _native.__version__


#: What a keyword argument's value (or each item of a list of them) may be: text, a path, a
#: number (numpy's included).
_VALUE_TYPES = (str, bytes, _os.PathLike, _numbers.Real)


def _value(name, v):
    """One value of keyword argument ``name`` as text; TypeError naming it for anything that
    is not text, a path or a number (a dict, a set, a nested list)."""
    if isinstance(v, bool) or not isinstance(v, _VALUE_TYPES):
        raise TypeError(f"scan(): {name}={v!r}: expected a string, a path or a number "
                        f"(True for a flag, a list for a repeatable option)")
    if isinstance(v, (bytes, _os.PathLike)):
        return _os.fsdecode(v)
    return str(v)


def _flag(name, value):
    """One keyword argument as trawl flags: ``top_files=5`` -> ``--top-files=5``. The value is
    joined to its flag, so that one starting with ``-`` is taken as the value it is (not as
    another option), and one given to a flag that takes none is refused (not taken as a
    path)."""
    if not isinstance(name, str) or not _re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", name):
        raise TypeError(f"scan(): {name!r}: not an option's name (trawl scan's long flags, with _ for -)")
    flag = "--" + name.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [f"{flag}={_value(name, v)}" for v in value]
    return [f"{flag}={_value(name, value)}"]


def main(argv):
    """Runs a trawl command line (without the program's name) in this process; its exit code."""
    if isinstance(argv, (str, bytes)):
        raise TypeError("main(): argv is a list of arguments (main(['scan', 'DIR'])), not one string")
    return _native.main([_os.fsencode(a) for a in ["trawl", *argv]])


class ScanError(RuntimeError):
    """A scan that wrote no report for a reason other than a bad option or path (an output
    that could not be written, a temporary directory that is full): ``message`` is trawl's
    own words, ``code`` its exit code."""

    def __init__(self, code, message=""):
        super().__init__(message or f"trawl scan ended with exit code {code} and no report")
        self.code = code
        self.message = message


class OptionError(ScanError, ValueError):
    """An option ``scan()`` was given that trawl refuses (unknown, or a bad value): the message
    names it as a keyword argument, and says what would be taken. A ``ValueError``, and a
    ``ScanError`` with exit code 2."""

    def __init__(self, message):
        super().__init__(2, message)


_log = _logging.getLogger("trawl")


def _option_error(text):
    """trawl's usage error as words about keyword arguments: ``--top-files`` -> ``top_files``,
    and no usage line (it would name the binding's own flags)."""
    keep = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("Usage:", "For more information")):
            continue
        line = line.removeprefix("error: ").removeprefix("trawl: ")
        line = line.replace("unexpected argument", "unknown option").replace("a similar argument", "a similar option")
        keep.append(_re.sub(r"'?--([a-z0-9][a-z0-9-]*)(?: <[^>]*>)?'?",
                           lambda m: m.group(1).replace("-", "_"), line))
    return OptionError("scan(): " + "; ".join(keep))


def _os_error(message):
    """An ``OSError`` of the right subclass (``FileNotFoundError``, ``PermissionError``, ...) when
    trawl's words end with a system error, else None."""
    for n in sorted(_errno.errorcode):
        if f"{_os.strerror(n)} (os error {n})" in message:
            return OSError(n, message)
    return None


def scan(*paths, **options):
    """Reads every file under ``paths`` once, as ``trawl scan`` does with the same options
    (``digest="sha256,blake3"``, ``cdc="16k"``, ``manifest=["sha256sum:SUMS"]``, ...), and
    returns the report ``--json`` writes, as a dict, with ``exit_code`` added (2 when some files
    could not be read: they are listed under ``failed``).

    Raises ``OptionError`` (a ``ValueError``) for an option trawl refuses, ``FileNotFoundError``
    or ``PermissionError`` (``OSError``) for a path that cannot be looked at, and ``ScanError``
    when no report was written for another reason; each carries trawl's words. Messages about
    single files go to the ``trawl`` logger, not to stderr."""
    if not paths:
        raise ValueError("scan: name at least one path")
    if "json" in options:
        raise ValueError("scan: the report is returned; write it with json.dump")
    for p in paths:
        # A path is text, bytes or a path object: os.stat would take an int as a descriptor.
        if not isinstance(p, (str, bytes, _os.PathLike)):
            raise TypeError(f"scan(): paths: {p!r} is not a path (expected str, bytes or os.PathLike)")
        # The path's own error, typed, before anything is read (os.stat raises it).
        _os.stat(p)
    argv = ["scan", "--quiet"]
    for k, v in options.items():
        # Always quiet (the messages go to the logger): a `quiet` keyword changes nothing.
        if k != "quiet":
            argv += _flag(k, v)
    with _tempfile.TemporaryDirectory(prefix="trawl-") as d:
        out = _os.path.join(d, "report.json")
        # The paths after `--`: one starting with `-` is a path, not an option.
        argv += ["--json", out, "--", *[_os.fsdecode(p) for p in paths]]
        code, said = _native.main_captured([_os.fsencode(a) for a in ["trawl", *argv]])
        if not _os.path.exists(out):
            msg = said.strip().removeprefix("trawl: ")
            e = _os_error(msg)
            if e is not None:
                raise e
            if code == 2 and msg:
                raise _option_error(said)
            raise ScanError(code, msg)
        with open(out, "rb") as f:
            report = _json.load(f)
    for line in said.splitlines():
        if line.strip():
            _log.warning("%s", line.removeprefix("trawl: "))
    report["exit_code"] = code
    return report
