"""trawl-dask against `trawl scan` on one machine, and under faults: each test runs a Dask
scheduler and 2-3 workers as processes on loopback."""

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import (
    comparable, ended, frozen_until_taken_as_lost, one_machine, trawl_bin, trawl_dask,
    trawl_dask_started, wait_until, worker_pid,
)

import trawl

#: The options both sides scan with: several digests, every block size, CDC, two codecs,
#: attribution, a manifest.
SCAN = ["--digest", "sha256,md5", "--cdc", "16k", "--compress", "lz4,zstd", "--top-files", "25"]


def assert_same_report(got, want):
    g, w = comparable(got), comparable(want)
    for k in sorted(set(g) | set(w)):
        assert g.get(k) == w.get(k), f"{k} differs"


def test_a_cluster_report_equals_one_machine_with_duplicates_across_shards(tree, tmp_path):
    want, code = one_machine([tree], *SCAN, "--manifest", "sha256sum:one.sums", cwd=str(tmp_path))
    r = trawl_dask(
        "scan", "--local", "2", "--shard-files", "6", "--partitions", "16", tree, *SCAN,
        "--json", "c.json", "--manifest", "sha256sum:c.sums", "--stats", "stats.json",
        cwd=str(tmp_path),
    )
    assert r.returncode == code == 0, r.stderr
    got = json.load(open(tmp_path / "c.json"))
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["shards"] >= 7, "the files were spread over many shards"
    assert want["reduction"]["dedup"][0]["unique_blocks"] < want["reduction"]["dedup"][0]["blocks"]
    assert len(want["reduction"]["top_files"]) >= 10
    assert_same_report(got, want)
    # The manifests are byte for byte the same, and agree with Python's own SHA-256.
    one = open(tmp_path / "one.sums", "rb").read()
    assert open(tmp_path / "c.sums", "rb").read() == one
    line = next(l for l in one.splitlines() if l.endswith(b"copy.bin"))
    digest, name = line.split(b"  ", 1)
    assert digest.decode() == hashlib.sha256(open(os.path.join(os.fsencode(tree), name), "rb").read()).hexdigest()
    # The summary is trawl scan's.
    assert "data reduction:" in r.stdout and "files contributing most" in r.stdout


def test_partitions_1_and_256_give_the_same_figures(tree, tmp_path):
    out = {}
    for p in (1, 256):
        r = trawl_dask("scan", "--local", "2", "--shard-files", "10", "--partitions", str(p), tree,
                       "--json", f"p{p}.json", cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        out[p] = comparable(json.load(open(tmp_path / f"p{p}.json")))
    assert out[1]["reduction"] == out[256]["reduction"]


def test_trawl_scan_in_process_returns_the_report_the_cli_writes(tree, tmp_path):
    want, code = one_machine([tree], "--cdc", "16k", cwd=str(tmp_path))
    got = trawl.scan(tree, cdc="16k")
    assert got["exit_code"] == code == 0
    assert_same_report(got, want)
    with pytest.raises(trawl.ScanError):
        trawl.scan(tree, digest="no-such-digest")


def test_a_worker_killed_mid_shard_and_restarted_gives_the_exact_report(tree, tmp_path, cluster):
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    env = dict(os.environ, TRAWL_DASK_MAP_DELAY="1.5")
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", cluster.address,
         "--shard-files", "8", "--no-speculate", tree, *SCAN, "--json", "c.json",
         "--stats", "stats.json"],
        cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    c = cluster.client()
    try:
        # A worker in the middle of a shard.
        busy = wait_until(
            lambda: next(
                (w for w, ts in c.processing().items() if any(str(t).startswith("trawl-map-") for t in ts)),
                None,
            )
        )
        name = str(c.scheduler_info(n_workers=-1)["workers"][busy]["name"])
        _, pid = worker_pid(c, name)
        os.kill(pid, signal.SIGKILL)
        # Its nanny starts it again.
        wait_until(lambda: worker_pid(c, name)[1] not in (None, pid), timeout=60)
    finally:
        c.close()
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert_same_report(json.load(open(tmp_path / "c.json")), want)
    # The summary says a worker left and its restart joined.
    stats = json.load(open(tmp_path / "stats.json"))
    assert busy in stats["workers_left"] and len(stats["workers_joined"]) == 1, stats
    assert f"1 worker(s) left during the run ({busy})" in err, err
    assert "1 worker(s) joined during the run" in err, err


