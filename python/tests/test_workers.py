"""What a run leaves on its workers and says of them: the shares handler lives for its run and
serves its own keys alone; workers that left or joined are said (or, with -q, only kept in the
stats)."""

import pytest

from conftest import trawl_dask


def test_the_shares_handler_lives_for_its_run_and_serves_its_keys_alone(tree, tmp_path, cluster):
    from trawl._tasks import _shares_handler, _shares_plugin

    cluster.worker("w1")
    cluster.wait_for(1)
    r = trawl_dask("scan", "--scheduler", cluster.address, tree, "-q", "--json", "c.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    c = cluster.client()
    try:
        left = c.run(lambda dask_worker: sorted(h for h in dask_worker.handlers if "trawl" in h))
        assert list(left.values()) == [[]], left
        plugins = c.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.worker_plugins))
        assert not [p for p in plugins if "trawl" in p], plugins
    finally:
        c.close()

    class Worker:
        handlers = {}
        data = {"trawl-map-K1-a": {"parts": [b"x", b"y"], "digest": "d1"}, "trawl-map-K2-a": {"parts": [b"z"]}}

    w = Worker()
    p = _shares_plugin("K1")
    p.setup(w)
    serve = w.handlers[_shares_handler("K1")]
    # Each share comes with the digest of the whole result it is taken from.
    assert serve(keys=["trawl-map-K1-a"], lo=1, hi=2) == [("d1", [b"y"])]
    with pytest.raises(KeyError):
        serve(keys=["trawl-map-K2-a"], lo=0, hi=1)
    p.teardown(w)
    assert w.handlers == {}


def test_quiet_silences_the_workers_that_left_or_joined_and_the_stats_keep_them(tree, monkeypatch, capsys):
    from trawl._audit import Audit
    from trawl._scan import Run
    from trawl.cluster import _parser

    for job, args in ((Run, [tree]), (Audit, [tree, "-c", "cat.db"])):
        for quiet in (False, True):
            opts, _ = _parser().parse_known_args(["scan" if job is Run else "audit", "--local", "1", tree])
            run = job(opts, args + (["-q"] if quiet else []))
            monkeypatch.setattr(run, "workers", lambda: {"tcp://10.0.0.2:2": {}})
            run.started_with = {"tcp://10.0.0.1:1"}
            run.say_worker_changes()
            err = capsys.readouterr().err
            assert run.stats["workers_left"] == ["tcp://10.0.0.1:1"], run.stats
            assert run.stats["workers_joined"] == ["tcp://10.0.0.2:2"], run.stats
            if quiet:
                assert err == "", err
            else:
                assert "1 worker(s) left during the run (tcp://10.0.0.1:1)" in err, err
                assert "1 worker(s) joined during the run (tcp://10.0.0.2:2)" in err, err
