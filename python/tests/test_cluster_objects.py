"""trawl-dask scan over an S3 prefix, against moto's server started here: the workers list the
prefix and read its objects themselves (no shared file system), and the report, digests and
manifests are those `trawl scan` gives on one machine, and those of the bytes uploaded
(hashlib's); a prefix that cannot be listed, and an object deleted after its listing, are
failures named as such."""

import hashlib
import json
import os
import random
import urllib.request

import pytest

from conftest import assert_same_report, one_machine, trawl_dask
from test_objects import moto_server

#: Both sides: two digests, the reduction with CDC and a codec, the files contributing most.
SCAN = ["--digest", "sha256,md5", "--cdc", "16k", "--compress", "lz4", "--top-files", "10"]


@pytest.fixture
def store(monkeypatch):
    """moto's server, with dummy credentials and no other AWS source, listing 4 keys a page
    (pagination within every level)."""
    server, url = moto_server()
    # The server's state is this process's: what an earlier test stored is gone.
    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST")).close()
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("MOTO_S3_DEFAULT_MAX_KEYS", "4")
    yield url
    server.stop()


def upload(url):
    """30 objects under `p/` on three levels (0 bytes, 1 byte, over 4 MiB: ranged reads;
    copies of one another: duplicates across shards), and keys beside the prefix that are not
    under it (`p2/`, `px`, `q/`). Returns {name below the prefix: its bytes}."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1")
    s3.create_bucket(Bucket="bkt")
    rnd = random.Random(58)
    shared = rnd.randbytes(200_000)
    sizes = [0, 1, 4 * 1024 * 1024 + 17, 5 * 1024 * 1024 + 3] + [rnd.randrange(2, 90_000) for _ in range(26)]
    objects = {}
    for i, size in enumerate(sizes):
        name = [f"o{i:02}.bin", f"d{i % 3}/o{i:02}.bin", f"d{i % 3}/e{i % 2}/o{i:02}.bin"][i % 3]
        body = rnd.randbytes(size) + (shared if i % 4 == 0 else b"")
        if i % 7 == 6:
            body = list(objects.values())[-1]  # a copy of the one before
        objects[name] = body
        s3.put_object(Bucket="bkt", Key=f"p/{name}", Body=body)
    for key in ["p2/z", "px", "q/out"]:
        s3.put_object(Bucket="bkt", Key=key, Body=b"not under the prefix")
    return objects


def sums(path):
    """A sha256sum manifest as {name: digest}."""
    out = {}
    for line in open(path, "rb").read().splitlines():
        digest, name = line.split(b"  ", 1)
        out[name.decode()] = digest.decode()
    return out


def test_a_prefix_scanned_on_a_cluster_equals_one_machine_and_the_bytes_uploaded(store, tmp_path):
    objects = upload(store)
    flags = [*SCAN, "--endpoint", store]
    want, code = one_machine(["s3://bkt/p"], *flags, "-m", "sha256sum:one.sums", cwd=str(tmp_path))
    assert code == 0 and want["totals"]["files"] == 30, want["totals"]
    r = trawl_dask("scan", "--local", "2", "--shard-files", "4", "s3://bkt/p", *flags,
                   "-m", "sha256sum:c.sums", "--json", "c.json", "--stats", "s.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    stats = json.load(open(tmp_path / "s.json"))
    assert stats["shards"] >= 4 and stats["walk"]["files"] == 30, stats
    # The manifest is one machine's, byte for byte, and holds the digests of the bytes uploaded.
    assert open(tmp_path / "c.sums", "rb").read() == open(tmp_path / "one.sums", "rb").read()
    # Named as one machine names what is under a root: the key below the prefix.
    assert sums(tmp_path / "c.sums") == {n: hashlib.sha256(b).hexdigest() for n, b in objects.items()}
    report = json.load(open(tmp_path / "c.json"))
    assert report["totals"]["files"] == 30 and report["totals"]["bytes"] == sum(map(len, objects.values()))
    assert_same_report(report, want)


def test_workers_of_a_running_cluster_read_the_prefix_kept_as_given(store, tmp_path, cluster):
    # Workers started apart, as on other machines: they share no file system with the client,
    # only the store (and their own credentials: this environment's).
    objects = upload(store)
    cluster.worker("a")
    cluster.worker("b")
    cluster.wait_for(2)
    want, code = one_machine(["s3://bkt/p"], "--endpoint", store, "-m", "sha256sum:one.sums", cwd=str(tmp_path))
    assert code == 0
    r = trawl_dask("scan", "--scheduler", cluster.address, "--shard-files", "5", "s3://bkt/p", "--endpoint",
                   store, "-m", "sha256sum:c.sums", "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    report = json.load(open(tmp_path / "c.json"))
    assert [r["path"] for r in report["roots"]] == ["s3://bkt/p"]
    assert open(tmp_path / "c.sums", "rb").read() == open(tmp_path / "one.sums", "rb").read()
    assert len(sums(tmp_path / "c.sums")) == len(objects)
    assert_same_report(report, want)


def test_exclusions_leave_out_of_a_prefix_what_one_machine_leaves_out(store, tmp_path):
    upload(store)
    flags = ["--endpoint", store, "--exclude", "d1/", "--exclude", "o0*.bin", "--exclude", "e1/"]
    want, code = one_machine(["s3://bkt/p"], *flags, cwd=str(tmp_path))
    assert code == 0
    x = want["excluded"]
    assert x["directories"] >= 2 and x["files"] >= 2, x
    r = trawl_dask("scan", "--local", "2", "--shard-files", "3", "s3://bkt/p", *flags, "--json", "c.json",
                   cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_prefix_of_many_levels_is_listed_by_several_tasks_as_one_machine_lists_it(store, tmp_path, monkeypatch):
    import boto3

    monkeypatch.setenv("MOTO_S3_DEFAULT_MAX_KEYS", "1000")
    s3 = boto3.client("s3", endpoint_url=store, region_name="us-east-1")
    s3.create_bucket(Bucket="bkt")
    # 300 "directories" of one object each, and a marker: more levels than one task lists.
    for i in range(300):
        s3.put_object(Bucket="bkt", Key=f"p/d{i:03}/f", Body=str(i).encode())
    s3.put_object(Bucket="bkt", Key="p/d000/", Body=b"")
    want, code = one_machine(["s3://bkt/p"], "--endpoint", store, "-m", "sha256sum:one.sums", cwd=str(tmp_path))
    assert code == 0 and want["totals"]["files"] == 300
    r = trawl_dask("scan", "--local", "2", "s3://bkt/p", "--endpoint", store, "-m", "sha256sum:c.sums",
                   "--json", "c.json", "--stats", "s.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert json.load(open(tmp_path / "s.json"))["walk"]["listing_tasks"] >= 2
    assert open(tmp_path / "c.sums", "rb").read() == open(tmp_path / "one.sums", "rb").read()
    assert_same_report(json.load(open(tmp_path / "c.json")), want)


def test_a_prefix_that_cannot_be_listed_is_one_line_naming_it_and_exit_2(store, tmp_path):
    upload(store)
    # Nothing listens there.
    port = int(store.rsplit(":", 1)[1])
    wrong = f"http://127.0.0.1:{1 if port != 1 else 2}"
    r = trawl_dask("scan", "--local", "1", "s3://bkt/p", "--endpoint", wrong, "--json", "c.json",
                   cwd=str(tmp_path))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    named = [l for l in (r.stdout + r.stderr).splitlines() if "s3://bkt/p/: cannot list" in l]
    assert named and len(set(l.split("s3://", 1)[1] for l in named)) == 1, (r.stdout, r.stderr)
    report = json.load(open(tmp_path / "c.json"))
    assert report["totals"]["files"] == 0
    # The report's record names the worker that listed.
    [failed] = report["failed"]
    assert named[0][named[0].index("s3://"):].startswith(failed["error"]["message"]), failed


def test_an_object_deleted_between_its_listing_and_its_read_is_a_failure_naming_it(store, tmp_path, monkeypatch):
    from moto.s3.models import S3Backend

    objects = upload(store)
    gone = "p/d1/o04.bin"
    assert gone.split("/", 1)[1] in objects
    listed = S3Backend.list_objects_v2

    def list_then_delete(self, bucket, *args, **kwargs):
        # The listing that names it is answered; the object is deleted right after.
        out = listed(self, bucket, *args, **kwargs)
        if any(getattr(k, "name", None) == gone for k in out[0]):
            self.delete_object(bucket.name, gone)
        return out

    monkeypatch.setattr(S3Backend, "list_objects_v2", list_then_delete)
    r = trawl_dask("scan", "--local", "2", "--shard-files", "4", "s3://bkt/p", "--endpoint", store,
                   "-m", "sha256sum:c.sums", "--json", "c.json", cwd=str(tmp_path))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    report = json.load(open(tmp_path / "c.json"))
    assert [f["path"] for f in report["failed"]] == [f"s3://bkt/{gone}"], report["failed"]
    message = report["failed"][0]["error"]["message"]
    # Said as one machine says it where one worker listed and read it, else naming both.
    assert message.startswith(f"s3://bkt/{gone}: ") and (
        "vanished before it could be read" in message or "deleted since it was listed" in message
    ), message
    assert f"s3://bkt/{gone}" in r.stdout + r.stderr
    got = sums(tmp_path / "c.sums")
    assert len(got) == 29 and not any(n.endswith("d1/o04.bin") for n in got)
    assert report["totals"]["files"] == 29


def test_on_is_refused_for_a_prefix_every_worker_reads(tmp_path):
    r = trawl_dask("scan", "--local", "1", "--on", "localhost:s3://bkt/p", "--endpoint", "http://127.0.0.1:1",
                   cwd=str(tmp_path))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "--on localhost:s3://bkt/p: an s3:// prefix is read by every worker" in r.stderr, r.stderr