def test_a_host_lost_for_good_is_named_and_the_run_ends_non_zero(tree, tmp_path, cluster):
    cluster.worker("a")
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    env = {"TRAWL_DASK_MAP_DELAY": "3"}
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", cluster.address,
         "--on", f"b:{tree}", "--lost-worker-timeout", "2", "--shard-files", "8", "--json", "c.json"],
        cwd=str(tmp_path), env=dict(os.environ, **env), stderr=subprocess.PIPE, text=True,
    )
    c = cluster.client()
    try:
        wait_until(lambda: any(
            str(t).startswith("trawl-map-") for ts in c.processing().values() for t in ts
        ))
    finally:
        c.close()
    os.killpg(cluster.workers["b"].pid, signal.SIGKILL)
    killed = time.time()
    _, err = p.communicate(timeout=120)
    waited = time.time() - killed
    assert p.returncode == 2, err
    assert "host b: no worker for 2 s" in err and "shard(s) not scanned" in err, err
    # Within the stated time (2 s), plus the scheduler noticing and a poll or two.
    assert waited < 30, waited
    assert not (tmp_path / "c.json").exists(), "no report from a run that did not finish"


def test_resume_scans_only_what_is_missing_and_gives_the_same_report(tree, tmp_path):
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    state = tmp_path / "state"
    args = ["scan", "--local", "2", "--shard-files", "5", "--no-speculate", "--state", str(state),
            tree, *SCAN, "--json", "c.json", "--stats", "stats.json"]
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", *args], cwd=str(tmp_path),
        env=dict(os.environ, TRAWL_DASK_MAP_DELAY="0.5"), stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    # Stop the client (and its local cluster) once a few shards are checkpointed.
    wait_until(lambda: state.exists() and len([f for f in os.listdir(state) if f.endswith(".shard")]) >= 3,
               timeout=120)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert not (tmp_path / "c.json").exists()
    done = len([f for f in os.listdir(state) if f.endswith(".shard")])
    r = trawl_dask(*args[:-4], "--resume", "--json", "c.json", "--stats", "stats.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["resumed_shards"] == done >= 3
    assert stats["shards"] > done
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_the_last_shard_is_reissued_on_an_idle_worker_and_the_first_result_wins(tmp_path):
    from conftest import make_tree

    tree = make_tree(str(tmp_path / "small"), files=6)
    want, _ = one_machine([tree], cwd=str(tmp_path))
    t = time.time()
    # One shard, delayed 8 s on its first worker; the copy runs at once on the other.
    r = trawl_dask("scan", "--local", "2", tree, "--json", "c.json", "--stats", "stats.json",
                   cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "8"})
    assert r.returncode == 0, r.stderr
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["shards"] == 1 and stats["speculative_copies"] == 1
    assert time.time() - t < 8 + 20
    assert_same_report(json.load(open(tmp_path / "c.json")), want)
    assert "shard seconds" in r.stderr


def test_an_unreachable_scheduler_is_a_clear_error_within_the_timeout(tree, tmp_path):
    from conftest import free_port

    t = time.time()
    r = trawl_dask("scan", "--scheduler", f"tcp://127.0.0.1:{free_port()}", "--connect-timeout", "2",
                   tree, cwd=str(tmp_path))
    assert r.returncode == 2
    assert "cannot reach the scheduler at tcp://127.0.0.1:" in r.stderr
    assert "within 2 s" in r.stderr
    assert time.time() - t < 20


def test_a_worker_with_another_trawl_version_is_refused_by_name(tree, tmp_path, cluster):
    # A worker that imports a different trawl: a package of the same name on its path.
    fake = tmp_path / "other" / "trawl"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "_native.py").write_text("def wire_version():\n    return 'trawl 0.0.9 batch 0'\n")
    cluster.worker("new")
    cluster.worker("old", env={"PYTHONPATH": str(tmp_path / "other")})
    cluster.wait_for(2)
    r = trawl_dask("scan", "--scheduler", cluster.address, tree, "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == 2
    c = cluster.client()
    try:
        addr, _ = worker_pid(c, "old")
    finally:
        c.close()
    assert f"worker {addr} runs trawl 0.0.9 batch 0" in r.stderr, r.stderr
    assert "refusing to mix versions" in r.stderr
    assert not (tmp_path / "c.json").exists()


def test_flags_a_cluster_cannot_honour_are_refused_by_name(tree, tmp_path):
    r = trawl_dask("scan", "--local", "1", tree, "--sample", "0.1", cwd=str(tmp_path))
    assert r.returncode == 2
    assert "--sample: not available in a cluster scan" in r.stderr
    r = trawl_dask("scan", "--local", "1", tree, "--digest", "nope", cwd=str(tmp_path))
    assert r.returncode == 2 and "nope" in r.stderr


def test_the_cli_binary_is_the_one_compared_against():
    assert os.access(trawl_bin(), os.X_OK)


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


def test_a_failed_run_in_process_leaves_the_next_one_running(tree, tmp_path):
    """One interpreter, several runs: an output that fails (a full disk) stops that run only,
    and an audit records its own command line, not the interpreter's."""
    import sqlite3

    assert os.path.exists("/dev/full")
    code = trawl.main(["scan", tree, "--quiet", "--jsonl", "/dev/full"])
    assert code == 2
    report = trawl.scan(tree, digest="sha256")
    assert report["exit_code"] == 0 and report["totals"]["files"] > 10, report.get("totals")
    cat = str(tmp_path / "cat.db")
    assert trawl.main(["audit", tree, "-c", cat, "-q"]) == 0
    options = sqlite3.connect(cat).execute("SELECT options FROM runs").fetchone()[0]
    assert options == f"audit {tree} -c {cat} -q", options


def test_losing_the_scheduler_is_exit_2_with_one_line(tree, tmp_path, cluster):
    """The scheduler killed mid-run: the client says so in one line and exits 2 (no traceback),
    leaving no output and no temporary file."""
    cluster.worker("a")
    cluster.wait_for(1)
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", cluster.address,
         "--shard-files", "5", "--no-speculate", tree, "--json", "c.json", "-m", "sha256sum:SUMS"],
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


