"""trawl-dask when its workers fail: killed, lost for good, frozen, restarted, of another
trawl version, or dead after their result won; each test runs a Dask scheduler and 2-3 workers
as processes on loopback."""

import json
import os
import signal
import subprocess
import sys
import time

from conftest import (
    SCAN, assert_same_report, ended, frozen_until_taken_as_lost, one_machine, trawl_dask,
    trawl_dask_started, wait_until, worker_pid,
)


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
