"""trawl-dask audit against `trawl audit` on one machine: the same verdicts and digests from
a catalog kept on the client, with the walk and the reads done by Dask workers."""

import hashlib
import json
import os
import signal
import subprocess
import sys

from conftest import (
    frozen_until_taken_as_lost,
    make_tree,
    trawl_bin,
    trawl_dask,
    trawl_dask_started,
    wait_until,
    worker_pid,
)


def one_machine(*args, cwd):
    return subprocess.run([trawl_bin(), "audit", *args], cwd=cwd, capture_output=True, text=True)


def events(path, root):
    """An audit's JSON events, their paths relative to ``root``, in order."""
    out = []
    for e in json.load(open(path))["events"]:
        e = dict(e)
        for k in ("path", "moved_from"):
            if e.get(k):
                e[k] = os.path.relpath(e[k], root)
        if e.get("detail"):
            e["detail"] = e["detail"].replace(root, "ROOT")
        out.append(e)
    return sorted(out, key=lambda e: e["path"])


def change(root):
    """Silent corruption (same size and mtime), a deletion, a move, an edit, a new file."""
    p = os.path.join(root, "d0", "e0", "f000.bin")
    st = os.stat(p)
    b = bytearray(open(p, "rb").read())
    b[100] ^= 0xFF
    open(p, "wb").write(b)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.remove(os.path.join(root, "d1", "e2", "f005.bin"))
    os.rename(os.path.join(root, "d2", "e2", "f002.bin"), os.path.join(root, "d3", "moved.bin"))
    with open(os.path.join(root, "d3", "e0", "f003.bin"), "ab") as f:
        f.write(b"more")
    open(os.path.join(root, "new.txt"), "w").write("new\n")


def test_a_cluster_audit_finds_what_trawl_audit_finds_with_the_catalog_inside_the_tree(tmp_path):
    a, b = make_tree(str(tmp_path / "a")), make_tree(str(tmp_path / "b"))
    # Registration: every file's digest is Python's own SHA-256; the catalog, inside the
    # tree, is not one of them.
    r = trawl_dask("audit", "--local", "2", "--shard-files", "5", a, "-c", f"{a}/cat.db",
                   "--json", "c1.json", "--stats", "stats.json", cwd=str(tmp_path))
    w = one_machine(b, "-c", f"{b}/cat.db", "--json", "l1.json", cwd=str(tmp_path))
    assert r.returncode == w.returncode == 0, r.stderr
    got, want = events(tmp_path / "c1.json", a), events(tmp_path / "l1.json", b)
    assert got == want
    assert len(got) == 43 and not any(e["path"].startswith("cat.db") for e in got)
    for e in got:
        data = open(os.path.join(a, e["path"]), "rb").read()
        assert e["state"] == "new" and e["actual"]["sha256"] == hashlib.sha256(data).hexdigest()
    stats = json.load(open(tmp_path / "stats.json"))
    assert stats["reads"]["shards"] >= 8, "the reads were spread over many tasks"
    # A tree this small is listed by one task (each goes down into what it finds, within
    # trawl-cluster's ListBudget).
    assert stats["walk"]["listing_tasks"] == 1
    # The FIFO is named and skipped, on the cluster as on one machine.
    assert "fifo: skipped: FIFO" in r.stderr and "fifo: skipped: FIFO" in w.stderr

    change(a)
    change(b)
    r = trawl_dask("audit", "--local", "2", "--shard-files", "5", a, "-c", f"{a}/cat.db",
                   "--json", "c2.json", cwd=str(tmp_path))
    w = one_machine(b, "-c", f"{b}/cat.db", "--json", "l2.json", cwd=str(tmp_path))
    assert r.returncode == w.returncode == 1, r.stderr
    got, want = events(tmp_path / "c2.json", a), events(tmp_path / "l2.json", b)
    assert got == want
    states = {e["path"]: e["state"] for e in got if e["state"] != "ok"}
    assert states == {
        "d0/e0/f000.bin": "corrupt",
        "d1/e2/f005.bin": "missing",
        "d3/moved.bin": "moved",
        "d3/e0/f003.bin": "modified",
        "new.txt": "new",
    }
    assert r.stdout.replace(a, "ROOT").splitlines()[:5] == w.stdout.replace(b, "ROOT").splitlines()[:5]
    c = json.load(open(tmp_path / "c2.json"))
    assert c["counts"] == json.load(open(tmp_path / "l2.json"))["counts"]


