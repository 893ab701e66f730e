"""trawl-dask under faults around its workers: the scheduler unreachable or lost, TLS and
scheduler files, checkpoints planted or damaged, paths a worker cannot read, SIGTERM; each test
runs a Dask scheduler and workers as processes on loopback."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import (
    SCAN, assert_same_report, ended, one_machine, trawl_dask, trawl_dask_started, wait_until,
    worker_pid,
)


def test_an_unreachable_scheduler_is_a_clear_error_within_the_timeout(tree, tmp_path):
    from conftest import free_port

    t = time.time()
    r = trawl_dask("scan", "--scheduler", f"tcp://127.0.0.1:{free_port()}", "--connect-timeout", "2",
                   tree, cwd=str(tmp_path))
    assert r.returncode == 2
    assert "cannot reach the scheduler at tcp://127.0.0.1:" in r.stderr
    assert "within 2 s" in r.stderr
    assert time.time() - t < 20


def test_planted_checkpoints_never_run_and_their_shards_are_read_again(tree, tmp_path):
    """A pickle, a link and a damaged file where checkpoints go: --resume runs nothing from
    them, writes through no link, reads those shards again, and the report is exact."""
    import pickle

    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    state = tmp_path / "state"
    args = ["scan", "--local", "2", "--shard-files", "8", "--no-speculate", "--state", str(state),
            tree, *SCAN, "--json", "c.json", "--stats", "stats.json"]
    r = trawl_dask(*args, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    shards = sorted(f for f in os.listdir(state) if f.endswith(".shard"))
    assert len(shards) >= 4
    assert oct(os.stat(state).st_mode & 0o777) == oct(0o700)
    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    with open(state / shards[0], "wb") as f:
        pickle.dump(Planted(), f)
    outside = tmp_path / "outside"
    outside.write_bytes(b"not a checkpoint")
    os.unlink(state / shards[1])
    os.symlink(outside, state / shards[1])
    damaged = bytearray((state / shards[2]).read_bytes())
    damaged[len(damaged) // 2] ^= 1
    (state / shards[2]).write_bytes(bytes(damaged))
    os.unlink(tmp_path / "c.json")
    r = trawl_dask(*args, "--resume", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "a planted pickle ran"
    assert "not a trawl-dask checkpoint" in r.stderr and "damaged" in r.stderr, r.stderr
    assert "cannot be opened as a plain file" in r.stderr, r.stderr
    assert outside.read_bytes() == b"not a checkpoint", "written through a planted link"
    assert not os.path.islink(state / shards[1]), "the link was replaced by a checkpoint"
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["resumed_shards"] == len(shards) - 3
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_state_folder_others_can_write_into_is_refused(tree, tmp_path):
    state = tmp_path / "shared-state"
    state.mkdir()
    os.chmod(state, 0o777)
    r = trawl_dask("scan", "--local", "1", "--state", str(state), tree, cwd=str(tmp_path))
    assert r.returncode == 2 and "others can write into it (mode 0777)" in r.stderr, r.stderr
    assert os.listdir(state) == []
    if os.geteuid() == 0:
        os.chmod(state, 0o700)
        os.chown(state, 65534, 65534)
        r = trawl_dask("scan", "--local", "1", "--state", str(state), tree, cwd=str(tmp_path))
        assert r.returncode == 2 and "owned by uid 65534, not by you" in r.stderr, r.stderr


def test_a_checkpoint_round_trips_and_any_damage_is_caught():
    from trawl import cluster

    result = {"report": b"r" * 10, "records": b"", "totals": b"t", "parts": [b"a", b"", b"ccc"],
              "seconds": 1.5, "began": 2.0, "worker": "tcp://w:1"}
    data = cluster._checkpoint_encode(result)
    assert cluster._checkpoint_decode(data) == result
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x40
        with pytest.raises(cluster.CheckpointError):
            cluster._checkpoint_decode(bytes(bad))
    for n in (0, 10, len(data) - 1):
        with pytest.raises(cluster.CheckpointError):
            cluster._checkpoint_decode(data[:n])


def test_losing_the_scheduler_is_exit_2_with_one_line(tree, tmp_path, cluster):
    """The scheduler killed mid-run: the client says so in one line and exits 2 (no traceback),
    leaving no output and no temporary file."""
    cluster.worker("a")
    cluster.wait_for(1)
    # The client tries to reconnect for --connect-timeout before it gives up: 10 s, not the
    # default 30, which this test spent waiting.
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", cluster.address,
         "--connect-timeout", "10", "--shard-files", "5", "--no-speculate", tree, "--json", "c.json",
         "-m", "sha256sum:SUMS"],
        cwd=str(tmp_path), env=dict(os.environ, TRAWL_DASK_MAP_DELAY="2"), stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    # Once maps are under way (the worker runs one), the scheduler goes.
    c = cluster.client()
    try:
        wait_until(lambda: any(str(k).startswith("trawl-map-")
                               for ks in c.processing().values() for k in ks), timeout=60)
    finally:
        c.close()
    os.killpg(cluster.scheduler.pid, signal.SIGKILL)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 2, err
    assert "lost the connection to the scheduler" in err, err
    assert "Traceback" not in err, err
    left = os.listdir(tmp_path)
    assert "c.json" not in left and "SUMS" not in left
    assert not [n for n in left if n.endswith(".trawl-tmp")], left


def test_sigterm_is_exit_143_with_no_temporary_file_left(tree, tmp_path):
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--local", "1", "--shard-files", "5",
         "--no-speculate", tree, "--json", "c.json", "-m", "sha256sum:SUMS"],
        cwd=str(tmp_path), env=dict(os.environ, TRAWL_DASK_MAP_DELAY="3"), stderr=subprocess.PIPE,
        text=True,
    )
    # Ready once its outputs are open (their temporary files exist).
    wait_until(lambda: [n for n in os.listdir(tmp_path) if n.endswith(".trawl-tmp")], timeout=120)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err, err
    left = os.listdir(tmp_path)
    assert not [n for n in left if n.endswith(".trawl-tmp")], left
    assert "c.json" not in left and "SUMS" not in left


def test_a_missing_path_is_named_with_its_worker_and_recorded_as_one_machine_records_it(tree, tmp_path):
    missing = str(tmp_path / "no-such-dir")
    want, code = one_machine([tree, missing], cwd=str(tmp_path))
    r = trawl_dask("scan", "--local", "1", tree, missing, "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == code == 2, r.stderr
    assert f"{missing}: No such file or directory" in r.stderr + r.stdout
    got = json.load(open(tmp_path / "c.json"))
    # The worker that met it is named, in the report and in the summary.
    worker = got["failed"][0]["error"].pop("worker")
    assert "tcp://127.0.0.1:" in worker, worker  # a local cluster's worker: "0 (tcp://...)"
    assert f"(on worker {worker})" in r.stdout + r.stderr, r.stdout + r.stderr
    assert got["failed"] == want["failed"]
    assert got["failed"][0]["error"]["kind"] == "walk"


def test_a_directory_one_worker_cannot_read_is_named_with_that_worker(tree, tmp_path, cluster):
    # Worker "blind" runs without the capabilities that let root read past permissions, so a
    # directory of mode 000 is closed to it and open to worker "sees". Whichever lists it and
    # whichever reads its files, every failure names "blind", in the report and the summary.
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (util-linux) to start a worker without CAP_DAC_*")
    locked = os.path.join(tree, "locked")
    os.makedirs(locked)
    for i in range(12):
        with open(os.path.join(locked, f"f{i:02d}"), "wb") as f:
            f.write(os.urandom(5000 + i))
    os.chmod(locked, 0)
    cluster.worker("sees")
    cluster.worker("blind", prefix=("setpriv", "--bounding-set", "-dac_override,-dac_read_search",
                                    "--inh-caps", "-dac_override,-dac_read_search"))
    cluster.wait_for(2)
    c = cluster.client()
    try:
        blind, _ = worker_pid(c, "blind")
        sees, _ = worker_pid(c, "sees")
    finally:
        c.close()
    try:
        seen = 0
        for i in range(4):
            r = trawl_dask("scan", "--scheduler", cluster.address, "--shard-files", "2", "--no-speculate",
                           tree, *SCAN, "--json", f"c{i}.json", cwd=str(tmp_path))
            assert "Traceback" not in r.stderr, r.stderr
            failed = json.load(open(tmp_path / f"c{i}.json"))["failed"]
            assert r.returncode == (2 if failed else 0), r.stderr
            for f in failed:
                assert f["path"].startswith(locked), f
                assert f["error"]["worker"].endswith(f"({blind})") or f["error"]["worker"] == blind, f
                assert f"(on worker {f['error']['worker']})" in r.stdout + r.stderr
            assert not any(sees in f["error"]["worker"] for f in failed)
            seen += bool(failed)
            if seen >= 2:
                break
        assert seen, "the blind worker was never given the locked directory in four runs"
    finally:
        os.chmod(locked, 0o755)


def _self_signed(tmp_path):
    """A self-signed certificate and its key for 127.0.0.1 (its own CA), made with openssl."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


