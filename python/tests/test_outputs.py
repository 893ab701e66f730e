"""trawl-dask writes as trawl writes: every output through trawl's writer (or the checkpoints'
private one), --stats held to the rules of the outputs (never over an input, another output, a
catalog's files or a file inside a root), and a full disk an error that leaves the old file."""

import json
import os
import re

import pytest

from conftest import no_traceback, one_machine, trawl_dask

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "trawl")


def test_no_module_opens_an_output_itself():
    """Every file trawl-dask writes goes through trawl's writer or the checkpoints' private
    writer: no `open(path, "w")` anywhere in the package."""
    for name in os.listdir(PACKAGE):
        if name.endswith(".py"):
            text = open(os.path.join(PACKAGE, name)).read()
            assert not re.search(r"""\bopen\([^)]*["'][wax]b?["']""", text), name


def test_stats_never_replaces_an_input_or_another_output(tree, tmp_path):
    r = trawl_dask("audit", "--local", "1", tree, "-q", "-c", "cat.db", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    catalog = (tmp_path / "cat.db").read_bytes()
    for stats, said in (("cat.db", "is the catalog"), ("cat.db-wal", "write-ahead log"),
                        ("cat.db-journal", "rollback journal")):
        r = trawl_dask("audit", "--local", "1", tree, "-q", "-c", "cat.db", "--stats", stats,
                       cwd=str(tmp_path))
        assert r.returncode == 2 and said in r.stderr, r.stderr
        no_traceback(r)
        assert (tmp_path / "cat.db").read_bytes() == catalog
    r = trawl_dask("audit", "--local", "1", tree, "-q", "-c", "cat.db", "--json", "a.json",
                   "--stats", "a.json", cwd=str(tmp_path))
    assert r.returncode == 2 and "named by --json and by --stats" in r.stderr, r.stderr
    (tmp_path / "r.json").write_text("keep\n")
    r = trawl_dask("scan", "--local", "1", tree, "-q", "--json", "r.json", "--stats", "./r.json",
                   cwd=str(tmp_path))
    assert r.returncode == 2 and "named by --json and by --stats" in r.stderr, r.stderr
    assert (tmp_path / "r.json").read_text() == "keep\n"
    # A root that is a file is an input.
    one = os.path.join(tree, "copy.bin")
    before = open(one, "rb").read()
    r = trawl_dask("scan", "--local", "1", one, "-q", "--stats", one, cwd=str(tmp_path))
    assert r.returncode == 2 and "is the input" in r.stderr, r.stderr
    assert open(one, "rb").read() == before
    # Inside the scanned tree, a new --stats file is left out of the scan it describes.
    r = trawl_dask("scan", "--local", "1", tree, "-q", "--json", "c.json", "--stats",
                   os.path.join(tree, "stats.json"), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    want, _ = one_machine([tree], cwd=str(tmp_path))
    got = json.load(open(tmp_path / "c.json"))
    assert got["totals"]["files"] == want["totals"]["files"] - 1  # one machine sees stats.json
    assert json.load(open(os.path.join(tree, "stats.json")))["shards"] >= 1


def test_stats_on_a_full_disk_is_exit_2_and_the_old_file_stays(tree, tmp_path, full_fs):
    r = trawl_dask("scan", "--local", "1", tree, "-q", "--stats", str(full_fs / "old.json"),
                   cwd=str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "old.json" in r.stderr and "No space left on device" in r.stderr, r.stderr
    no_traceback(r)
    assert (full_fs / "old.json").read_text() == '{"old": true}\n'
    assert sorted(os.listdir(full_fs)) == ["filler", "old.json", "state"], "a temporary file was left"


def test_no_output_or_stats_replaces_a_file_inside_a_root(tree, tmp_path):
    """trawl's own rule, through the binding: --stats or an output that would replace a file
    inside a scanned (or audited) root is refused by name; for trawl-dask, before any cluster
    is contacted, the file left as it was."""
    from trawl import _native

    a = os.path.join(tree, "copy.bin")
    before = open(a, "rb").read()
    t = os.fsencode(tree)
    with pytest.raises(ValueError, match="copy.bin: is a file inside"):
        _native.Plan([t]).open_run_output("--stats", os.fsencode(a))
    with pytest.raises(ValueError, match="copy.bin: is a file inside"):
        _native.Plan([t, b"--json", os.fsencode(a)]).open_outputs()
    with pytest.raises(ValueError, match="copy.bin: is a file inside"):
        _native.open_audit_output([t, b"-c", os.fsencode(str(tmp_path / "c.db"))], "--stats", os.fsencode(a))
    for out in (["--stats", a], ["--json", os.path.join(tree, "d0", "..", "copy.bin")]):
        r = trawl_dask("scan", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1", tree, "-q", *out,
                       cwd=str(tmp_path), timeout=60)
        assert r.returncode == 2, r.stderr
        assert "copy.bin: is a file inside" in r.stderr and "which is read" in r.stderr, r.stderr
        assert "cannot reach" not in r.stderr, r.stderr
        no_traceback(r)
    r = trawl_dask("audit", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1", tree, "-c", "c.db",
                   "--stats", a, cwd=str(tmp_path), timeout=60)
    assert r.returncode == 2 and "copy.bin: is a file inside" in r.stderr, r.stderr
    assert open(a, "rb").read() == before
    assert not (tmp_path / "c.db").exists()
