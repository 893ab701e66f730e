#!/usr/bin/env python3
"""bench/media: FLV keyframe indexing, injection and seeking, trawl against ffprobe, flvmeta,
yamdi, cat and nginx's flv module, side by side in one run (page cache warm).

Data (bench/data/media, made once): two H.264 + AAC FLV files of about 1 GB:
  dense.flv   ~35,000 tags (16 Mbit/s video at 25 fps + AAC, tags ~29 KB)
  sparse.flv  ~290,000 tags (2 Mbit/s video at 25 fps + AAC, tags ~4 KB)
Each is a short ffmpeg encoding (lavfi testsrc2 + sine, libx264 -g 50, aac) whose tags are
repeated with increasing timestamps until the file reaches the size: a valid FLV that ffprobe
and ffmpeg read, made in seconds instead of an hour of encoding.

The page cache is warm and set the same way for every tool: each file is evicted and cached again
by a sequential read ("seq") and then, for a second set of rows, 4 KiB at a time ("4k"); see
recache().

Timed (median of RUNS, after one warm-up):
  trawl flv index F          ffprobe -show_packets (keyframes listed)    flvmeta -C F    cat F
  trawl flv inject F OUT     yamdi -i F -o OUT    cp F OUT    (to tmpfs, and with --reflink-dir
                             also on a filesystem with reflinks, where trawl and cp share extents)
Then the server: `ab` (apache2-utils) requests per second for one ?start= seek near the end of
the 2 Mbit/s clip, trawl serve (?start=SECONDS) against nginx's flv module (?start=BYTES of the
same keyframe), and whether ffmpeg decodes each answer (nginx sends no codec headers after a
seek).

    python3 bench/media.py [--runs N] [--trawl PATH] [--only index|serve] [--reflink-dir DIR]

A reflink filesystem for --reflink-dir, as root:
    truncate -s 8G /tmp/xfs.img && mkfs.xfs -m reflink=1 /tmp/xfs.img
    mkdir -p /mnt/x && mount -o loop /tmp/xfs.img /mnt/x
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "media")


def tags(path):
    """(offset, type, timestamp_ms, whole tag bytes with its PreviousTagSize) of an FLV file."""
    data = open(path, "rb").read()
    pos = struct.unpack(">I", data[5:9])[0] + 4
    out = []
    while pos + 11 <= len(data):
        size = int.from_bytes(data[pos + 1:pos + 4], "big")
        ts = int.from_bytes(data[pos + 4:pos + 7], "big") | (data[pos + 7] << 24)
        out.append((pos, data[pos] & 0x1F, ts, data[pos:pos + 11 + size + 4]))
        pos += 11 + size + 4
    return data[:9], out


def retime(tag, ts):
    b = bytearray(tag)
    b[4:7] = (ts & 0xFFFFFF).to_bytes(3, "big")
    b[7] = (ts >> 24) & 0xFF
    return bytes(b)


def make(name, target, vf, vbitrate, seconds):
    out = os.path.join(DATA, name)
    if os.path.exists(out):
        return out
    os.makedirs(DATA, exist_ok=True)
    clip = os.path.join(DATA, f"clip_{name}")
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", vf, "-f", "lavfi", "-i",
         "sine=f=440", "-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast",
         "-g", "50", "-b:v", vbitrate, "-maxrate", vbitrate, "-bufsize", vbitrate,
         "-c:a", "aac", clip],
        check=True,
    )
    head, ts = tags(clip)
    # Script and configuration tags once, then the clip's pictures and audio over and over.
    fixed = [t for t in ts if t[1] == 18 or (t[1] == 9 and t[3][12] == 0)
             or (t[1] == 8 and t[3][12] == 0)]
    body = [t for t in ts if t not in fixed]
    period = max(t[2] for t in body) + 40
    with open(out + ".tmp", "wb") as f:
        f.write(head + b"\0\0\0\0")
        n = 0
        for t in fixed:
            f.write(t[3])
        rep = 0
        while f.tell() < target:
            for t in body:
                f.write(retime(t[3], t[2] + rep * period))
                n += 1
            rep += 1
    os.rename(out + ".tmp", out)
    return out


def recache(path, state):
    """Evicts `path` from the page cache and caches it again, the same way for every tool:
    "seq" by a sequential read (as `cat` or a copy leaves it: large folios on Linux 6.x), "4k"
    4 KiB at a time with random-access advice (order-0 folios). Mapped access costs differ
    several times between the two; reads do not."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if state == "seq":
            while os.read(fd, 1 << 20):
                pass
        else:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            for off in range(0, os.fstat(fd).st_size, 4096):
                os.pread(fd, 4096, off)
    finally:
        os.close(fd)


