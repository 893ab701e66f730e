"""A run's checkpoints under --state: one that cannot be written is said once and the run goes
on; a resume never takes a shard that computed less than it needs, nor one that does not decode,
nor a huge sparse file (refused by its declared size, unread)."""

import json
import os
import re
import time

from conftest import comparable, no_traceback, one_machine, trawl_dask


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