def test_resume_takes_the_checkpoints_whatever_the_outputs_and_says_why_it_cannot(tree, tmp_path):
    """Checkpoints are keyed by what decides a shard's result: other output paths take them all;
    another digest takes none, and the run says how its options differ."""
    state = tmp_path / "state"
    base = ["scan", "--local", "2", "--shard-files", "8", "--no-speculate", "--state", str(state),
            tree, "-d", "sha256"]
    r = trawl_dask(*base, "--json", "a.json", "--stats", "s1.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    shards = json.load(open(tmp_path / "s1.json"))["shards"]
    r = trawl_dask(*base, "--resume", "-q", "--json", "b.json", "--stats", "s2.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.load(open(tmp_path / "s2.json"))["resumed_shards"] == shards >= 4
    assert_same_report(json.load(open(tmp_path / "b.json")), json.load(open(tmp_path / "a.json")))
    r = trawl_dask(*base[:-2], "-d", "md5", "--resume", "--json", "c.json", "--stats", "s3.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.load(open(tmp_path / "s3.json"))["resumed_shards"] == 0
    assert "--resume: the checkpoints in" in r.stderr and "then: --digest=sha256; now: --digest=md5" in r.stderr, r.stderr


def test_on_a_host_name_runs_on_that_hosts_workers(tree, tmp_path):
    """`--on HOSTNAME:PATH` (the deployment guide's `--on fs1:/export` shape): Dask knows workers
    by IP address, so the name is resolved; it once waited forever."""
    want, _ = one_machine([tree], cwd=str(tmp_path))
    r = trawl_dask("scan", "--local", "1", "--on", f"localhost:{tree}", "--shard-files", "8",
                   "--json", "c.json", cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_worker_of_another_version_that_joins_late_is_refused(tree, tmp_path, cluster):
    """Workers are checked at the start and, once they join later, by the first map they run:
    a worker whose trawl is of another version ends the run with exit 2, naming it."""
    fake = tmp_path / "other-version"
    fake.mkdir()
    # Loaded by that worker's interpreter at its start: its trawl says another version.
    (fake / "sitecustomize.py").write_text(
        "import trawl._native as n\nn.wire_version = lambda: 'trawl 0.0.0 (another build)'\n"
    )
    cluster.worker("a")
    cluster.wait_for(1)
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "scan", "--scheduler", cluster.address,
         "--shard-files", "3", "--no-speculate", tree, "--json", "c.json"],
        cwd=str(tmp_path), env=dict(os.environ, TRAWL_DASK_MAP_DELAY="1.5"), stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    c = cluster.client()
    try:
        wait_until(lambda: any(c.processing().values()), timeout=60)
    finally:
        c.close()
    cluster.worker("b", env={"PYTHONPATH": str(fake)})
    _, err = p.communicate(timeout=180)
    assert p.returncode == 2, err
    assert "runs trawl 0.0.0 (another build)" in err and "refusing to mix versions" in err, err
    assert not (tmp_path / "c.json").exists()


def test_a_tree_of_many_small_directories_is_listed_in_a_handful_of_tasks(tmp_path):
    """Each listing task goes down into what it finds, within a budget: 294 directories take a
    few tasks, not one each (every task costs the scheduler), and the report is exact."""
    tree = tmp_path / "many"
    for a in range(6):
        for b in range(7):
            for c in range(7):
                d = tree / f"a{a}" / f"b{b}" / f"c{c}"
                d.mkdir(parents=True)
                (d / "f").write_bytes(f"{a}{b}{c}".encode() * 100)
    want, _ = one_machine([str(tree)], cwd=str(tmp_path))
    r = trawl_dask("scan", "--local", "2", str(tree), "--json", "c.json", "--stats", "s.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    walk = json.load(open(tmp_path / "s.json"))["walk"]
    assert walk["files"] == 294 and walk["listing_tasks"] <= 4, walk
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_on_a_worker_name_survives_that_worker_starting_again(tree, tmp_path, cluster):
    # Its nanny starts the worker again at a new address: the tasks pinned to the name move
    # there (Dask alone would wait for the old address forever).
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    p = trawl_dask_started(
        "scan", "--scheduler", cluster.address, "--on", f"b:{tree}", "--lost-worker-timeout",
        "120", "--shard-files", "8", *SCAN, "--json", "c.json",
        cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "1.5"},
    )
    c = cluster.client()
    try:
        addr = wait_until(lambda: next(
            (w for w, ts in c.processing().items() if any(str(t).startswith("trawl-map-") for t in ts)),
            None,
        ))
        assert str(c.scheduler_info(n_workers=-1)["workers"][addr]["name"]) == "b"
        _, pid = worker_pid(c, "b")
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: worker_pid(c, "b")[0] not in (None, addr), timeout=60)
    finally:
        c.close()
    _, err = ended(p, 90, "the run waited for the old address")
    assert p.returncode == 0, err
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_worker_lost_during_resume_takes_the_checkpoints_again(tree, tmp_path, cluster):
    # A resumed shard's pieces are sent from the client: a worker that dies holding them takes
    # the only copy, and they are sent again from the checkpoints.
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    state = tmp_path / "state"
    args = ["scan", "--scheduler", cluster.address, "--shard-files", "5", "--no-speculate",
            "--state", str(state), tree, *SCAN]
    r = trawl_dask(*args, "--json", "first.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    shards = sorted(f for f in os.listdir(state) if f.endswith(".shard"))
    assert len(shards) >= 6
    for f in shards[::2]:
        os.remove(state / f)  # read again, slowly, while the rest are resumed
    p = trawl_dask_started(*args, "--resume", "--json", "c.json", "--stats", "stats.json",
                           cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "2"})
    c = cluster.client()
    try:
        wait_until(lambda: any(
            str(t).startswith("trawl-map-") for ts in c.processing().values() for t in ts
        ))
        a, _ = worker_pid(c, "a")
        # Some of the resumed shards' pieces are on "a", and nowhere else.
        assert wait_until(lambda: len(c.has_what().get(a, ())) > 0)
    finally:
        c.close()
    os.killpg(cluster.workers["a"].pid, signal.SIGKILL)
    _, err = ended(p, 180, "the resumed run did not end")
    assert p.returncode == 0, err
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["resumed_shards"] == len(shards) - len(shards[::2])
    assert stats["resent_shards"] >= 1, stats
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_no_worker_is_waited_for_as_long_as_the_scheduler_then_named(tree, tmp_path, cluster):
    # A scheduler with no worker: the run ends within --connect-timeout, with one line, exit 2.
    t = time.time()
    r = trawl_dask("scan", "--scheduler", cluster.address, "--connect-timeout", "3", tree,
                   "--json", "c.json", cwd=str(tmp_path), timeout=60)
    assert r.returncode == 2, r.stderr
    assert "no worker joined the scheduler within 3 s" in r.stderr, r.stderr
    assert time.time() - t < 30
    assert not (tmp_path / "c.json").exists()
    # A worker that joins while the client waits is taken.
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--connect-timeout", "60",
                           tree, *SCAN, "--json", "c.json", cwd=str(tmp_path))
    time.sleep(2)
    assert p.poll() is None, p.communicate()[1]
    cluster.worker("late")
    _, err = ended(p, 120, "the run did not take the late worker")
    assert p.returncode == 0, err
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_the_shuffle_costs_the_scheduler_a_task_per_shard_and_reducer_not_per_pair(tmp_path, cluster):
    # 70 shards x 32 reducers: a task per (shard, reducer) would be 2,240 of them; the reducers
    # fetch their shares from the maps' workers instead.
    from conftest import make_tree

    root = tmp_path / "t"
    make_tree(str(root), files=140, seed=3)
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    c = cluster.client()

    def count():
        from distributed import SchedulerPlugin

        class Ran(SchedulerPlugin):
            name = "trawl-test-ran"

            def __init__(self):
                self.ran = {}

            def transition(self, key, start, finish, *args, **kwargs):
                if finish == "processing":
                    k = str(key).split("-")[1] if str(key).startswith("trawl-") else "other"
                    self.ran[k] = self.ran.get(k, 0) + 1

        return Ran()

    try:
        c.register_plugin(count())
        want, _ = one_machine([str(root)], *SCAN, cwd=str(tmp_path))
        r = trawl_dask("scan", "--scheduler", cluster.address, "--shard-files", "2",
                       "--partitions", "64", "--reducers", "32", "--no-speculate", str(root),
                       *SCAN, "--json", "c.json", "--stats", "stats.json", cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        ran = c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["trawl-test-ran"].ran)
    finally:
        c.close()
    stats = json.load(open(tmp_path / "stats.json"))
    shards, lists = stats["shards"], stats["walk"]["listing_tasks"]
    assert shards >= 64 and stats["reducers"] == 32, stats
    assert ran.get("map") == shards and ran.get("meta") == shards, ran
    assert ran.get("reduce") == 32 and "pieces" not in ran, ran
    assert sum(ran.values()) <= lists + 2 * shards + 32 + 2, ran  # + the version checks
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_copy_that_won_and_whose_worker_died_is_computed_again_elsewhere(tmp_path, cluster):
    # One shard, slow on its first worker; its copy wins on the other, which then dies before
    # the reduce fetches the result: the copy runs again on the worker left (it was never
    # pinned), and the run ends with the exact report instead of waiting for the dead one.
    from conftest import make_tree

    tree = make_tree(str(tmp_path / "small"), files=6)
    want, _ = one_machine([tree], cwd=str(tmp_path))
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    p = trawl_dask_started(
        "scan", "--scheduler", cluster.address, tree, "--json", "c.json", "--stats", "stats.json",
        cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "6", "TRAWL_DASK_REDUCE_DELAY": "4"},
    )
    c = cluster.client()
    try:
        wait_until(lambda: any(
            str(t).startswith("trawl-reduce-") for ts in c.processing().values() for t in ts
        ), timeout=60)
        holders = [w for k, ws in c.who_has().items() if str(k).startswith("trawl-spec-") for w in ws]
        assert holders, c.who_has()
        names = {a: str(w["name"]) for a, w in c.scheduler_info(n_workers=-1)["workers"].items()}
    finally:
        c.close()
    os.killpg(cluster.workers[names[holders[0]]].pid, signal.SIGKILL)
    _, err = ended(p, 120, "the run waited for the dead worker")
    assert p.returncode == 0, err
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["speculative_copies"] == 1, stats
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_the_cluster_rules_are_rusts_sizes_and_a_refused_batch_names_its_map():
    """Sizes parse as trawl's flags parse them (no second rule in Python), and a reducer's
    refusal says which map's batch it was as a value, not in words to be parsed."""
    from trawl import _native as n
    from trawl.cluster import _parse_size

    assert _parse_size("1.5G") == 3 << 29
    assert _parse_size("512M") == 512 << 20
    with pytest.raises(Exception, match="use e.g."):
        _parse_size("12Q")
    with pytest.raises(n.BatchError) as e:
        n.reduce_partition([b"not a batch"])
    assert e.value.args[0] == 0 and "map" not in e.value.args[1]
    assert isinstance(e.value, ValueError)
    # Pickled as itself (Dask pickles a task's exception, and its context): its class is found
    # where the package keeps it.
    import pickle

    assert pickle.loads(pickle.dumps(e.value)).args == e.value.args