def test_a_byte_budget_reads_what_one_machine_reads_and_the_next_run_goes_on(tmp_path):
    a, b = make_tree(str(tmp_path / "a")), make_tree(str(tmp_path / "b"))
    for root, tool in ((a, "dask"), (b, "one")):
        for n, budget in ((1, "1M"), (2, "100M")):
            args = [root, "-c", f"{tmp_path}/{tool}.db", "--max-bytes", budget, "--json", f"{tool}{n}.json"]
            p = (trawl_dask("audit", "--local", "2", "--shard-files", "3", *args, cwd=str(tmp_path))
                 if tool == "dask" else one_machine(*args, cwd=str(tmp_path)))
            assert p.returncode == 0, p.stderr
    for n in (1, 2):
        c = json.load(open(tmp_path / f"dask{n}.json"))
        w = json.load(open(tmp_path / f"one{n}.json"))
        assert (c["status"], c["files_read"], c["bytes_read"], c["counts"]) == (
            w["status"], w["files_read"], w["bytes_read"], w["counts"])
    assert json.load(open(tmp_path / "dask1.json"))["status"] == "partial"
    assert json.load(open(tmp_path / "dask2.json"))["status"] == "complete"


def test_an_interrupted_cluster_audit_keeps_its_records_and_the_next_one_resumes(tmp_path, cluster):
    a = make_tree(str(tmp_path / "a"))
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    env = dict(os.environ, TRAWL_DASK_MAP_DELAY="3")
    p = subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", "audit", "--scheduler", cluster.address,
         "--shard-files", "5", a, "-c", "cat.db"],
        cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    c = cluster.client()
    try:
        wait_until(lambda: any(str(t).startswith("trawl-audit-read-")
                               for ts in c.processing().values() for t in ts))
    finally:
        c.close()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "the next audit resumes" in err
    r = trawl_dask("audit", "--scheduler", cluster.address, a, "-c", "cat.db", "--json", "r.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "was interrupted; resuming it" in r.stderr
    assert json.load(open(tmp_path / "r.json"))["counts"]["new"] == 43


def test_what_a_cluster_audit_cannot_do_is_refused_by_name(tmp_path):
    a = make_tree(str(tmp_path / "a"))
    r = trawl_dask("audit", "--local", "1", a, "-c", "cat.db", "--follow", cwd=str(tmp_path))
    assert r.returncode == 2 and "--follow: not available in a cluster audit" in r.stderr
    assert not os.path.exists(tmp_path / "cat.db")
    r = trawl_dask("audit", "--local", "1", a, cwd=str(tmp_path))
    assert r.returncode == 2 and "--catalog" in r.stderr


def test_a_frozen_worker_in_a_cluster_audit_is_taken_as_lost_after_the_worker_timeout(tmp_path, cluster):
    # SIGSTOP: the worker holds its connections and answers nothing; Dask alone would wait for
    # its heartbeat timeout (5 minutes) before giving its reads to the other worker.
    a, b = make_tree(str(tmp_path / "a")), make_tree(str(tmp_path / "b"))
    cluster.worker("a", nanny=False)
    cluster.worker("b", nanny=False)
    cluster.wait_for(2)
    p = trawl_dask_started("audit", "--scheduler", cluster.address, "--shard-files", "5",
                           "--worker-timeout", "5", a, "-c", "cat.db", "--json", "c.json",
                           "--stats", "stats.json", cwd=str(tmp_path), env={"TRAWL_DASK_MAP_DELAY": "2"})
    c = cluster.client()
    try:
        wait_until(lambda: any(str(t).startswith("trawl-audit-read-")
                               for t in c.processing().get(worker_pid(c, "a")[0], ())))
        _, pid = worker_pid(c, "a")
    finally:
        c.close()
    frozen_until_taken_as_lost(p, pid, tmp_path / "stats.json", "audit")
    w = one_machine(b, "-c", "l.db", "--json", "l.json", cwd=str(tmp_path))
    assert w.returncode == 0, w.stderr
    assert events(tmp_path / "c.json", a) == events(tmp_path / "l.json", b)


def test_an_audits_read_tasks_are_cut_by_the_rule_a_scans_shards_are(tmp_path):
    """A quarter of a worker's share with 5% of room (at least 100 files), the rule a scan's
    shards are cut by: 420 files on one worker, 110 a task."""
    a = tmp_path / "a"
    a.mkdir()
    for i in range(420):
        (a / f"f{i:03}").write_bytes(b"")
    r = trawl_dask("audit", "--local", "1", str(a), "-c", "cat.db", "-q", "--stats", "stats.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    reads = json.load(open(tmp_path / "stats.json"))["reads"]
    per_task = 420 * 105 // 400
    assert (reads["shard_files_max"], reads["shards"]) == (per_task, -(-420 // per_task)) == (110, 4)
