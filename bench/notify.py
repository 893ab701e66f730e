#!/usr/bin/env python3
"""bench/notify: one notice a run at the issue's scale: a collection of 100,000 files with one
corrupt, audited with `--notify-mail` (to a local aiosmtpd) and `--notify-webhook` (to a local
http.server), against the same audit without them.

Each run must deliver exactly one mail and one webhook, naming the corrupt file; the table gives
the medians of RUNS (default 3) interleaved runs of each and the ratio (the notice's cost).

    python3 bench/notify.py [--files N] [--runs N] [--trawl PATH]

PATH: a trawl built with `--features notify` (default target/release/trawl).
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

HOOK = r"""
import http.server, sys, os
out = sys.argv[2]; os.makedirs(out, exist_ok=True)
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers['Content-Length']))
        open(os.path.join(out, f'{len(os.listdir(out))}.json'), 'wb').write(body)
        self.send_response(204); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"""
SMTP = r"""
import sys, time, aiosmtpd.handlers as h, aiosmtpd.controller as c
c.Controller(h.Mailbox(sys.argv[2]), hostname='127.0.0.1', port=int(sys.argv[1])).start()
while True: time.sleep(60)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sink(script, port, out):
    p = subprocess.Popen([sys.executable, "-c", script, str(port), out])
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return p
        except OSError:
            time.sleep(0.01)
    sys.exit(f"sink on port {port} did not start")


def count(d):
    d = os.path.join(d, "new") if os.path.isdir(os.path.join(d, "new")) else d
    return sorted(os.path.join(d, f) for f in os.listdir(d)) if os.path.isdir(d) else []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="trawl-notify-bench-")
    tree = os.path.join(work, "t")
    for i in range(a.files):
        d = os.path.join(tree, f"d{i % 1000:03}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"f{i:06}"), "w") as f:
            f.write(f"file {i}\n")
    cat = os.path.join(work, "cat.db")
    subprocess.run([a.trawl, "audit", tree, "-c", cat, "-q"], check=True)
    k = a.files // 2 + 17
    bad_rel = f"d{k % 1000:03}/f{k:06}"
    bad = os.path.join(tree, bad_rel)
    st = os.stat(bad)
    with open(bad, "r+b") as f:
        f.write(b"F")
    os.utime(bad, ns=(st.st_atime_ns, st.st_mtime_ns))
    sp, hp = free_port(), free_port()
    mail, hooks = os.path.join(work, "mail"), os.path.join(work, "hooks")
    sinks = [sink(SMTP, sp, mail), sink(HOOK, hp, hooks)]
    env = dict(os.environ, TRAWL_SMTP_URL=f"smtp://127.0.0.1:{sp}?tls=none", TRAWL_MAIL_FROM="trawl@example.org")
    notify = ["--notify-mail", "ops@example.org", "--notify-webhook", f"http://127.0.0.1:{hp}/"]
    times = {"plain": [], "notify": []}
    try:
        for r in range(a.runs):
            for kind, extra in (("plain", []), ("notify", notify)):
                t = time.perf_counter()
                p = subprocess.run([a.trawl, "audit", tree, "-c", cat, "-q", *extra], env=env, capture_output=True)
                times[kind].append(time.perf_counter() - t)
                assert p.returncode == 1, p.stderr
                assert b"warning" not in p.stderr, p.stderr
        mails, posts = count(mail), count(hooks)
        assert len(mails) == a.runs and len(posts) == a.runs, (len(mails), len(posts))
        assert all(bad_rel.encode() in open(m, "rb").read() for m in mails)
        for p in posts:
            v = json.load(open(p))
            assert v["counts"]["corrupt"] == 1 and v["counts"]["ok"] == a.files - 1, v["counts"]
    finally:
        for s in sinks:
            s.kill()
        shutil.rmtree(work, ignore_errors=True)
    plain, noted = statistics.median(times["plain"]), statistics.median(times["notify"])
    print(f"{a.files} files, {a.runs} runs each: one mail and one webhook a run, each naming the corrupt file")
    print(f"{'audit':<28}{'median s':>10}")
    print(f"{'without notices':<28}{plain:>10.2f}")
    print(f"{'with mail and webhook':<28}{noted:>10.2f}")
    print(f"ratio (with / without): {noted / plain:.3f}")


if __name__ == "__main__":
    main()
