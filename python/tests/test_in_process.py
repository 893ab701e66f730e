"""The package called in-process, as an embedding program calls it: it shows its own names, leaves
the interpreter's signal dispositions, the program's handlers and Dask's loggers as they were,
and takes paths and options as trawl takes them."""

import os

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


def test_scan_raises_typed_errors_with_the_fields_a_caller_needs(tmp_path, monkeypatch):
    """The keyword refused (as given, for one trawl does not have), the error's number and the
    file: fields of the exception, built from what the failure is."""
    import errno

    import trawl

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a").write_bytes(b"a\n")
    for options, option in [
        ({"top_files": -3}, "top_files"),
        ({"dedupe": "4k"}, "dedupe"),
        ({"io_depth": -1}, "io_depth"),
        ({"no_reduce": 1}, "no_reduce"),
        ({"temp_dir": tmp_path / "none"}, "temp_dir"),
        ({"digest": "sha265"}, "digest"),
        ({"manifest": ["nope:SUMS"]}, "manifest"),
        # An output trawl's rules refuse (it would replace a file inside the root).
        ({"html": tmp_path / "t" / "a"}, "html"),
    ]:
        with pytest.raises(trawl.OptionError) as e:
            trawl.scan("t", **options)
        assert (e.value.option, e.value.code) == (option, 2), (options, str(e.value))
        assert isinstance(e.value, ValueError) and str(e.value).startswith("scan(): ")
    # Two outputs named to one file: the second is refused, both named as keywords.
    with pytest.raises(trawl.OptionError, match="named by manifest and by html") as e:
        trawl.scan("t", manifest=[f"sha256sum:{tmp_path}/x"], html=tmp_path / "x")
    assert e.value.option == "html"
    missing = tmp_path / "no-dir" / "SUMS"
    with pytest.raises(FileNotFoundError, match="cannot create") as e:
        trawl.scan("t", manifest=[f"sha256sum:{missing}"])
    assert (e.value.errno, e.value.filename) == (errno.ENOENT, str(missing))
    assert "trawl-tmp" not in str(e.value)


def test_words_that_look_like_an_error_cannot_change_its_kind_or_its_message(tmp_path, monkeypatch):
    """Names that read like a system error, a usage error or a flag: the exception is of the
    failure's kind, and its message names them as they are."""
    import trawl

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a").write_bytes(b"a\n")
    for name in ["Permission denied (os error 13)", "x --top-files unexpected argument", "Usage: y"]:
        d = tmp_path / name
        # Not a directory: the option is refused, whatever its value's words.
        with pytest.raises(trawl.OptionError) as e:
            trawl.scan("t", temp_dir=d)
        assert type(e.value) is trawl.OptionError and e.value.option == "temp_dir"
        assert str(e.value) == f"scan(): temp_dir {d}: not a directory"
        # An output in a folder that does not exist: the system's error, naming the file.
        with pytest.raises(FileNotFoundError) as e:
            trawl.scan("t", manifest=[f"sha256sum:{d}/SUMS"])
        assert e.value.filename == f"{d}/SUMS"
    # A file of the tree named like an error is read and reported, not raised.
    (tmp_path / "t" / "No such file or directory (os error 2)").write_bytes(b"b\n")
    r = trawl.scan("t", digest="sha256")
    assert r["exit_code"] == 0 and r["totals"]["files"] == 2