def test_a_reduce_task_that_refuses_a_batch_fails_with_a_typed_error(monkeypatch):
    """A reduce task that refuses a map's batch fails (a typed error naming the map and the
    partition), so that the client ends the run as that task fails, not after every shard is
    merged; and a lost share is told apart by its type, not its name."""
    from trawl import _tasks

    monkeypatch.setattr(_tasks, "_gather", lambda where, lo, hi, run_key, deadline: ([None], [[b"not a batch"]]))
    with pytest.raises(_tasks.BatchRefused) as e:
        _tasks._reduce(7, 8, [], "run")
    assert (e.value.map, e.value.partition) == (0, 7) and e.value.why
    assert "partition 7: map 0: " in str(e.value)
    # It crosses the wire as itself (Dask pickles a task's exception).
    import pickle

    again = pickle.loads(pickle.dumps(e.value))
    assert isinstance(again, _tasks.BatchRefused) and (again.map, again.partition) == (0, 7)
    from trawl._reduce import Reduce

    class Lost:
        status = "error"

        def exception(self):
            return _tasks.SharesLost("gone")

    assert Reduce.lost(Lost())


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


def test_scan_in_process_raises_typed_errors_that_carry_the_reason(tree, tmp_path, capfd, caplog):
    with pytest.raises(trawl.OptionError, match="unknown digest algorithm 'sha265'") as e:
        trawl.scan(tree, digest="sha265")
    assert isinstance(e.value, ValueError)
    # Named as the keyword it was given, with the one that exists; no usage line of the
    # binding's own flags.
    with pytest.raises(ValueError, match="unknown option dedupe.*similar option exists: dedup") as e:
        trawl.scan(tree, dedupe="4k")
    assert "--quiet" not in str(e.value) and "Usage" not in str(e.value)
    with pytest.raises(FileNotFoundError):
        trawl.scan(str(tmp_path / "no-such-dir"))
    with pytest.raises(FileNotFoundError, match="cannot create"):
        trawl.scan(tree, manifest=[f"sha256sum:{tmp_path}/no-dir/SUMS"])
    # None of it went to the process's stderr.
    assert capfd.readouterr().err == ""
    # A file that cannot be read is in the report, and said through the `trawl` logger.
    os.symlink("/nonexistent/target", os.path.join(tree, "dangling"))
    caplog.set_level("WARNING", logger="trawl")
    r = trawl.scan(tree, follow=True)
    assert r["exit_code"] == 2 and r["failed"]
    assert any("dangling" in m for m in caplog.messages), caplog.messages
    assert capfd.readouterr().err == ""