def run_once(cmd, out=subprocess.DEVNULL):
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def median(cmd, runs, shell=False):
    if shell:
        cmd = ["sh", "-c", cmd]
    run_once(cmd)
    return statistics.median(run_once(cmd) for _ in range(runs))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port):
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listening on {port}")


def ab(url, n, c):
    r = subprocess.run(["ab", "-q", "-n", str(n), "-c", str(c), url], capture_output=True,
                       text=True, check=True)
    rps = [l for l in r.stdout.splitlines() if l.startswith("Requests per second")]
    # An answer that is not 2xx (a 403 from nginx's workers, say) is a failure too: ab alone
    # counts only broken connections and lengths that differ.
    bad = sum(int(l.split()[-1]) for l in r.stdout.splitlines()
              if l.startswith("Failed requests") or l.startswith("Non-2xx responses"))
    return float(rps[0].split()[3]), bad


def decodes(url, tmp):
    f = os.path.join(tmp, "answer.flv")
    subprocess.run(["curl", "-s", "-o", f, url], check=True)
    r = subprocess.run(["ffmpeg", "-v", "error", "-xerror", "-i", f, "-f", "null", "-"],
                       capture_output=True)
    return "yes" if r.returncode == 0 else "no"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--only", choices=["index", "serve"],
                    help="time just the index and inject tools, or just the servers")
    ap.add_argument("--reflink-dir", metavar="DIR",
                    help="also time inject on a filesystem that shares extents (XFS, btrfs)")
    a = ap.parse_args()
    for t in ["ffmpeg", "ffprobe", "flvmeta", "yamdi", "nginx", "ab", "curl"]:
        if not shutil.which(t):
            sys.exit(f"bench/media needs {t} (Debian: ffmpeg flvmeta yamdi nginx-light apache2-utils curl)")
    files = [
        ("16 Mbit/s", make("dense.flv", 1_000_000_000, "testsrc2=s=640x360:r=25,noise=alls=40:allf=t", "16M", 20)),
        ("2 Mbit/s", make("sparse.flv", 1_100_000_000, "testsrc2=s=320x240:r=25,noise=alls=40:allf=t", "2M", 20)),
    ]
    tmp = tempfile.mkdtemp(prefix="trawl-bench-media-")
    # nginx's workers run as another user: they must be able to read what they serve.
    os.chmod(tmp, 0o755)
    print(f"median of {a.runs} runs, page cache warm")
    if a.only != "serve":
        print(f"\n{'file':<18} {'tags':>8} {'trawl':>8} {'ffprobe':>8} {'flvmeta -C':>10} {'cat':>7}"
              f" {'vs ffprobe':>10} {'vs flvmeta':>10} {'read':>7}")
    inject_rows = []
    for label, f in files if a.only != "serve" else []:
        nkeys = len(json.loads(subprocess.run(
            [a.trawl, "flv", "index", f, "--json", "-"], capture_output=True, check=True
        ).stdout)["files"][0]["keyframes"])
        stats = subprocess.run([a.trawl, "flv", "index", f, "--stats"], capture_output=True,
                               text=True, check=True).stdout
        line = [l for l in stats.splitlines() if "read " in l][-1]
        frac = line.split("(")[1].rstrip(")")
        header = [l for l in stats.splitlines() if not l.startswith(" ")][0]
        counts = header.split(", ")[-1].split(" ")
        total_tags = int(counts[0]) + int(counts[3]) + int(counts[6])
        for state in ["seq", "4k"]:
            recache(f, state)
            t_trawl = median([a.trawl, "flv", "index", f], a.runs)
            t_probe = median(["ffprobe", "-v", "error", "-select_streams", "v", "-show_packets",
                              "-show_entries", "packet=pos,flags,dts_time", "-of", "csv", f],
                             a.runs)
            t_meta = median(["flvmeta", "-C", f], a.runs)
            t_cat = median(f"cat '{f}' > /dev/null", a.runs, shell=True)
            print(f"{label + ', ' + state:<18} {total_tags:>8} {t_trawl:>7.3f}s {t_probe:>7.3f}s"
                  f" {t_meta:>9.3f}s {t_cat:>6.3f}s {t_probe / t_trawl:>9.1f}x"
                  f" {t_meta / t_trawl:>9.2f}x {frac:>7}")
        inject_rows.append((label, f, nkeys))

    # Copies go to tmpfs where there is one: on disk, dirty-page writeback of earlier runs
    # throttles later ones and the figures measure the disk, not the tools. With --reflink-dir,
    # also to a filesystem that shares extents (XFS, btrfs), inputs copied there first.
    dests = [("/dev/shm" if os.path.isdir("/dev/shm") else tmp, False)]
    if a.reflink_dir:
        dests.append((a.reflink_dir, True))
    for out_dir, reflink in dests if inject_rows else []:
        print(f"\n{'inject to ' + out_dir:<18} {'trawl':>8} {'yamdi':>8} {'cp':>8}"
              f" {'ratio':>7} {'keyframes':>10}"
              + (f" {'trawl --reflink never':>22}" if reflink else ""))
        for label, f, n in inject_rows:
            if reflink:
                src = os.path.join(out_dir, "trawl-bench-in.flv")
                shutil.copyfile(f, src)
                f = src
            out_t = os.path.join(out_dir, "trawl-bench-t.flv")
            out_y = os.path.join(out_dir, "trawl-bench-y.flv")
            ti = median([a.trawl, "flv", "inject", f, out_t], a.runs)
            ty = median(["yamdi", "-i", f, "-o", out_y], a.runs)
            tc = median(["cp", f, out_y], a.runs)
            extra = ""
            if reflink:
                tn = median([a.trawl, "flv", "inject", "--reflink", "never", f, out_t], a.runs)
                extra = f" {tn:>21.3f}s"
                os.remove(f)
            print(f"{label:<18} {ti:>7.3f}s {ty:>7.3f}s {tc:>7.3f}s {ty / ti:>6.2f}x {n:>10}"
                  + extra)
            os.remove(out_t)
            os.remove(out_y)

    if a.only == "index":
        shutil.rmtree(tmp)
        return
    # The server: one seek near the end of the 2 Mbit/s clip (a few MB per answer).
    clip = os.path.join(DATA, "clip_sparse.flv")
    serve_dir = os.path.join(tmp, "www")
    os.makedirs(serve_dir)
    shutil.copy(clip, os.path.join(serve_dir, "c.flv"))
    idx = subprocess.run([a.trawl, "flv", "index", clip, "--json", "-"], capture_output=True,
                         check=True, text=True).stdout
    keys = json.loads(idx)["files"][0]["keyframes"]
    k = keys[len(keys) * 3 // 4]
    tport, nport = free_port(), free_port()
    srv = subprocess.Popen([a.trawl, "serve", serve_dir, "--listen", f"127.0.0.1:{tport}"],
                           stdout=subprocess.DEVNULL)
    conf = os.path.join(tmp, "nginx.conf")
    open(conf, "w").write(f"""
worker_processes {os.cpu_count()};
daemon off;
error_log {tmp}/nginx-error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  server {{
    listen 127.0.0.1:{nport};
    root {serve_dir};
    location ~ \\.flv$ {{ flv; }}
  }}
}}
""")
    ngx = subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        wait_port(tport)
        wait_port(nport)
        turl = f"http://127.0.0.1:{tport}/c.flv?start={k['time']}"
        nurl = f"http://127.0.0.1:{nport}/c.flv?start={k['offset']}"
        ab(turl, 200, 8)
        ab(nurl, 200, 8)
        tr, tf = ab(turl, 3000, 16)
        nr, nf = ab(nurl, 3000, 16)
        print(f"\nseek near the end of {os.path.getsize(clip) / 1e6:.1f} MB clip "
              f"(keyframe at {k['time']} s, offset {k['offset']}), ab -n 3000 -c 16")
        print(f"{'server':<28} {'req/s':>9} {'failed':>7} {'ffmpeg decodes the answer':>26}")
        print(f"{'trawl serve ?start=SECONDS':<28} {tr:>9.0f} {tf:>7} {decodes(turl, tmp):>26}")
        print(f"{'nginx flv ?start=BYTES':<28} {nr:>9.0f} {nf:>7} {decodes(nurl, tmp):>26}")
        print(f"ratio trawl/nginx: {tr / nr:.2f}x")
    finally:
        srv.terminate()
        ngx.terminate()
        srv.wait()
        ngx.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
