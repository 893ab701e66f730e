"""trawl-dask's numeric flags: a value out of bounds refused by name when parsed, before any
cluster is contacted; the bounds themselves taken."""

import pytest

from conftest import no_traceback, trawl_dask


def refused_before_any_cluster(monkeypatch, capsys, argv):
    """Runs ``trawl-dask ARGV`` in-process with every way to a cluster closed: its exit code and
    stderr (a flag refused when parsed exits through argparse)."""
    from trawl import cluster

    def no_cluster(opts):
        raise AssertionError("a cluster was contacted")

    monkeypatch.setattr(cluster, "_client", no_cluster)
    try:
        code = cluster.main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("flag,bad", [
    (flag, bad)
    for flag in ("--worker-timeout", "--connect-timeout", "--lost-worker-timeout")
    for bad in ("0", "-1", "nan", "inf", "1e9", "0.5", "x")
] + [
    ("--local", "0"), ("--local", "-1"), ("--local", "100000"), ("--local", "1.5"),
    ("--partitions", "0"), ("--partitions", "-1"), ("--partitions", "70000"),
    ("--reducers", "-1"), ("--reducers", "70000"),
    ("--shard-files", "0"), ("--shard-files", "-1"), ("--shard-files", "10" * 12),
    ("--shard-size", "0"), ("--shard-size", "-1"), ("--shard-size", "nan"),
])
def test_a_numeric_flag_out_of_its_bounds_is_refused_by_name_when_parsed(monkeypatch, capsys, flag, bad):
    where = [] if flag == "--local" else ["--local", "1"]
    code, err = refused_before_any_cluster(monkeypatch, capsys, ["scan", *where, flag, bad, "."])
    assert code == 2, err
    assert f"argument {flag}: " in err and f"'{bad}'" in err, err
    assert "from 1 to 86400 (a day" in err or not flag.endswith("-timeout"), err
    # The audit's flags of the same names take the same values.
    if flag in ("--worker-timeout", "--connect-timeout", "--shard-files", "--shard-size"):
        code, err = refused_before_any_cluster(monkeypatch, capsys, ["audit", *where, flag, bad, ".", "-c", "c.db"])
        assert code == 2 and f"argument {flag}: " in err and f"'{bad}'" in err, err


def test_numeric_flags_take_their_bounds():
    from trawl import cluster

    opts, _ = cluster._parser().parse_known_args([
        "scan", "--local", "1024", "--worker-timeout", "86400", "--connect-timeout", "1",
        "--lost-worker-timeout", "2.5", "--partitions", "65536", "--reducers", "0", "--shard-files", "1",
        "--shard-size", "1", ".",
    ])
    assert (opts.local, opts.worker_timeout, opts.connect_timeout, opts.lost_worker_timeout) == (1024, 86400, 1, 2.5)
    assert (opts.partitions, opts.reducers, opts.shard_files, opts.shard_size) == (65536, 0, 1, 1)


def test_a_worker_timeout_of_0_ends_at_once_with_exit_2_and_one_message(tmp_path):
    r = trawl_dask("scan", "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "1",
                   "--worker-timeout", "0", str(tmp_path), cwd=str(tmp_path), timeout=60)
    assert r.returncode == 2, r.stderr
    assert "argument --worker-timeout: '0': expected a number of seconds from 1 to 86400" in r.stderr, r.stderr
    no_traceback(r)