def test_a_worker_that_dies_once_the_reducers_finished_costs_the_run_nothing(tree, tmp_path, cluster):
    # The reducers' results were left on the workers until the end: a worker that died holding
    # one made Dask compute that reducer again, from map results lost with the same worker.
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    pause = tmp_path / "reduced"
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "8",
                           "--no-speculate", tree, *SCAN, "--json", "c.json", cwd=str(tmp_path),
                           env={"TRAWL_DASK_MERGE_PAUSE": str(pause)})
    c = cluster.client()
    try:
        wait_until(pause.exists, timeout=120)
        # The worker holding a reducer's result, if any is held; else "a".
        who = c.who_has()
        holders = {w for k, ws in who.items() if str(k).startswith("trawl-reduce-") for w in ws}
        workers = c.scheduler_info(n_workers=-1)["workers"]
        name = next((str(workers[w]["name"]) for w in sorted(holders) if w in workers), "a")
        _, pid = worker_pid(c, name)
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: worker_pid(c, name)[1] not in (None, pid), timeout=60)
    finally:
        c.close()
        if pause.exists():
            pause.rmdir()
    # Timed from the merge's release, not the kill: the nanny's restart of the killed worker
    # (up to a minute on a loaded machine) is no part of the run's cost.
    released = time.time()
    _, err = ended(p, 120, "the run did not end")
    assert p.returncode == 0, err
    assert "Traceback" not in err, err
    # Its shards read again on the other worker, and no more (Dask sees a killed worker go).
    assert time.time() - released < 30
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


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


