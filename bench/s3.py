#!/usr/bin/env python3
"""bench/s3: trawl reading an S3 prefix beside rclone, against a local S3 server, and the server's
own raw GET throughput, in one interleaved run (medians and ratios). trawl is a build with the
S3 client (`cargo build --release --features openssl,s3`).

The server is started and stopped by the bench on 127.0.0.1: the s3s-fs library (a directory
served as a bucket store, DIR/s3s-fs) through `examples/s3_server.rs` (`cargo build --release
--example s3_server`; the `s3s-fs` binary stopped accepting connections in this bench) by default, or moto (`python3 -m moto.server`, in memory: every run uploads again) with
--server moto. DIR must be on a disk (/var/tmp, never tmpfs).

Data (bucket `bench`, made once and kept between runs unless --fresh; sizes times --scale, the
contents seeded random bytes, incompressible and without duplicates):
  small  10,000 objects of 1-64 KiB (sizes uniform, seeded), prefix small-N/
  big    100 objects of 32 MiB, prefix big-N/
  huge   one 4 GiB object, uploaded in 8 MiB parts (multipart), prefix huge-MiB/
Each set is written under DIR/stage and uploaded with `rclone move` (through the server, so that
its ETags and multipart records are its own). With s3s-fs the local copy that `rclone check` and
the manifests read is the server's own directory for the prefix (DIR/s3s-fs/bench/PREFIX: the
object files as uploaded), so the data is on the disk once; with moto the staged copy is kept.
Free space is checked before writing (each set once, plus its staging copy); short, the bench
says so and stops.

Rows per set, each run --runs times, rounds interleaved (each round's order rotated by one), the
page cache warm (the server's files stay in memory where they fit):
  rclone hashsum sha256 --download (the peer: the ratio's base; `hashsum md5 --download` is left
  out: on the small set it hung with no request in flight, twice, RCLONE_TIMEOUT notwithstanding),
  rclone check LOCAL REMOTE --download (a full verification),
  trawl scan s3://bench/PREFIX -q -d sha256 -m sha256sum:/dev/null (and the same with
  --no-reduce: only the digest, the peers' work),
  trawl verify MANIFEST --root s3://bench/PREFIX -q (a sha256sum manifest of the local copy),
  trawl audit s3://bench/PREFIX -c CATALOG (a full audit: every object read again, the catalog
  registered once before the rounds with a new catalog's digests, sha256,crc64nvme) and, on the
  small set, trawl audit --no-download (the store's own checksums against the catalog's, a
  HeadObject per object; that catalog records MD5 too, the only checksum this store keeps),
  raw GET N=1, 4, 16, 64: presigned GETs on N keep-alive connections (Python threads, http.client,
  1 MiB reads discarded); whole objects for small and big, 4 MiB ranges for huge. The best N is
  the server's raw limit.
rclone is configured through RCLONE_CONFIG_S3BENCH_* only (and RCLONE_TIMEOUT=15s: an idle
request is given up and retried after 15 s, not rclone's default 5 minutes); trawl through AWS_*
and --endpoint.
A tool that is not installed is left out, saying so. Each row: median seconds, MiB/s (objects/s
for small), rclone hashsum sha256 / this (above 1: this row is faster), and for trawl rows this /
the raw limit (as MiB/s).

    python3 bench/s3.py [DIR] [--trawl PATH] [--runs N] [--scale F] [--only small,big,huge]
                        [--server s3s-fs|moto] [--fresh] [--no-raw] [--leave-out "rclone check,..."]
                        [--prepare]
"""

import argparse
import hashlib
import http.client
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cold import fs_type  # noqa: E402
from media import free_port, wait_port  # noqa: E402

BUCKET = "bench"
AK, SK, REGION = "trawlbench", "trawlbenchsecret", "us-east-1"
MiB = 1 << 20


