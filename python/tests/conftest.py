"""Fixtures for the cluster tests: generated trees, the one-machine reference (the `trawl`
binary, TRAWL_BIN), Dask schedulers and workers as separate processes, and a full filesystem."""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def trawl_bin():
    b = os.environ.get("TRAWL_BIN") or shutil.which("trawl")
    if not b:
        pytest.skip("no trawl binary (set TRAWL_BIN)")
    return b


def make_tree(root, files=40, seed=7):
    """Files with duplicates across them (so across shards and machines), zero runs, short
    tails, text, an empty file, a hard link, a symbolic link and a FIFO."""
    rnd = random.Random(seed)
    shared = rnd.randbytes(300_000)
    text = b"the quick brown fox jumps over the lazy dog\n" * 5000
    for i in range(files):
        d = os.path.join(root, f"d{i % 4}", f"e{i % 3}")
        os.makedirs(d, exist_ok=True)
        data = rnd.randbytes(5_000 + (i * 7919) % 90_000)
        if i % 2 == 0:
            data += shared[: (i + 1) * 8192]
        if i % 3 == 0:
            data += bytes(65_536 + i * 100)
        if i % 4 == 0:
            data += text
        if i % 5 == 0:
            data += shared
        with open(os.path.join(d, f"f{i:03}.bin"), "wb") as f:
            f.write(data)
    open(os.path.join(root, "empty"), "wb").close()
    shutil.copy(os.path.join(root, "d0", "e0", "f000.bin"), os.path.join(root, "copy.bin"))
    # Beside its other name: which name of an inode is counted is the first one met, on one
    # machine as on a cluster; the figures do not depend on it, a directory's row would.
    os.link(os.path.join(root, "d1", "e1", "f001.bin"), os.path.join(root, "d1", "e1", "f001-link.bin"))
    os.symlink("copy.bin", os.path.join(root, "link"))
    os.mkfifo(os.path.join(root, "fifo"))
    return root


@pytest.fixture
def tree(tmp_path):
    return make_tree(str(tmp_path / "tree"))


#: Fields that depend on the run, not the data.
VOLATILE = {"seconds", "bytes_per_second", "peak_rss_bytes", "peak_anon_bytes"}


def comparable(report):
    """A report with its run-dependent fields left out and its order-free lists sorted."""
    r = json.loads(json.dumps(report))
    r.pop("exit_code", None)
    for k in VOLATILE:
        r["totals"].pop(k, None)
    for k in ("skipped", "failed", "files"):
        r[k] = sorted(r.get(k, []), key=lambda x: json.dumps(x, sort_keys=True))
    return r


#: The options both sides scan with: several digests, every block size, CDC, two codecs,
#: attribution, a manifest.
SCAN = ["--digest", "sha256,md5", "--cdc", "16k", "--compress", "lz4,zstd", "--top-files", "25"]


def assert_same_report(got, want):
    g, w = comparable(got), comparable(want)
    for k in sorted(set(g) | set(w)):
        assert g.get(k) == w.get(k), f"{k} differs"


def one_machine(paths, *flags, cwd=None):
    """`trawl scan` on one machine: its report and exit code."""
    out = os.path.join(cwd or ".", "one-machine.json")
    p = subprocess.run(
        [trawl_bin(), "scan", *paths, *flags, "--json", out, "--quiet"], cwd=cwd, capture_output=True
    )
    with open(os.path.join(cwd or ".", "one-machine.json")) as f:
        rep = json.load(f)
    os.unlink(os.path.join(cwd or ".", "one-machine.json"))
    return rep, p.returncode


