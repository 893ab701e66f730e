"""trawl.scan over an S3 prefix in-process, against moto's server started here: the digests are
those of the bytes uploaded (hashlib's), and a store that cannot be reached is an error, never an
empty report."""

import hashlib
import os
import socket

import pytest


def moto_server():
    """moto's S3 server on a free loopback port, or None (skipped, failed under
    TRAWL_REQUIRE_INTEROP=1) where moto[server] is not installed."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        assert os.environ.get("TRAWL_REQUIRE_INTEROP") != "1", "moto[server] is required and not installed"
        pytest.skip("moto[server] is not installed (pip install 'moto[server]')")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


@pytest.fixture
def store(monkeypatch):
    got = moto_server()
    server, url = got
    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    yield url
    server.stop()


def test_a_prefix_scanned_in_process_gives_the_digests_of_the_bytes_uploaded(store, tmp_path):
    import boto3

    import trawl

    s3 = boto3.client("s3", endpoint_url=store, region_name="us-east-1")
    s3.create_bucket(Bucket="bkt")
    want = {}
    for i, size in enumerate([0, 1, 4096, 5 * 1024 * 1024 + 3]):
        body = os.urandom(size)
        name = f"d{i % 2}/o{i}.bin"
        s3.put_object(Bucket="bkt", Key=f"photos/{name}", Body=body)
        want[name] = hashlib.sha256(body).hexdigest()
    s3.put_object(Bucket="bkt", Key="elsewhere/x", Body=b"not under the prefix")

    sums = tmp_path / "photos.sha256"
    report = trawl.scan("s3://bkt/photos", endpoint=store, digest="sha256", no_reduce=True,
                        manifest=[f"sha256sum:{sums}"])
    assert report["exit_code"] == 0
    assert report["totals"]["files"] == len(want), report["totals"]
    got = {}
    for line in sums.read_text().splitlines():
        digest, name = line.split("  ", 1)
        # Named as trawl names what is under the root: the key below the prefix, after it.
        got[name.split("photos/", 1)[-1]] = digest
    assert got == want


def test_a_store_that_does_not_answer_is_an_error_not_an_empty_report(monkeypatch):
    import trawl

    for k in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on the port: the listing fails.
    try:
        report = trawl.scan("s3://bkt/p", endpoint=f"http://127.0.0.1:{port}", digest="sha256")
    except trawl.ScanError as e:
        assert e.code == 2
        return
    assert report["exit_code"] == 2, report["totals"]
    assert report["totals"]["files"] == 0
