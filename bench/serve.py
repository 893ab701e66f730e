#!/usr/bin/env python3
"""bench/serve: requests per second and latency of `trawl serve` against nginx's flv module.

One FLV (an ffmpeg encoding, lavfi testsrc2 + sine, H.264 + AAC, made once into bench/data/serve)
is served by trawl serve and by nginx-light (`location ~ \\.flv$ { flv; }`, with the settings
Debian's nginx.conf ships: sendfile, tcp_nopush, tcp_nodelay; as many workers as trawl's threads)
from the same directory. `wrk` drives each for --secs seconds a run, at 1 and at 32 connections:

  seek    GET /f.flv?start=OFFSET, OFFSET a keyframe's byte offset (from keyframes.filepositions,
          the value a player sends) three quarters into the file; both answer the stream from
          that keyframe (trawl with the codec headers before it, a few hundred bytes more)
  seeks   the same, each request to the next keyframe in turn (a wrk Lua script): every
          answer size the file has, from its whole length down to its last two seconds
  range   GET /f.flv with `Range: bytes=0-65535` (206, 64 KiB)

Runs are interleaved (trawl, nginx, trawl, nginx, ...); printed: the median of --runs runs of
requests a second for each, the ratio trawl/nginx, and the median of the runs' median latency
(wrk's 50th percentile).

    python3 bench/serve.py [--trawl PATH] [--baseline PATH] [--runs N] [--secs S] [-j N]

--baseline PATH runs another build of trawl beside this one (a third column).
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from media import free_port, wait_port  # noqa: E402  (one helper for both servers' benches)
DATA = os.path.join(HERE, "data", "serve")


def clip():
    """The FLV served: 20 s of 320x240 H.264 (200 kbit/s, a keyframe every 2 s) and AAC (64
    kbit/s), about 660 kB: a seek's answer is a few hundred kB, as a short clip's."""
    os.makedirs(DATA, exist_ok=True)
    f = os.path.join(DATA, "clip.flv")
    if not os.path.exists(f):
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=s=320x240:r=25", "-f", "lavfi", "-i", "sine=f=440", "-t", "20",
                        "-pix_fmt", "yuv420p", "-c:v", "libx264", "-b:v", "200k", "-g", "50",
                        "-c:a", "aac", "-b:a", "64k", f + ".part.flv"], check=True)
        os.rename(f + ".part.flv", f)
    return f


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk(url, conns, secs, threads, extra=()):
    """(requests a second, median latency in ms, non-2xx answers) of one wrk run."""
    cmd = ["wrk", "-t", str(min(threads, conns)), "-c", str(conns), "-d", f"{secs}s", "--latency"]
    out = subprocess.run(cmd + list(extra) + [url], capture_output=True, text=True,
                         check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"\n\s+50%\s+([\d.]+)(us|ms|s)\b", out)
    lat = float(m.group(1)) * UNITS[m.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    if errors and re.search(r"(read|write|timeout) [1-9]", errors.group(1)):
        sys.exit(f"wrk {url}: {errors.group(0)}")
    return rps, lat, int(bad.group(1)) if bad else 0


def nginx_conf(tmp, port, root, workers):
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes {workers};
daemon off;
error_log {tmp}/nginx-error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {root};
    location ~ \\.flv$ {{ flv; }}
  }}
}}
""")
    return conf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--baseline")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--secs", type=int, default=3)
    ap.add_argument("-j", type=int, default=os.cpu_count(),
                    help="trawl's threads and nginx's workers (default: the number of CPUs)")
    a = ap.parse_args()
    for t in ["ffmpeg", "nginx", "wrk"]:
        if not shutil.which(t):
            sys.exit(f"bench/serve needs {t} (Debian: ffmpeg nginx-light wrk)")
    f = clip()
    tmp = tempfile.mkdtemp(prefix="trawl-bench-serve-")
    os.chmod(tmp, 0o755)  # nginx's workers run as another user
    www = os.path.join(tmp, "www")
    os.makedirs(www)
    shutil.copy(f, os.path.join(www, "c.flv"))
    idx = json.loads(subprocess.run([a.trawl, "flv", "index", f, "--json", "-"],
                                    capture_output=True, check=True, text=True).stdout)
    keys = idx["files"][0]["keyframes"]
    k = keys[len(keys) * 3 // 4]
    size = os.path.getsize(f)
    servers = {}
    procs = []
    try:
        builds = [("trawl", a.trawl)] + ([("baseline", a.baseline)] if a.baseline else [])
        for name, b in builds:
            port = free_port()
            procs.append(subprocess.Popen(
                [b, "serve", www, "-q", "-j", str(a.j), "--listen", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL))
            servers[name] = port
        nport = free_port()
        procs.append(subprocess.Popen(["nginx", "-c", nginx_conf(tmp, nport, www, a.j), "-p", tmp],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        servers["nginx"] = nport
        for p in servers.values():
            wait_port(p)
        lua = os.path.join(tmp, "seeks.lua")
        with open(lua, "w") as out:
            offs = ",".join(str(x["offset"]) for x in keys[1:])
            out.write(f"""local offs = {{{offs}}}
local i = 0
request = function()
  i = i % #offs + 1
  return wrk.format("GET", "/c.flv?start=" .. offs[i])
end
""")
        cases = [
            ("seek", 1, f"/c.flv?start={k['offset']}", ()),
            ("seek", 32, f"/c.flv?start={k['offset']}", ()),
            ("seeks", 1, "/c.flv", ("-s", lua)),
            ("seeks", 32, "/c.flv", ("-s", lua)),
            ("range", 1, "/c.flv", ("-H", "Range: bytes=0-65535")),
            ("range", 32, "/c.flv", ("-H", "Range: bytes=0-65535")),
        ]
        print(f"bench/serve: {os.cpu_count()} CPUs, -j {a.j}, {size / 1e6:.1f} MB FLV, seek to the "
              f"keyframe at {k['time']} s (offset {k['offset']}, answer ~{(size - k['offset']) / 1e3:.0f} kB), "
              f"wrk {a.secs} s a run, median of {a.runs} interleaved runs")
        # Warm-up: indexes computed, files cached, connections' code paths taken.
        for _, conns, path, hdr in cases:
            for port in servers.values():
                wrk(f"http://127.0.0.1:{port}{path}", conns, 1, a.j, hdr)
        names = list(servers)
        head = "".join(f" {n + ' req/s':>16} {n + ' p50':>14}" for n in names)
        print(f"{'case':<10} {'conns':>5}{head} {'trawl/nginx':>12}")
        for case, conns, path, hdr in cases:
            res = {n: [] for n in names}
            bad = {n: 0 for n in names}
            for _ in range(a.runs):
                for n in names:
                    rps, lat, b = wrk(f"http://127.0.0.1:{servers[n]}{path}", conns, a.secs, a.j, hdr)
                    res[n].append((rps, lat))
                    bad[n] += b
            med = {n: (statistics.median(r for r, _ in v), statistics.median(l for _, l in v))
                   for n, v in res.items()}
            cells = "".join(f" {med[n][0]:>16,.0f} {med[n][1]:>11.3f} ms" for n in names)
            print(f"{case:<10} {conns:>5}{cells} {med['trawl'][0] / med['nginx'][0]:>11.2f}x")
            for n in names:
                if bad[n]:
                    print(f"  {n}: {bad[n]} answers were not 2xx")
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