def trawl_dask(*args, cwd=None, env=None, timeout=300):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "trawl.cluster", *args],
        cwd=cwd,
        env=e,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def trawl_dask_started(*args, cwd=None, env=None):
    """`trawl-dask ARGS` started and left running (``env`` added to this one's), its output
    captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "trawl.cluster", *args], cwd=cwd, env=dict(os.environ, **(env or {})),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def ended(p, timeout, what):
    """The output of a started run once it ends; if it does not within ``timeout`` seconds, it
    is killed and the test fails saying ``what``."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"{what}: {err[-2000:]}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A scheduler and workers as processes of their own (each killable), on loopback."""

    def __init__(self, tmp, tls=None, scheduler_file=None):
        """``tls``: (CA file, certificate, key) for a tls:// cluster, given to the scheduler and
        workers with Dask's own flags; ``scheduler_file``: where the scheduler writes its address.

        The scheduler picks its own port (0) and writes its address to its scheduler file, which
        the workers read: a port chosen here and bound later by the scheduler could be taken
        meanwhile by another test running beside this one."""
        self.tmp = tmp
        self.tls = tls
        self.scheduler_file = str(scheduler_file or os.path.join(tmp, "scheduler-address.json"))
        self._address = None
        self.procs = []
        self.workers = {}
        argv = [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                "--port", "0", "--no-dashboard", "--scheduler-file", self.scheduler_file]
        if tls:
            argv += ["--protocol", "tls", *self._tls_flags()]
        self.scheduler = self._start(argv, "scheduler")

    @property
    def address(self):
        """The scheduler's address, as it wrote it to its scheduler file (waited for)."""
        if self._address is None:
            def written():
                if self.scheduler.poll() is not None:
                    with open(os.path.join(self.tmp, "scheduler.log")) as f:
                        raise AssertionError(f"the scheduler ended at its start: {f.read()[-2000:]}")
                try:
                    with open(self.scheduler_file) as f:
                        return json.load(f).get("address")
                except (OSError, ValueError):
                    return None

            self._address = wait_until(written, timeout=60)
        return self._address

    @property
    def port(self):
        return int(self.address.rsplit(":", 1)[1])

    def _tls_flags(self):
        ca, cert, key = self.tls
        return ["--tls-ca-file", str(ca), "--tls-cert", str(cert), "--tls-key", str(key)]

    def _start(self, argv, name, env=None):
        e = dict(os.environ)
        e.update(env or {})
        log = open(os.path.join(self.tmp, f"{name}.log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=e, start_new_session=True)
        self.procs.append(p)
        return p

    def worker(self, name, nanny=True, env=None, prefix=()):
        argv = [*prefix, sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                self.scheduler_file, "--name", name, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"]
        if not nanny:
            argv.append("--no-nanny")
        if self.tls:
            argv += self._tls_flags()
        self.workers[name] = self._start(argv, f"worker-{name}", env)
        return self.workers[name]

    def client(self):
        from distributed import Client

        security = None
        if self.tls:
            from distributed.security import Security

            ca, cert, key = self.tls
            security = Security(tls_ca_file=str(ca), tls_client_cert=str(cert), tls_client_key=str(key),
                                require_encryption=True)
        return Client(self.address, timeout=60, security=security)

    def wait_for(self, n, timeout=60):
        c = self.client()
        try:
            c.wait_for_workers(n, timeout=timeout)
        finally:
            c.close()

    def close(self):
        """SIGTERM to every process group, then SIGKILL to those still there after 3 s. A worker
        can take longer to close (a task still running, its scheduler gone first); it once held
        a test's end for 10 s, and nothing is checked of how the processes end."""
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        end = time.time() + 3
        for p in self.procs:
            try:
                p.wait(timeout=max(0.1, end - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(str(tmp_path))
    yield c
    c.close()


def worker_pid(client, name):
    """The address and process id of the worker named ``name`` (None, None while it has none)."""
    for addr, w in client.scheduler_info(n_workers=-1)["workers"].items():
        if str(w.get("name")) == name:
            try:
                return addr, client.run(os.getpid, workers=[addr])[addr]
            except Exception:
                return None, None
    return None, None


def wait_until(cond, timeout=60, step=0.05):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out waiting")


def frozen_until_taken_as_lost(p, pid, stats, what):
    """Freezes worker process ``pid`` (SIGSTOP: it holds its connections and answers nothing)
    while run ``p`` (started with ``--worker-timeout 5``) goes on, and checks that the run ends
    by itself, exit 0, saying so, with ``silent_workers`` 1 in its ``--stats`` file ``stats``;
    the worker is killed afterwards. Returns the run's stderr."""
    os.kill(pid, signal.SIGSTOP)
    try:
        t = time.time()
        _, err = ended(p, 120, f"the {what} did not end with a frozen worker")
        assert p.returncode == 0, err
        assert time.time() - t < 100
        assert "not heard from for 5 s (--worker-timeout)" in err, err
        assert "Traceback" not in err, err
        with open(stats) as f:
            assert json.load(f)["silent_workers"] == 1
        return err
    finally:
        os.kill(pid, signal.SIGKILL)


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
