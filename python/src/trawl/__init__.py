"""trawl's engine in-process: ``trawl.scan(...)`` returns the report ``trawl scan --json``
writes, and ``trawl.main([...])`` runs any trawl command line. ``trawl.cluster`` (the
``trawl-dask`` command) spreads one scan over a Dask cluster."""

import json as _json
import logging as _logging
import numbers as _numbers
import os as _os
import tempfile as _tempfile

from . import _native
from ._errors import OptionError, ScanError

__version__ = _native.__version__


#: What a keyword argument's value (or each item of a list of them) may be: text, a path, a
#: number (numpy's included).
_VALUE_TYPES = (str, bytes, _os.PathLike, _numbers.Real)


def _value(name, v):
    """One value of keyword argument ``name`` as bytes; TypeError naming it for anything that
    is not text, a path or a number (a dict, a set, a nested list)."""
    if isinstance(v, bool) or not isinstance(v, _VALUE_TYPES):
        raise TypeError(f"scan(): {name}={v!r}: expected a string, a path or a number "
                        f"(True for a flag, a list for a repeatable option)")
    if isinstance(v, (str, bytes, _os.PathLike)):
        return _os.fsencode(v)
    return str(v).encode()


def _option(name, value):
    """One keyword argument as the binding takes it: ``(name, None)`` for a flag
    (``True``), ``(name, [values])`` otherwise, nothing for ``False`` or ``None``. The binding
    makes it trawl's flag (``top_files`` -> ``--top-files``), the value joined to it."""
    if value is False or value is None:
        return []
    if value is True:
        return [(name, None)]
    if isinstance(value, (list, tuple)):
        return [(name, [_value(name, v) for v in value])]
    return [(name, [_value(name, value)])]


def main(argv):
    """Runs a trawl command line (without the program's name) in this process; its exit code."""
    if isinstance(argv, (str, bytes)):
        raise TypeError("main(): argv is a list of arguments (main(['scan', 'DIR'])), not one string")
    return _native.main([_os.fsencode(a) for a in ["trawl", *argv]])


_log = _logging.getLogger("trawl")


def _is_object_url(p):
    """Whether a root is an object store's (``s3://BUCKET/PREFIX``), as trawl tells one."""
    return isinstance(p, (str, bytes)) and _os.fsencode(p).startswith(b"s3://")


def scan(*paths, **options):
    """Reads every file under ``paths`` once, as ``trawl scan`` does with the same options
    (``digest="sha256,blake3"``, ``cdc="16k"``, ``manifest=["sha256sum:SUMS"]``, ...; a path
    may be an ``s3://BUCKET/PREFIX`` root, with ``endpoint=``, ``region=``, ``profile=``,
    ``no_sign_request=True``, ``path_style=True`` as trawl takes them), and
    returns the report ``--json`` writes, as a dict, with ``exit_code`` added (2 when some files
    could not be read: they are listed under ``failed``).

    Raises ``OptionError`` (a ``ValueError``; ``option``: the keyword refused) for an option
    trawl refuses, ``FileNotFoundError`` or ``PermissionError`` (``OSError``: ``errno``, and
    ``filename`` where trawl names the file) for a path that cannot be looked at or an output
    that cannot be created, and ``ScanError`` (``code``: the exit code) when no report was
    written for another reason; each carries trawl's words, and is told from what the failure
    is, never from its words. Messages about single files go to the ``trawl`` logger, not to
    stderr."""
    if not paths:
        raise ValueError("scan: name at least one path")
    if "json" in options:
        raise ValueError("scan: the report is returned; write it with json.dump")
    for p in paths:
        # A path is text, bytes or a path object: os.stat would take an int as a descriptor.
        if not isinstance(p, (str, bytes, _os.PathLike)):
            raise TypeError(f"scan(): paths: {p!r} is not a path (expected str, bytes or os.PathLike)")
        # The path's own error, typed, before anything is read (os.stat raises it); an
        # s3://BUCKET/PREFIX root is the store's to answer for, as trawl scan takes it.
        if not _is_object_url(p):
            _os.stat(p)
    opts = [o for k, v in options.items() for o in _option(k, v)]
    with _tempfile.TemporaryDirectory(prefix="trawl-") as d:
        out = _os.path.join(d, "report.json")
        # Raises OptionError, OSError or ScanError, built from what the failure is.
        code, said = _native.scan([_os.fsencode(p) for p in paths], opts, _os.fsencode(out))
        if not _os.path.exists(out):
            # It ended without its result and without an error: stopped.
            raise ScanError(code, "; ".join(said))
        with open(out, "rb") as f:
            report = _json.load(f)
    for message in said:
        _log.warning("%s", message)
    report["exit_code"] = code
    return report