def test_a_frozen_worker_is_taken_as_lost_after_the_worker_timeout(tree, tmp_path, cluster):
    # SIGSTOP: the process holds its connections and answers nothing; Dask would wait for its
    # heartbeat timeout (5 minutes), the requests for its map results for ever.
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "8", "--no-speculate",
                           "--worker-timeout", "5", tree, *SCAN, "--json", "c.json", "--stats", "stats.json",
                           cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "1"})
    c = cluster.client()
    try:
        # "a" has finished a map (it holds a result) and is busy with another.
        wait_until(lambda: any(str(k).startswith("trawl-map-") for k in c.has_what().get(worker_pid(c, "a")[0], ())))
        _, pid = worker_pid(c, "a")
    finally:
        c.close()
    frozen_until_taken_as_lost(p, pid, tmp_path / "stats.json", "run")
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_the_same_tree_gives_the_same_report_every_run_on_a_cluster_as_on_one_machine(tree, tmp_path, cluster):
    # Shards of 5 files on two workers land differently each run; the JSON is the same, byte for
    # byte, times and memory aside, and in one machine's order (its lists unsorted here).
    for i in range(6):
        os.symlink(f"nowhere{i}", os.path.join(tree, f"d{i % 4}", f"dangling{i}"))
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)

    def masked(path):
        r = json.load(open(path))
        for k in ("seconds", "bytes_per_second", "peak_rss_bytes", "peak_anon_bytes"):
            r["totals"].pop(k, None)
        return json.dumps(r, indent=1)

    subprocess.run([trawl_bin(), "scan", tree, *SCAN, "--json", "one.json", "-q"], cwd=str(tmp_path))
    want = masked(tmp_path / "one.json")
    for i in range(3):
        r = trawl_dask("scan", "--scheduler", cluster.address, "--shard-files", "5", tree, *SCAN,
                       "--json", f"c{i}.json", cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        got = masked(tmp_path / f"c{i}.json")
        assert got == want, f"run {i}: " + "".join(
            f"\n- {a}\n+ {b}" for a, b in zip(want.splitlines(), got.splitlines()) if a != b
        )[:3000]


def test_quiet_silences_the_cluster_figures_as_it_silences_the_summary(tree, tmp_path):
    r = trawl_dask("scan", "--local", "1", tree, "-q", "--json", "q.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "shards on" not in r.stderr and r.stdout == "", (r.stdout, r.stderr)
    r = trawl_dask("scan", "--local", "1", tree, "--json", "n.json", cwd=str(tmp_path))
    assert r.returncode == 0 and "shards on 1 workers" in r.stderr, r.stderr


def test_two_runs_with_the_same_options_on_one_cluster_both_give_the_exact_report(tree, tmp_path, cluster):
    # A run's key was a hash of its options: a second run with the same options shared the
    # first's tasks, shares handler and plugin, and failed when the first ended (its end
    # removed the handler) while the second was reducing. Each run has a key of its own.
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    pause = tmp_path / "first-reduced"
    args = ["scan", "--scheduler", cluster.address, "--shard-files", "8", "--no-speculate", tree, *SCAN]
    first = trawl_dask_started(*args, "--json", "first.json", cwd=str(tmp_path),
                               env={"TRAWL_DASK_MERGE_PAUSE": str(pause)})
    c = cluster.client()
    try:
        wait_until(pause.exists, timeout=120)
        # The second starts while the first waits before its merge, and is reducing (its reduce
        # tasks wait 3 s before they fetch) when the first ends.
        second = trawl_dask_started(*args, "--json", "second.json", cwd=str(tmp_path),
                                    env={"TRAWL_DASK_REDUCE_DELAY": "3"})
        wait_until(lambda: any(str(t).startswith("trawl-reduce-")
                               for ts in c.processing().values() for t in ts), timeout=120)
    finally:
        c.close()
        if pause.exists():
            pause.rmdir()
    _, err = ended(first, 60, "the first run did not end")
    assert first.returncode == 0, err
    _, err = ended(second, 60, "the second run did not end")
    assert second.returncode == 0, err
    assert "Traceback" not in err, err
    assert_same_report(json.load(open(tmp_path / "first.json")), want)
    assert_same_report(json.load(open(tmp_path / "second.json")), want)


def test_a_worker_frozen_once_the_reducers_finished_is_taken_as_lost_in_the_merge(tree, tmp_path, cluster):
    # The merge fetched each shard's metadata from the worker holding it with no watchdog: a
    # frozen worker held the client for Dask's heartbeat timeout (5 minutes). It is taken as
    # lost after --worker-timeout, its shards are read again on the other, and the report is
    # exact.
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    pause = tmp_path / "reduced"
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "8", "--no-speculate",
                           "--worker-timeout", "2", tree, *SCAN, "--json", "c.json", "--stats", "stats.json",
                           cwd=str(tmp_path), env={"TRAWL_DASK_MERGE_PAUSE": str(pause)})
    c = cluster.client()
    try:
        wait_until(pause.exists, timeout=120)
        a, pid = worker_pid(c, "a")
        # "a" holds shards' metadata, which the merge fetches.
        assert any(str(k).startswith("trawl-meta-") for k in c.has_what().get(a, ())), c.has_what()
    finally:
        c.close()
    os.kill(pid, signal.SIGSTOP)
    try:
        t = time.time()
        pause.rmdir()
        _, err = ended(p, 60, "the merge waited for the frozen worker")
        took = time.time() - t
    finally:
        os.kill(pid, signal.SIGKILL)
    assert p.returncode == 0, err
    assert "not heard from for 2 s (--worker-timeout)" in err, err
    assert "Traceback" not in err, err
    # The timeout, the shards read again on "b", and a poll or two.
    assert took < 2 + 15, took
    assert json.load(open(tmp_path / "stats.json"))["silent_workers"] == 1
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_shard_read_again_for_the_merge_that_gives_another_result_ends_the_run(tree, tmp_path, cluster):
    # Once the reducers have counted every shard, a worker dies with the shards' metadata it
    # held: those maps are computed again for the merge, from files changed meanwhile. The
    # report would mix two readings of them; the run ends instead, naming the shard.
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    pause = tmp_path / "reduced"
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "8", "--no-speculate",
                           tree, *SCAN, "--json", "c.json", "-m", "sha256sum:SUMS", cwd=str(tmp_path),
                           env={"TRAWL_DASK_MERGE_PAUSE": str(pause)})
    c = cluster.client()
    try:
        wait_until(pause.exists, timeout=120)
        a, pid = worker_pid(c, "a")
        assert any(str(k).startswith("trawl-meta-") for k in c.has_what().get(a, ())), c.has_what()
    finally:
        c.close()
    # Every file changes (its size kept), then "a" dies.
    seen = set()
    for d, _, names in os.walk(tree):
        for n in names:
            path = os.path.join(d, n)
            st = os.lstat(path)
            if not os.path.isfile(path) or os.path.islink(path) or not st.st_size or st.st_ino in seen:
                continue
            seen.add(st.st_ino)
            with open(path, "r+b") as f:
                first = f.read(1)
                f.seek(0)
                f.write(bytes([first[0] ^ 0xFF]))
    os.kill(pid, signal.SIGKILL)
    pause.rmdir()
    _, err = ended(p, 60, "the run did not end")
    assert p.returncode == 2, err
    assert "read again after its worker was lost, it gave another result than the one counted" in err, err
    assert f"files from {tree}/" in err and "Traceback" not in err, err
    left = os.listdir(tmp_path)
    assert "c.json" not in left and "SUMS" not in left, left


