"""trawl's engine in-process: ``trawl.scan(...)`` returns the report ``trawl scan --json``
writes, and ``trawl.main([...])`` runs any trawl command line. ``trawl.cluster`` (the
``trawl-dask`` command) spreads one scan over a Dask cluster."""

import json
import os
import tempfile

from . import _native

__version__ = _native.__version__


def _flag(name, value):
    """One keyword argument as trawl flags: ``top_files=5`` -> ``--top-files 5``."""
    flag = "--" + name.replace("_", "-")
    if value is True:
        return [flag]
    if value is False or value is None:
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out += [flag, os.fsdecode(v) if isinstance(v, bytes) else str(v)]
        return out
    return [flag, str(value)]


def main(argv):
    """Runs a trawl command line (without the program's name) in this process; its exit code."""
    return _native.main([os.fsencode(a) for a in ["trawl", *argv]])


class ScanError(RuntimeError):
    """A scan that wrote no report (bad flags, an output that could not be written)."""

    def __init__(self, code):
        super().__init__(f"trawl scan ended with exit code {code} and no report")
        self.code = code


def scan(*paths, **options):
    """Reads every file under ``paths`` once, as ``trawl scan`` does with the same options
    (``digest="sha256,blake3"``, ``cdc="16k"``, ``manifest=["sha256sum:SUMS"]``, ...), and
    returns the report ``--json`` writes, as a dict, with ``exit_code`` added (2 when some files
    could not be read: they are listed under ``failed``)."""
    if not paths:
        raise ValueError("scan: name at least one path")
    if "json" in options:
        raise ValueError("scan: the report is returned; write it with json.dump")
    argv = ["scan", *[os.fsdecode(p) for p in paths], "--quiet"]
    for k, v in options.items():
        argv += _flag(k, v)
    with tempfile.TemporaryDirectory(prefix="trawl-") as d:
        out = os.path.join(d, "report.json")
        code = main(argv + ["--json", out])
        if not os.path.exists(out):
            raise ScanError(code)
        with open(out, "rb") as f:
            report = json.load(f)
    report["exit_code"] = code
    return report