def test_a_tls_cluster_started_with_dasks_own_flags_gives_the_exact_report(tree, tmp_path):
    from conftest import Cluster

    if not shutil.which("openssl"):
        assert os.environ.get("TRAWL_REQUIRE_INTEROP") != "1", "openssl is required and not installed"
        pytest.skip("openssl is not installed")
    cert, key = _self_signed(tmp_path)
    sfile = tmp_path / "scheduler.json"
    cluster = Cluster(str(tmp_path), tls=(cert, cert, key), scheduler_file=sfile)
    try:
        cluster.worker("a")
        cluster.worker("b")
        cluster.wait_for(2)
        want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
        tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
        r = trawl_dask("scan", "--scheduler", cluster.address, *tls, tree, *SCAN, "--json", "c.json",
                       cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert_same_report(json.load(open(tmp_path / "c.json")), want)
        # The address as the scheduler wrote it, as dask-jobqueue and dask-mpi hand it over.
        r = trawl_dask("scan", "--scheduler-file", str(sfile), *tls, tree, *SCAN, "--json", "f.json",
                       cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        assert_same_report(json.load(open(tmp_path / "f.json")), want)
        # Without the client's certificate: refused by name, before any connection.
        r = trawl_dask("scan", "--scheduler-file", str(sfile), tree, cwd=str(tmp_path),
                       env={k: "" for k in os.environ if k.startswith("DASK_DISTRIBUTED__COMM__TLS")})
        assert r.returncode == 2 and "needs this client's certificate" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    finally:
        cluster.close()


def test_a_scheduler_file_that_is_missing_or_not_one_is_named(tree, tmp_path):
    r = trawl_dask("scan", "--scheduler-file", str(tmp_path / "none.json"), tree, cwd=str(tmp_path))
    assert r.returncode == 2 and "none.json: cannot read it" in r.stderr, r.stderr
    (tmp_path / "bad.json").write_text("{}")
    r = trawl_dask("scan", "--scheduler-file", str(tmp_path / "bad.json"), tree, cwd=str(tmp_path))
    assert r.returncode == 2 and "no scheduler address in it" in r.stderr, r.stderr
    r = trawl_dask("scan", "--scheduler", "tcp://127.0.0.1:1", "--tls-cert", "x.pem", tree, cwd=str(tmp_path))
    assert r.returncode == 2 and "is not a tls:// address" in r.stderr, r.stderr


def test_a_tls_certificate_refused_is_named_at_once_not_taken_for_a_timeout(tree, tmp_path):
    # A certificate either side refuses fails the handshake in a fraction of a second; it read
    # "cannot reach the scheduler ... within 20 s".
    import socket

    from conftest import Cluster

    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    (tmp_path / "s").mkdir()
    (tmp_path / "c").mkdir()
    scert, skey = _self_signed(tmp_path / "s")
    ccert, ckey = _self_signed(tmp_path / "c")
    cluster = Cluster(str(tmp_path), tls=(scert, scert, skey))
    try:
        def listening():
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", cluster.port)) == 0

        wait_until(listening, timeout=60)
        for ca, said in ((ccert, "this client does not trust the scheduler's certificate (self-signed certificate)"),
                         (scert, "the scheduler did not accept this client's certificate?")):
            t = time.time()
            r = trawl_dask("scan", "--scheduler", cluster.address, "--tls-ca-file", str(ca), "--tls-cert",
                           str(ccert), "--tls-key", str(ckey), "--connect-timeout", "20", tree, cwd=str(tmp_path))
            assert r.returncode == 2, r.stderr
            assert f"the scheduler at {cluster.address}: the TLS handshake failed" in r.stderr, r.stderr
            assert said in r.stderr and "within 20 s" not in r.stderr, r.stderr
            assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
            assert time.time() - t < 15
    finally:
        cluster.close()


def test_a_file_listed_by_one_worker_and_unreadable_to_another_names_both(tmp_path, cluster):
    # Worker "sees" lists a directory that worker "blind" cannot read (as another mount would
    # show another tree); "blind", joining once the walk is done, reads some of its files. Each
    # such failure names both workers and says they see the tree differently.
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv (util-linux) to start a worker without CAP_DAC_*")
    locked = tmp_path / "t" / "locked"
    locked.mkdir(parents=True)
    for i in range(12):
        (locked / f"f{i:02d}").write_bytes(os.urandom(5000 + i))
    os.chmod(locked, 0)
    try:
        cluster.worker("sees")
        cluster.wait_for(1)
        p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "2", "--no-speculate",
                               str(tmp_path / "t"), "--json", "c.json", cwd=str(tmp_path),
                               env={"TRAWL_DASK_MAP_DELAY": "1.5"})
        c = cluster.client()
        try:
            wait_until(lambda: any(str(t).startswith("trawl-map-") for ts in c.processing().values() for t in ts),
                       timeout=60)
            cluster.worker("blind", prefix=("setpriv", "--bounding-set", "-dac_override,-dac_read_search",
                                            "--inh-caps", "-dac_override,-dac_read_search"))
            cluster.wait_for(2)
            sees, _ = worker_pid(c, "sees")
            blind, _ = worker_pid(c, "blind")
        finally:
            c.close()
        out, err = ended(p, 120, "the run did not end")
    finally:
        os.chmod(locked, 0o755)
    failed = json.load(open(tmp_path / "c.json"))["failed"]
    assert p.returncode == 2 and failed, err
    for f in failed:
        assert f["error"]["worker"] == f"blind ({blind})", f
        assert f["error"]["message"] == (
            f"{f['path']}: cannot open: Permission denied (os error 13), on worker blind ({blind}); worker "
            f"sees ({sees}) listed it: the workers see the tree differently (permissions, another mount?)"), f
    assert "the workers see the tree differently" in out + err
