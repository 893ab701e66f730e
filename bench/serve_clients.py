#!/usr/bin/env python3
"""bench/serve_clients: what `trawl serve` holds per slow client, and what a fast one gets.

Two builds side by side (--trawl and --baseline), each serving the same 512 MiB file:
  memory   N clients (default 1,000) each send a GET for the file and never read; the server's
           RSS before, while they wait (once it stops growing), and after they left; per client.
  speed    one client (curl to /dev/null, Connection: close) downloading the whole file, timed;
           the builds interleaved round by round, medians of --runs; curl reading the file
           from disk alone (file://) is the peer the server can at most match.
Past --max-connections N every client gets 503: the run counts the answers past the cap.

    python3 bench/serve_clients.py --trawl PATH [--baseline PATH] [--clients N] [--runs N]
"""

import argparse
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def start(binary, root, extra=()):
    p = subprocess.Popen([binary, "serve", root, "--all", "-q", "--listen", "127.0.0.1:0", *extra],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
    return p, port


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def memory(binary, root, n):
    p, port = start(binary, root, ["--max-connections", str(n + 10)])
    try:
        subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}/big.bin"], check=True)
        time.sleep(0.3)
        base = rss_mib(p.pid)
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
        held, last = 0.0, -1.0
        for _ in range(50):
            time.sleep(0.2)
            held = rss_mib(p.pid)
            if abs(held - last) < 0.5:
                break
            last = held
        for s in socks:
            s.close()
        time.sleep(1.5)
        after = rss_mib(p.pid)
        return base, held, after
    finally:
        p.terminate()
        p.wait()


def past_cap(binary, root, cap=10, extra_clients=300):
    """Clients past the cap: how many got 503, how many were closed with no answer."""
    p, port = start(binary, root, ["--max-connections", str(cap)])
    try:
        held = []
        for _ in range(cap):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            held.append(s)
        time.sleep(0.3)
        import concurrent.futures

        def one(_):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                data = s.recv(64)
                s.close()
                return data.startswith(b"HTTP/1.1 503")
            except OSError:
                return False

        with concurrent.futures.ThreadPoolExecutor(100) as ex:
            got = list(ex.map(one, range(extra_clients)))
        for s in held:
            s.close()
        return sum(got), len(got) - sum(got)
    finally:
        p.terminate()
        p.wait()


def download(port):
    t = time.perf_counter()
    subprocess.run(["curl", "-s", "-o", "/dev/null", "-H", "Connection: close",
                    f"http://127.0.0.1:{port}/big.bin"], check=True)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trawl", required=True)
    ap.add_argument("--baseline")
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4 * a.clients + 1024), hard))
    builds = [("trawl", a.trawl)] + ([("base", a.baseline)] if a.baseline else [])
    with tempfile.TemporaryDirectory(prefix="trawl-serve-bench-", dir="/var/tmp") as root:
        with open(os.path.join(root, "big.bin"), "wb") as f:
            for i in range(512):
                f.write(os.urandom(1 << 20))
        print(f"bench/serve_clients: {os.cpu_count()} CPUs, a 512 MiB file, {a.clients} slow clients")
        print(f"{'build':<6} {'base MiB':>9} {'held MiB':>9} {'KiB/client':>11} {'after MiB':>10}")
        for name, b in builds:
            base, held, after = memory(b, root, a.clients)
            print(f"{name:<6} {base:>9.1f} {held:>9.1f} {(held - base) * 1024 / a.clients:>11.0f} {after:>10.1f}")
        print(f"\nclients past --max-connections 10 (300 at once): answered 503 / closed with nothing")
        for name, b in builds:
            ok, bare = past_cap(b, root)
            print(f"{name:<6} {ok} / {bare}")
        servers = {name: start(b, root) for name, b in builds}
        try:
            times = {name: [] for name in servers}
            times["curl file://"] = []
            for _ in range(a.runs):
                for name, (_, port) in servers.items():
                    times[name].append(download(port))
                t = time.perf_counter()
                subprocess.run(["curl", "-s", "-o", "/dev/null", f"file://{root}/big.bin"], check=True)
                times["curl file://"].append(time.perf_counter() - t)
        finally:
            for p, _ in servers.values():
                p.terminate()
                p.wait()
        print(f"\none fast client, 512 MiB, median of {a.runs} (page cache warm):")
        for name, ts in times.items():
            m = statistics.median(ts)
            print(f"{name:<13} {m:>7.3f} s {512 / m:>8.0f} MiB/s")
        if a.baseline:
            print(f"base/trawl: {statistics.median(times['base']) / statistics.median(times['trawl']):.2f}x")


if __name__ == "__main__":
    sys.exit(main())
