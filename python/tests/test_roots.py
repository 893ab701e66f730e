"""The roots a client names: a relative one made absolute on the client (and nothing else that
equals one), a relative one pinned to a host (`--on`) refused by name, and an `--on` host that
is no worker's and does not resolve refused at the start."""

import json
import os
import time

from conftest import no_traceback, one_machine, trawl_dask


def test_a_relative_root_is_made_absolute_on_the_client(tree, tmp_path, cluster):
    # The worker runs in another directory, where the relative path names nothing.
    cluster.worker("w1")
    cluster.wait_for(1)
    rel = os.path.relpath(tree, str(tmp_path))
    assert not os.path.isabs(rel)
    r = trawl_dask("scan", "--scheduler", cluster.address, "--json", "c.json", rel, "-q",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    no_traceback(r)
    report = json.loads((tmp_path / "c.json").read_text())
    assert report["roots"] == [{"path": tree}], report["roots"]
    one, code = one_machine([tree], cwd=str(tmp_path))
    assert code == 0 and report["totals"]["files"] == one["totals"]["files"] > 0


def test_only_the_roots_are_made_absolute_not_an_option_equal_to_one(tmp_path, monkeypatch):
    from trawl._scan import _absolute_roots

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x").mkdir()
    args = [b"--temp-dir", b"x", b"x", b"/abs", b"y"]
    x, y = (os.fsencode(str(tmp_path / n)) for n in "xy")
    assert _absolute_roots(args) == [b"--temp-dir", b"x", x, b"/abs", y]


def test_a_relative_root_on_a_pinned_host_is_refused_by_name(tree, tmp_path, cluster):
    cluster.worker("w1")
    cluster.wait_for(1)
    r = trawl_dask("scan", "--scheduler", cluster.address, "--on", "somehost:data/x", "--json",
                   "c.json", cwd=str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "--on somehost:data/x: a relative path, which host somehost would resolve" in r.stderr
    no_traceback(r)
    assert not (tmp_path / "c.json").exists()


def test_on_a_host_that_does_not_resolve_and_names_no_worker_is_refused_at_the_start(tree, tmp_path):
    # It waited --lost-worker-timeout (120 s by default) for a host that cannot be.
    t = time.time()
    r = trawl_dask("scan", "--local", "1", "--on", f"no-such-host.invalid:{tree}", "--lost-worker-timeout", "30",
                   "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert (f"--on no-such-host.invalid:{tree}: no-such-host.invalid is no worker's name and no host name "
            "that resolves here (the workers: 0)") in r.stderr, r.stderr
    no_traceback(r)
    assert time.time() - t < 25
    assert not (tmp_path / "c.json").exists()
    # A worker's name that is no host's is taken: see
    # test_on_a_worker_name_survives_that_worker_starting_again ("b").


def test_the_plan_places_the_paths_and_says_what_decides_a_shards_result(tmp_path, monkeypatch):
    """What the cluster scan used to work out again in Python, from the plan: where each path
    stands among the arguments (a flag spelled like a path is no path), and the arguments a
    shard's result depends on, one way whatever way they were given."""
    from trawl import _native
    from trawl._scan import _absolute_roots

    monkeypatch.chdir(tmp_path)
    args = [b"-j", b"2", b"--json=-j", b"--", b"-j"]
    assert _native.Plan(args).path_places() == [4]
    assert _absolute_roots(args) == [b"-j", b"2", b"--json=-j", b"--", os.fsencode(str(tmp_path / "-j"))]
    one = _native.Plan([b"/d", b"-j", b"2", b"--json", b"a.json", b"-m", b"sha256sum:S", b"-q"])
    two = _native.Plan([b"--threads=2", b"--html=b.html", b"/d", b"--manifest=sha256sum:T"])
    assert one.result_args() == two.result_args() == [b"/d", b"--manifest=sha256sum", b"--threads=2"]
