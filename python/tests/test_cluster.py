"""trawl-dask against `trawl scan` on one machine: the same report at any partition count, in
process, resumed, run twice, on chosen hosts, and what the scheduler is asked to hold. Each test
runs a Dask scheduler and 2-3 workers as processes on loopback."""

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import (
    SCAN, assert_same_report, comparable, ended, one_machine, trawl_bin, trawl_dask,
    trawl_dask_started, wait_until,
)

import trawl


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


def test_flags_a_cluster_cannot_honour_are_refused_by_name(tree, tmp_path):
    r = trawl_dask("scan", "--local", "1", tree, "--sample", "0.1", cwd=str(tmp_path))
    assert r.returncode == 2
    assert "--sample: not available in a cluster scan" in r.stderr
    r = trawl_dask("scan", "--local", "1", tree, "--digest", "nope", cwd=str(tmp_path))
    assert r.returncode == 2 and "nope" in r.stderr


def test_the_cli_binary_is_the_one_compared_against():
    assert os.access(trawl_bin(), os.X_OK)


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
