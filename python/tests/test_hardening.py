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
    assert _absolute_roots(args, [b"x", b"/abs", b"y"]) == [b"--temp-dir", b"x", x, b"/abs", y]


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
        data = {"trawl-map-K1-a": {"parts": [b"x", b"y"]}, "trawl-map-K2-a": {"parts": [b"z"]}}

    w = Worker()
    p = _shares_plugin("K1")
    p.setup(w)
    serve = w.handlers[_shares_handler("K1")]
    assert serve(keys=["trawl-map-K1-a"], lo=1, hi=2) == [[b"y"]]
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
        # A run that ends with a message (a bad --local), and one whose scheduler is gone.
        assert cluster.main(["scan", "--local", "0", "."]) == 2
        assert signal.getsignal(signal.SIGTERM) is mine and signal.getsignal(signal.SIGHUP) is mine
        monkeypatch.setattr(cluster, "_client", lambda opts: (None, None))
        dask_log = logging.getLogger("distributed.client")

        def gone(client):
            raise CommClosedError("the scheduler went away")

        opts, _ = cluster._parser().parse_known_args(["scan", "--scheduler", "tcp://127.0.0.1:1", "."])
        assert cluster._main(opts, gone) == 2
        assert "lost the connection to the scheduler" in capsys.readouterr().err
        assert not dask_log.disabled and not logging.getLogger("distributed").disabled
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for s, h in old.items():
            signal.signal(s, h)
