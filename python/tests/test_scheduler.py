"""Reaching a scheduler: a TLS address without TLS settings refused by name, a scheduler file
read as trawl reads an input (never waited on, capped, its nesting bounded), and a local
cluster that starts no dashboard and takes no port 8787."""

import os
import subprocess
import sys

import pytest

from conftest import no_traceback, trawl_dask


def test_a_tls_scheduler_without_tls_settings_is_refused_by_name(tree, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_DISTRIBUTED__COMM__TLS")}
    r = subprocess.run([sys.executable, "-m", "trawl.cluster", "scan", "--scheduler",
                        "tls://127.0.0.1:1", "--connect-timeout", "5", tree],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "needs this client's certificate: --tls-ca-file" in r.stderr, r.stderr
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
