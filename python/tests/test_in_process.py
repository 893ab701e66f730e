"""The package called in-process, as an embedding program calls it: it shows its own names, leaves
the interpreter's signal dispositions, the program's handlers and Dask's loggers as they were,
and takes paths and options as trawl takes them."""

import pytest


def test_the_package_shows_its_own_names_not_the_modules_it_uses():
    import trawl

    public = {n for n in dir(trawl) if not n.startswith("_")}
    assert not public & {"os", "json", "re", "tempfile", "errno", "logging"}, public
    assert {"scan", "main", "ScanError", "OptionError", "cluster"} >= public - {"cluster"}, public


def test_the_binding_leaves_the_interpreters_signal_dispositions_alone():
    # trawl's command ignores SIGXFSZ for its own process; in a host program the host decides.
    import signal

    import trawl

    def ignored():
        with open("/proc/self/status") as f:
            mask = next(l for l in f if l.startswith("SigIgn:")).split()[1]
        return int(mask, 16) & (1 << (signal.SIGXFSZ - 1)) != 0

    before = signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    try:
        assert not ignored()
        assert trawl.main(["--version"]) == 0
        assert not ignored(), "trawl.main set SIGXFSZ to ignored in the interpreter"
    finally:
        signal.signal(signal.SIGXFSZ, before)


def test_an_embedded_run_leaves_the_programs_signal_handlers_and_dasks_loggers_as_they_were(monkeypatch, capsys):
    """trawl-dask called in-process (an embedding program): the SIGTERM and SIGHUP handlers it
    installs for the run are put back after it, and Dask's loggers, quiet while a client whose
    scheduler is gone closes, are as they were after (not disabled for the rest of the
    program)."""
    import logging
    import signal

    from distributed.comm.core import CommClosedError
    from trawl import cluster

    def mine(signum, frame):
        pass

    old = {s: signal.signal(s, mine) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        # A run that ends with a message (no scheduler file), and one whose scheduler is gone.
        assert cluster.main(["scan", "--scheduler-file", "/nonexistent/s.json", "."]) == 2
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGHUP) is mine
        monkeypatch.setattr(cluster, "_client", lambda opts: (None, None))
        dask_log = logging.getLogger("distributed.client")

        class Gone:
            def run(self, client):
                raise CommClosedError("the scheduler went away")

        opts, _ = cluster._parser().parse_known_args(["scan", "--scheduler", "tcp://127.0.0.1:1", "."])
        assert cluster._main(opts, Gone) == 2
        assert "lost the connection to the scheduler" in capsys.readouterr().err
        assert not dask_log.disabled and not logging.getLogger("distributed").disabled
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def test_scan_takes_paths_and_options_as_trawl_takes_them(tmp_path, monkeypatch):
    import trawl

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a").write_bytes(b"a\n")
    # An int is not a path (os.stat would take it as a file descriptor).
    for bad in (5, 1.5, None, ["t"]):
        with pytest.raises(TypeError, match=r"scan\(\): paths: .* is not a path"):
            trawl.scan(bad)
    # A value starting with '-' is the option's value, refused for what it is, by the option.
    with pytest.raises(ValueError, match=r"io_depth -1: expected auto or a number from 1 to 1024"):
        trawl.scan("t", io_depth=-1)
    with pytest.raises(ValueError, match=r"top_files"):
        trawl.scan("t", top_files=-3)
    # A value given to a flag that takes none is refused, not taken as a path to scan.
    with pytest.raises(ValueError, match=r"unexpected value '1' for no_reduce"):
        trawl.scan("t", no_reduce=1)
    # What is not text, a path or a number is refused by the option's name.
    for bad in ({"a": 1}, {1}, [["x"]], [True], object()):
        with pytest.raises(TypeError, match=r"scan\(\): top_files="):
            trawl.scan("t", top_files=bad)
    with pytest.raises(TypeError, match=r"not an option's name"):
        trawl.scan("t", **{"json=x": "y"})
    # bytes and path objects are paths, as in a list; a root named like an option is a root.
    (tmp_path / "-j").mkdir()
    (tmp_path / "-j" / "f").write_bytes(b"f\n")
    r = trawl.scan("-j", top_files=b"3", temp_dir=tmp_path, quiet=True)
    assert r["roots"] == [{"path": "-j"}] and r["totals"]["files"] == 1, r["roots"]
    with pytest.raises(TypeError, match=r"main\(\): argv is a list"):
        trawl.main("--version")
    from trawl import cluster

    with pytest.raises(TypeError, match=r"argv is a list of arguments"):
        cluster.main("scan --local 1 t")
