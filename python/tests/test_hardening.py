"""trawl-dask keeps trawl's rules for what it writes and how it fails: its own outputs go
through trawl's writer, a resume never takes a shard that computed less, faults end with a
message and exit 2, and a run's shares are served to that run alone."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import comparable, one_machine, trawl_dask

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "trawl")


@pytest.fixture
def full_fs(tmp_path):
    """A 256 KiB tmpfs holding old.json and an empty private folder state/, then filled: every
    write there fails with ENOSPC. Root only (it mounts)."""
    if os.geteuid() != 0:
        if os.environ.get("TRAWL_REQUIRE_INTEROP") == "1":
            pytest.fail("a full filesystem needs root to mount, and TRAWL_REQUIRE_INTEROP=1")
        pytest.skip("a full filesystem needs root to mount")
    at = tmp_path / "full"
    at.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(at)], check=True)
    try:
        with open(at / "old.json", "w") as f:
            f.write('{"old": true}\n')
        os.mkdir(at / "state", 0o700)
        try:
            with open(at / "filler", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)])


def no_traceback(r):
    assert "Traceback" not in r.stderr, r.stderr


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


def test_a_checkpoint_that_cannot_be_written_is_said_once_and_the_run_goes_on(tree, tmp_path, full_fs):
    want, _ = one_machine([tree], cwd=str(tmp_path))
    state = full_fs / "state"
    r = trawl_dask("scan", "--local", "1", "--shard-files", "8", "--state", str(state), tree, "-q",
                   "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    no_traceback(r)
    assert r.stderr.count("the run goes on without checkpoints") == 1, r.stderr
    # The file that could not be written is named: the run's own file, written first.
    assert re.search(rf"cannot write {re.escape(str(state))}/[0-9a-f]+\.run: No space left on device", r.stderr), r.stderr
    assert comparable(json.load(open(tmp_path / "c.json")))["reduction"] == comparable(want)["reduction"]


def test_resume_reads_again_the_shards_whose_checkpoints_lack_what_the_run_needs(tree, tmp_path):
    """A run that wrote a manifest only computed no reduction; a resume that writes a report
    needs it: it says so, reads every shard again, and its figures are one machine's."""
    want, _ = one_machine([tree], cwd=str(tmp_path))
    state = tmp_path / "state"
    base = ["scan", "--local", "2", "--shard-files", "8", "--no-speculate", "--state", str(state), tree]
    r = trawl_dask(*base, "-q", "-m", "sha256sum:SUMS", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert [f for f in os.listdir(state) if f.endswith(".shard")]
    r = trawl_dask(*base, "--resume", "-m", "sha256sum:SUMS2", "--json", "c.json", "--stats", "s.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "hold no reduction" in r.stderr and "every shard is read again" in r.stderr, r.stderr
    assert json.load(open(tmp_path / "s.json"))["resumed_shards"] == 0
    got = json.load(open(tmp_path / "c.json"))
    assert got["reduction"] == want["reduction"]
    assert got["reduction"]["dedup"][0]["unique_bytes"] > 0


def checkpointed(tree, tmp_path):
    state = tmp_path / "state"
    args = ["scan", "--local", "1", "--shard-files", "8", "--no-speculate", "--state", str(state),
            tree, "-q", "--json", "c.json"]
    r = trawl_dask(*args, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return args, state, sorted(state / f for f in os.listdir(state) if f.endswith(".shard"))


def test_a_checkpoint_that_passes_its_digest_but_does_not_decode_is_named(tree, tmp_path):
    from trawl import cluster

    args, _, shards = checkpointed(tree, tmp_path)
    ck = cluster._checkpoint_decode(shards[0].read_bytes())
    ck["totals"] = b"not the totals"
    shards[0].write_bytes(cluster._checkpoint_encode(ck))
    r = trawl_dask(*args, "--resume", cwd=str(tmp_path))
    assert r.returncode == 2, r.stderr
    no_traceback(r)
    assert str(shards[0]) in r.stderr and "does not decode" in r.stderr, r.stderr


def test_a_huge_sparse_checkpoint_is_refused_without_reading_it(tree, tmp_path):
    args, state, shards = checkpointed(tree, tmp_path)
    for s in shards:
        with open(s, "r+b") as f:
            f.truncate(3 << 30)
    t = time.monotonic()
    r = trawl_dask(*args, "--resume", cwd=str(tmp_path))
    took = time.monotonic() - t
    assert r.returncode == 0, r.stderr
    assert took < 60, took
    assert str(shards[0]) in r.stderr and "declares" in r.stderr, r.stderr
    assert "no checkpoint in" not in r.stderr, r.stderr
    assert f"{len(shards)} checkpoint(s) in {state} could not be taken" in r.stderr, r.stderr


def test_a_tls_scheduler_without_tls_settings_is_refused_by_name(tree, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_DISTRIBUTED__COMM__TLS")}
    r = subprocess.run([sys.executable, "-m", "trawl.cluster", "scan", "--scheduler",
                        "tls://127.0.0.1:1", "--connect-timeout", "5", tree],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "needs this client's certificate: --tls-ca-file" in r.stderr, r.stderr
    no_traceback(r)


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


def test_a_scheduler_file_is_read_as_trawl_reads_an_input(tmp_path):
    """Never waited on (a FIFO), a regular file of at most 1 MiB (a larger one is refused by its
    size, unread), JSON parsed with its nesting bounded: each refusal one line naming the file,
    exit 2, before any cluster is contacted."""
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(5 << 20)
    (tmp_path / "deep.json").write_bytes(b"[" * 65536)
    (tmp_path / "cut.json").write_bytes(b'{"address": ')
    os.mkfifo(tmp_path / "fifo.json")
    for name, says in (
        ("fifo.json", "FIFO (named pipe), not read"),
        ("big.json", "5242880 bytes, more than the 1048576"),
        ("deep.json", "not a scheduler file (JSON with an \"address\"): recursion limit exceeded"),
        ("cut.json", "not a scheduler file (JSON with an \"address\")"),
        (".", "directory, not read"),
    ):
        path = str(tmp_path / name)
        # A run that waits on the FIFO is killed, and the test fails: it never hangs.
        r = trawl_dask("scan", "--scheduler-file", path, str(tmp_path), cwd=str(tmp_path), timeout=60)
        assert r.returncode == 2, r.stderr
        no_traceback(r)
        lines = r.stderr.strip().splitlines()
        assert lines == [f"trawl-dask: --scheduler-file {path}: {lines[0].split(': ', 2)[2]}"], r.stderr
        assert says in lines[0], r.stderr


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


def test_a_local_cluster_starts_no_dashboard_and_takes_no_port_8787():
    # `LocalCluster(dashboard_address=None)` still started the scheduler's HTTP server on port
    # 8787 of every interface, or moved it with a warning when 8787 was taken.
    import socket
    import urllib.error
    import urllib.request
    import warnings

    from trawl import cluster

    held = socket.socket()
    try:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("0.0.0.0", 8787))
        held.listen()
    except OSError:
        pass  # taken already
    opts, _ = cluster._parser().parse_known_args(["scan", "--local", "1", "."])
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        client, local = cluster._client(opts)
    try:
        assert not [w for w in said if "8787" in str(w.message)], [str(w.message) for w in said]
        http = local.scheduler.http_server
        assert http.port != 8787 and http.address == "127.0.0.1", (http.address, http.port)
        for page in ("status", "health", "info/main/workers.html", "metrics"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(f"http://127.0.0.1:{http.port}/{page}", timeout=10)
            assert e.value.code == 404, page
    finally:
        client.close()
        local.close()
        held.close()


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