def sets_for(scale):
    """name -> (prefix, list of (key relative to the prefix, size), upload flags)."""
    rng = random.Random(58)
    n_small = max(1, int(10000 * scale))
    small = [(f"d{i % 100:02d}/f{i:05d}", rng.randint(1024, 64 * 1024)) for i in range(n_small)]
    n_big = max(1, int(100 * scale))
    big = [(f"b{i:03d}.bin", 32 * MiB) for i in range(n_big)]
    huge_mib = max(8, int(4096 * scale) // 8 * 8)
    return {
        "small": (f"small-{n_small}", small, ["--transfers", "16", "--checkers", "16"]),
        "big": (f"big-{n_big}", big, ["--transfers", "4"]),
        "huge": (f"huge-{huge_mib}", [("huge.bin", huge_mib * MiB)],
                 ["--s3-chunk-size", "8M", "--s3-upload-cutoff", "8M", "--s3-upload-concurrency", "4"]),
    }


def write_set(stage, files, seed):
    """The set's files under `stage`, contents seeded random bytes (written in 16 MiB pieces)."""
    rng = random.Random(seed)
    for rel, size in files:
        path = os.path.join(stage, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            left = size
            while left:
                n = min(left, 16 * MiB)
                f.write(rng.randbytes(n))
                left -= n


def sha256_manifest(local, files, out):
    with open(out + ".part", "w") as m:
        for rel, _ in files:
            h = hashlib.sha256()
            with open(os.path.join(local, rel), "rb") as f:
                while True:
                    b = f.read(4 * MiB)
                    if not b:
                        break
                    h.update(b)
            m.write(f"{h.hexdigest()}  {rel}\n")
    os.rename(out + ".part", out)


class Server:
    """s3s-fs or moto on 127.0.0.1, started here, stopped by stop()."""

    def __init__(self, kind, root, s3_server):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if kind == "s3s-fs":
            os.makedirs(root, exist_ok=True)
            cmd = [s3_server, root, str(self.port), AK, SK]
        else:
            cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_port(self.port)

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def s3_client(url):
    import boto3
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=AK, aws_secret_access_key=SK,
                        region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}, max_pool_connections=64))