def on_a_terminal(args, cwd, env, timeout=120):
    """`trawl-dask ARGS` with its stderr on a pseudo-terminal: its exit code and what it wrote
    there."""
    import select

    master, slave = os.openpty()
    p = subprocess.Popen([sys.executable, "-m", "trawl.cluster", *args], cwd=cwd, env=dict(os.environ, **env),
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out, end = b"", time.time() + timeout
    try:
        while time.time() < end:
            if not select.select([master], [], [], 1.0)[0]:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the run ended, and its end of the terminal with it
                break
            if not chunk:
                break
            out += chunk
        p.wait(timeout=max(1, end - time.time()))
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    return p.returncode, out.decode(errors="replace")


def test_a_run_on_a_terminal_shows_its_progress_on_one_line_and_clears_it(tmp_path, cluster):
    # A cluster run said nothing until its summary. On a terminal it keeps one line up to
    # date (the phase, shards, bytes, the rate, the time left); not with -q, nor on a pipe.
    from conftest import make_tree

    tree = make_tree(str(tmp_path / "small"), files=12)
    cluster.worker("a")
    cluster.wait_for(1)
    args = ["scan", "--scheduler", cluster.address, "--shard-files", "3", "--no-speculate", tree,
            "--json", "c.json"]
    slow = {"TRAWL_DASK_MAP_DELAY": "0.6"}
    code, err = on_a_terminal(args, str(tmp_path), slow)
    assert code == 0, err
    drawn = re.findall(r"\rtrawl-dask: ([^\r\n\x1b]*)\x1b\[K", err)
    assert any(re.fullmatch(r"maps: \d/\d shards, [\d.]+ [KM]iB of [\d.]+ [KM]iB, (-|[\d.]+ [KM]?i?B/s), "
                            r"ETA (-|\d+s)", d) for d in drawn), repr(err)
    # Redrawn in place (never a line of its own), and cleared before the summary.
    last = err.rindex("\rtrawl-dask: ")
    assert "\r\x1b[K" in err[last + 1:] and "shards on 1 workers" in err[last:], repr(err)
    assert "\n" not in "".join(drawn)
    code, err = on_a_terminal(args + ["-q"], str(tmp_path), slow)
    assert code == 0 and err == "", repr(err)
    r = trawl_dask(*args, cwd=str(tmp_path), env=slow)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "\x1b" not in r.stderr and "maps:" not in r.stderr, repr(r.stderr)


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


def test_a_worker_frozen_while_the_reduce_tasks_fetch_is_taken_as_lost(tree, tmp_path, cluster):
    # Frozen as the reduce tasks fetch their shares (theirs, or their requests to it): after
    # --worker-timeout it is removed, the maps it held are read again on the other worker, the
    # reduce tasks run again, and the report is exact.
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    want, _ = one_machine([tree], *SCAN, cwd=str(tmp_path))
    p = trawl_dask_started("scan", "--scheduler", cluster.address, "--shard-files", "8", "--no-speculate",
                           "--worker-timeout", "2", tree, *SCAN, "--json", "c.json", "--stats", "stats.json",
                           cwd=str(tmp_path), env={"TRAWL_DASK_REDUCE_DELAY": "2"})
    c = cluster.client()
    try:
        wait_until(lambda: any(str(t).startswith("trawl-reduce-")
                               for ts in c.processing().values() for t in ts), timeout=120)
        _, pid = worker_pid(c, "a")
    finally:
        c.close()
    os.kill(pid, signal.SIGSTOP)
    try:
        t = time.time()
        _, err = ended(p, 60, "the reduce waited for the frozen worker")
        took = time.time() - t
    finally:
        os.kill(pid, signal.SIGKILL)
    assert p.returncode == 0, err
    assert "not heard from for 2 s (--worker-timeout)" in err and "Traceback" not in err, err
    # The timeout, the reduce tasks' 2 s wait, the maps read again, and a poll or two.
    assert took < 2 + 2 + 15, took
    assert_same_report(json.load(open(tmp_path / "c.json")), want)