def raw_get(client, port, prefix, files, conns, ranged):
    """Seconds to GET every object of the set (or, `ranged`, every 4 MiB range of it) on `conns`
    keep-alive connections, the bodies read in 1 MiB pieces and discarded. URLs are presigned
    before the clock starts."""
    jobs = []
    for rel, size in files:
        u = client.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": f"{prefix}/{rel}"},
                                          ExpiresIn=3600)
        p = urllib.parse.urlsplit(u)
        path = p.path + "?" + p.query
        if ranged:
            for off in range(0, size, 4 * MiB):
                jobs.append((path, {"Range": f"bytes={off}-{min(off + 4 * MiB, size) - 1}"}, min(4 * MiB, size - off)))
        else:
            jobs.append((path, {}, size))
    it = iter(jobs)
    lock = threading.Lock()
    errors = []

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        buf = bytearray(MiB)
        mv = memoryview(buf)
        try:
            while True:
                with lock:
                    job = next(it, None)
                if job is None:
                    return
                path, headers, want = job
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                got = 0
                while True:
                    n = r.readinto(mv)
                    if not n:
                        break
                    got += n
                if r.status not in (200, 206) or got != want:
                    errors.append(f"{path}: {r.status}, {got} of {want} bytes")
                    return
        except Exception as e:  # noqa: BLE001 (reported below, the run stops)
            errors.append(repr(e))
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(conns)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    if errors:
        sys.exit(f"raw GET failed: {errors[0]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="/var/tmp/trawl-s3bench")
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--s3-server", default=os.path.join(ROOT, "target", "release", "examples", "s3_server"),
                    help="the s3s-fs server (examples/s3_server.rs, built with --release)")
    ap.add_argument("--server", choices=("s3s-fs", "moto"), default="s3s-fs")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="data sizes times this")
    ap.add_argument("--only", default="small,big,huge")
    ap.add_argument("--fresh", action="store_true", help="delete the data sets and upload them again")
    ap.add_argument("--no-raw", action="store_true", help="leave out the raw GET rows")
    ap.add_argument("--leave-out", default="", help="rows to leave out, by the start of their name, comma-separated")
    ap.add_argument("--prepare", action="store_true", help="make and upload the data sets, then stop (nothing timed)")
    a = ap.parse_args()

    kind = fs_type(a.dir if os.path.exists(a.dir) else os.path.dirname(a.dir.rstrip("/")))
    if kind in ("tmpfs", "ramfs"):
        sys.exit(f"{a.dir} is on {kind}: name a directory on a disk")
    if not shutil.which("rclone"):
        sys.exit("rclone is not installed (apt-get install -y rclone): it is the peer and the uploader")
    if a.server == "s3s-fs" and not os.access(a.s3_server, os.X_OK):
        sys.exit(f"{a.s3_server} is not built: cargo build --release --example s3_server")
    if a.fresh and os.path.exists(a.dir):
        shutil.rmtree(a.dir)
    os.makedirs(a.dir, exist_ok=True)
    srv_root = os.path.join(a.dir, "s3s-fs")
    marks = os.path.join(a.dir, "marks")
    os.makedirs(marks, exist_ok=True)
    all_sets = sets_for(a.scale)
    only = [n for n in a.only.split(",") if n]
    sets = {n: all_sets[n] for n in only}

    # Space: every set not uploaded yet once on the server, and the largest of them once more
    # while staged (sets are staged one at a time, `rclone move` deletes each file once sent).
    persist = a.server == "s3s-fs"
    todo = [sum(s for _, s in files) for prefix, files, _ in sets.values()
            if not (persist and os.path.exists(os.path.join(marks, prefix)))]
    need = sum(todo) * (1 if persist else 2) + max(todo, default=0)
    free = shutil.disk_usage(a.dir).free
    if need and need + (1 << 30) > free:
        sys.exit(f"{a.dir}: {need / 2**30:.1f} GiB needed for the data sets (and 1 GiB spare), "
                 f"{free / 2**30:.1f} GiB free: free space, or use --scale / --only")

    tmp = tempfile.mkdtemp(prefix="trawl-s3bench-")
    server = Server(a.server, srv_root, a.s3_server)
    try:
        env = dict(os.environ)
        env.update({"AWS_ACCESS_KEY_ID": AK, "AWS_SECRET_ACCESS_KEY": SK, "AWS_REGION": REGION,
                    "AWS_EC2_METADATA_DISABLED": "true",
                    "RCLONE_CONFIG": os.path.join(tmp, "rclone.conf"),
                    "RCLONE_CONFIG_S3BENCH_TYPE": "s3", "RCLONE_CONFIG_S3BENCH_PROVIDER": "Other",
                    "RCLONE_CONFIG_S3BENCH_ENDPOINT": server.url,
                    "RCLONE_CONFIG_S3BENCH_ACCESS_KEY_ID": AK,
                    "RCLONE_CONFIG_S3BENCH_SECRET_ACCESS_KEY": SK,
                    "RCLONE_CONFIG_S3BENCH_FORCE_PATH_STYLE": "true",
                    "RCLONE_CONFIG_S3BENCH_REGION": REGION,
                    "RCLONE_CACHE_DIR": os.path.join(tmp, "cache"),
                    # A request s3s-fs never answers (seen once, a hashsum of the small set left
                    # waiting on one connection) would hold rclone for its default 5 minutes.
                    "RCLONE_TIMEOUT": "15s", "RCLONE_CONTIMEOUT": "5s"})
        for k in [k for k in env if k.startswith("AWS_") and k not in
                  ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_EC2_METADATA_DISABLED")]:
            del env[k]
        client = s3_client(server.url)
        try:
            client.create_bucket(Bucket=BUCKET)
        except client.exceptions.BucketAlreadyOwnedByYou:
            pass
        except Exception as e:  # noqa: BLE001 (s3s-fs answers an existing bucket otherwise)
            if "BucketAlreadyExists" not in repr(e) and "BucketAlreadyOwnedByYou" not in repr(e):
                raise

        locals_, manifests = {}, {}
        for i, (name, (prefix, files, flags)) in enumerate(sets.items()):
            mark = os.path.join(marks, prefix)
            local = os.path.join(srv_root, BUCKET, prefix) if persist else os.path.join(a.dir, "moto-local", prefix)
            if not (persist and os.path.exists(mark)):
                stage = os.path.join(a.dir, "stage", prefix)
                shutil.rmtree(stage, ignore_errors=True)
                if persist:
                    shutil.rmtree(local, ignore_errors=True)
                t = time.perf_counter()
                write_set(stage, files, seed=i)
                print(f"{name}: written to {stage} in {time.perf_counter() - t:.0f} s; uploading", flush=True)
                t = time.perf_counter()
                verb = "move" if persist else "copy"
                # Without the short timeout: completing a multipart upload of 4 GiB takes the
                # server longer than 15 s, and a CompleteMultipartUpload sent again finds its
                # upload gone (AccessDenied).
                upload_env = {k: v for k, v in env.items() if k not in ("RCLONE_TIMEOUT", "RCLONE_CONTIMEOUT")}
                subprocess.run(["rclone", verb, stage, f"s3bench:{BUCKET}/{prefix}", "-q"] + flags,
                               env=upload_env, check=True)
                print(f"{name}: uploaded in {time.perf_counter() - t:.0f} s", flush=True)
                if persist:
                    shutil.rmtree(stage, ignore_errors=True)
                else:
                    os.makedirs(os.path.dirname(local), exist_ok=True)
                    shutil.rmtree(local, ignore_errors=True)
                    os.rename(stage, local)
                man = os.path.join(marks, prefix + ".sha256")
                sha256_manifest(local, files, man)
                open(mark, "w").close()
            locals_[name] = local
            manifests[name] = os.path.join(marks, prefix + ".sha256")

        if a.prepare:
            print("data sets ready: " + ", ".join(p for p, _, _ in sets.values()))
            return
        T = a.trawl
        have_trawl = os.access(T, os.X_OK)
        if not have_trawl:
            print(f"{T} is not built: the trawl rows are left out (cargo build --release --features openssl,s3)")
        elif "built without object storage" in subprocess.run(
                [T, "scan", "-q", "s3://bench/none", "--endpoint", "http://127.0.0.1:9"],
                capture_output=True, text=True).stderr:
            sys.exit(f"{T} was built without the S3 client: cargo build --release --features openssl,s3")
        no_download = have_trawl and "--no-download" in subprocess.run(
            [T, "audit", "--help"], capture_output=True, text=True).stdout
        if have_trawl and not no_download:
            print("this trawl has no `audit --no-download`: its row is left out")
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        print(f"bench/s3: {os.cpu_count()} CPUs, server {a.server} on {server.url} "
              f"(data in {a.dir}, {fs_type(a.dir)}), commit {rev}, {a.runs} interleaved rounds, medians",
              flush=True)
        ep = f"--endpoint {server.url}"
        for name, (prefix, files, _) in sets.items():
            remote = f"s3bench:{BUCKET}/{prefix}"
            uri = f"s3://{BUCKET}/{prefix}"
            peers = {"rclone hashsum sha256 --download": f"rclone hashsum sha256 {remote} --download",
                     "rclone check --download": f"rclone check {locals_[name]} {remote} --download -q"}
            mine = {}
            if have_trawl:
                mine = {"trawl scan -d sha256 -m sha256sum": f"{T} scan {uri} -q -d sha256 -m sha256sum:/dev/null {ep}",
                        "trawl scan ... --no-reduce": f"{T} scan {uri} -q -d sha256 --no-reduce -m sha256sum:/dev/null {ep}",
                        "trawl verify": f"{T} verify {manifests[name]} --root {uri} {ep} -q"}
                # Audits: catalogs registered once here (not timed), then audited each round:
                # fully (every object read again), with a new catalog's digests (for s3:// roots
                # sha256,crc64nvme), and, on the small set, by the store's own checksums (a
                # HeadObject each, no download: this store holds only ETags, so that catalog
                # records MD5 too).
                def register(db, digests):
                    cat = os.path.join(tmp, f"{name}-{db}.db")
                    reg = f"{T} audit {uri} -c {cat} --init -q {digests} {ep}"
                    p = subprocess.run(reg, shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    if p.returncode != 0:
                        sys.exit(f"failed ({p.returncode}): {reg}\n{p.stderr.decode(errors='replace')[-2000:]}")
                    return cat
                if not any("trawl audit (full read)".startswith(x) for x in a.leave_out.split(",") if x):
                    cat = register("full", "")
                    mine["trawl audit (full read)"] = f"{T} audit {uri} -c {cat} -q {ep}"
                if name == "small" and no_download:
                    cat = register("nd", "-d sha256,md5")
                    mine["trawl audit --no-download"] = f"{T} audit {uri} -c {cat} -q --no-download {ep}"
            raw = {} if a.no_raw else {f"raw GET N={n}": n for n in (1, 4, 16, 64)}
            items = [(k, c) for k, c in {**peers, **mine}.items()] + list(raw.items())
            out = [x for x in a.leave_out.split(",") if x]
            items = [(k, c) for k, c in items if not any(k.startswith(x) for x in out)]
            times = {k: [] for k, _ in items}
            for r in range(a.runs):
                order = items[r % len(items):] + items[:r % len(items)]
                for k, c in order:
                    if isinstance(c, int):
                        times[k].append(raw_get(client, server.port, prefix, files, c, ranged=(name == "huge")))
                        continue
                    t = time.perf_counter()
                    p = subprocess.run(c, shell=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    times[k].append(time.perf_counter() - t)
                    if p.returncode != 0:
                        sys.exit(f"failed ({p.returncode}): {c}\n{p.stderr.decode(errors='replace')[-2000:]}")
            size = sum(s for _, s in files)
            med = {k: statistics.median(v) for k, v in times.items()}
            base = med.get("rclone hashsum sha256 --download")
            raw = {k: n for k, n in raw.items() if k in med}
            raw_best = min((v for k, v in med.items() if k in raw), default=None)
            print(f"\n{name}: {len(files):,} objects, {size / MiB:,.0f} MiB, {uri}")
            objs = name == "small"
            print(f"  {'command':<36} {'median s':>9} {'MiB/s':>8}" + (f" {'obj/s':>8}" if objs else "")
                  + f" {'rclone/this':>12} {'of raw':>7}")
            for k, m in med.items():
                line = f"  {k:<36} {m:>9.2f} {size / MiB / m:>8.0f}"
                if objs:
                    line += f" {len(files) / m:>8.0f}"
                line += f" {base / m:>11.2f}x" if base else f" {'-':>12}"
                if k in mine and raw_best:
                    line += f" {raw_best / m:>7.2f}"
                print(line, flush=True)
            if raw_best:
                bestk = min((k for k in raw), key=lambda k: med[k])
                print(f"  raw GET limit: {bestk}, {size / MiB / raw_best:,.0f} MiB/s")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
