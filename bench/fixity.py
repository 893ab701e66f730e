#!/usr/bin/env python3
"""bench/fixity: trawl against its peers on the same data, in one run, page cache warm.

Data (generated once under bench/data by gen_corpus.py): (a) one 2 GiB file; (b) 20,000 files of
1-64 KiB in nested directories. Each command runs RUNS times (default 5) after one warm-up; the
table gives the median wall time, throughput, peak RSS (from wait4) and trawl's speed ratio
against each peer (>1 means trawl is faster).

    python3 bench/fixity.py [--runs N] [--only a|b] [--trawl PATH] [--baseline PATH]

With --baseline, every case also runs that other build of trawl (e.g. one built from an older
commit), interleaved like the peers; its row's ratio is the baseline's time over this build's.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_once(cmd, shell=False):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"command failed ({code}): {cmd}\n{err}")
    return dt, ru.ru_maxrss * 1024


def openssl_rate(alg):
    out = subprocess.run(["openssl", "speed", "-bytes", "1048576", "-seconds", "3", alg],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith(alg):
            return float(line.split()[-1].rstrip("k")) * 1000  # bytes/s
    return None


def tree_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs if f != ".corpus-done")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", choices=["a", "b"])
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--big-mib", type=int, default=2048)
    ap.add_argument("--baseline", help="another trawl binary, run beside this one in every case")
    a = ap.parse_args()
    if not os.path.exists(a.trawl):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    data = os.path.join(HERE, "data")
    gen = os.path.join(HERE, "gen_corpus.py")
    subprocess.run([sys.executable, gen, "big", os.path.join(data, "big"), str(a.big_mib)], check=True)
    subprocess.run([sys.executable, gen, "small", os.path.join(data, "small"), "20000"], check=True)
    big = os.path.join(data, "big", "big.bin")
    small = os.path.join(data, "small")
    have = {t: shutil.which(t) for t in ["rhash", "b3sum", "hashdeep", "xxhsum", "sha256sum", "openssl"]}
    T = a.trawl
    print(f"machine: {os.cpu_count()} CPUs, {open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}")
    print(f"trawl: {T}: {subprocess.run([T, '--version'], capture_output=True, text=True).stdout.strip()}; runs: {a.runs} (median)")
    if a.baseline:
        print(f"baseline: {a.baseline}")
    rows = []

    def case(label, data_path, trawl_cmd, peers):
        # Runs interleaved (each round runs trawl and then every peer once), so that the VM's
        # drift during a case falls on all of them alike.
        n = tree_bytes(data_path)
        if a.baseline:
            peers = peers + [("trawl --baseline", [a.baseline if x == T else x for x in trawl_cmd], False)]
        cmds = [(trawl_cmd, False)] + [(cmd, shell) for _, cmd, shell in peers if cmd is not None]
        for cmd, shell in cmds:
            run_once(cmd, shell)  # warm-up: page cache and binaries
        times = [[] for _ in cmds]
        rss = [0 for _ in cmds]
        for _ in range(a.runs):
            for i, (cmd, shell) in enumerate(cmds):
                dt, r = run_once(cmd, shell)
                times[i].append(dt)
                rss[i] = max(rss[i], r)
        t = statistics.median(times[0])
        rows.append((label, "trawl", t, n / t / 1e6, rss[0], None))
        i = 1
        for name, cmd, shell in peers:
            if cmd is None:
                rows.append((label, name, None, None, None, None))
                continue
            pt = statistics.median(times[i])
            rows.append((label, name, pt, n / pt / 1e6, rss[i], pt / t))
            i += 1

    quiet = ["--no-reduce", "-q"]
    if a.only in (None, "a"):
        rate = openssl_rate("sha256") if have["openssl"] else None
        case("(a) sha256", big, [T, "scan", big, *quiet], [
            ("rhash --sha256", ["rhash", "--sha256", big] if have["rhash"] else None, False),
        ])
        if rate:
            t = next(r[2] for r in rows if r[:2] == ("(a) sha256", "trawl"))
            rows.append(("(a) sha256", "openssl speed 1 core", tree_bytes(big) / rate, rate / 1e6, None, (tree_bytes(big) / rate) / t))
        case("(a) blake3", big, [T, "scan", "-d", "blake3", big, *quiet], [
            ("b3sum", ["b3sum", big] if have["b3sum"] else None, False),
        ])
        # The default (--io auto) maps a file this big; plain reads beside it.
        case("(a) blake3 --io read", big, [T, "scan", "-d", "blake3", "--io", "read", big, *quiet], [])
        case("(a) sha256 --io read", big, [T, "scan", "--io", "read", big, *quiet], [])
        case("(a) md5+sha1+sha256+sha512", big, [T, "scan", "-d", "md5,sha1,sha256,sha512", big, *quiet], [
            ("rhash 4 algos", ["rhash", "--md5", "--sha1", "--sha256", "--sha512", big] if have["rhash"] else None, False),
            ("hashdeep md5,sha1,sha256", ["hashdeep", "-c", "md5,sha1,sha256", big] if have["hashdeep"] else None, False),
        ])
    if a.only in (None, "b"):
        q = f"'{small}'"
        case("(b) sha256", small, [T, "scan", small, *quiet], [
            ("xargs -P2 sha256sum", f"find {q} -type f -print0 | xargs -0 -P2 sha256sum", True),
            ("rhash --sha256 -r", ["rhash", "--sha256", "-r", small] if have["rhash"] else None, False),
        ])
        case("(b) sha256 --io mmap", small, [T, "scan", "--io", "mmap", small, *quiet], [])
        case("(b) blake3", small, [T, "scan", "-d", "blake3", small, *quiet], [
            ("b3sum", f"find {q} -type f -print0 | xargs -0 b3sum" if have["b3sum"] else None, True),
        ])
        case("(b) xxh3", small, [T, "scan", "-d", "xxh3", small, *quiet], [
            ("xxhsum -H3", f"find {q} -type f -print0 | xargs -0 xxhsum -H3" if have["xxhsum"] else None, True),
        ])
        # The checksums S3 stores: no peer computes CRC-64/NVME, rhash does CRC32 (zlib's).
        case("(b) crc64nvme", small, [T, "scan", "-d", "crc64nvme", small, *quiet], [])
        case("(b) crc32", small, [T, "scan", "-d", "crc32", small, *quiet], [
            ("rhash --crc32 -r", ["rhash", "--crc32", "-r", small] if have["rhash"] else None, False),
        ])
        # The README's fixity recipe as written (a manifest, no flag about reduction): a scan
        # at fixity cost; beside it, the same scan measuring data reduction too (--reduce).
        sums = os.path.join(tempfile.gettempdir(), "trawl-bench-SUMS")
        case("(b) -m sha256sum:SUMS", small, [T, "scan", small, "-q", "-m", f"sha256sum:{sums}"], [
            ("xargs -P2 sha256sum > SUMS", f"find {q} -type f -print0 | xargs -0 -P2 sha256sum > {sums}.peer", True),
            ("trawl ... --reduce", [T, "scan", small, "-q", "-m", f"sha256sum:{sums}.r", "--reduce"], False),
        ])
        case("(b) md5+sha1+sha256+sha512", small, [T, "scan", "-d", "md5,sha1,sha256,sha512", small, *quiet], [
            ("rhash 4 algos", ["rhash", "--md5", "--sha1", "--sha256", "--sha512", "-r", small] if have["rhash"] else None, False),
            ("hashdeep md5,sha1,sha256", ["hashdeep", "-c", "md5,sha1,sha256", "-r", small] if have["hashdeep"] else None, False),
        ])

    print()
    print(f"| {'case':<28} | {'tool':<26} | {'median s':>9} | {'MB/s':>7} | {'peak RSS':>9} | {'trawl speedup':>13} |")
    print(f"|{'-'*30}|{'-'*28}|{'-'*11}|{'-'*9}|{'-'*11}|{'-'*15}|")
    for label, tool, t, mbs, rss, ratio in rows:
        if t is None:
            print(f"| {label:<28} | {tool:<26} | {'(not installed)':>9} | | | |")
            continue
        rss_s = f"{rss / 2**20:.0f} MiB" if rss else "-"
        ratio_s = f"{ratio:.2f}x" if ratio else "-"
        print(f"| {label:<28} | {tool:<26} | {t:9.3f} | {mbs:7.0f} | {rss_s:>9} | {ratio_s:>13} |")


if __name__ == "__main__":
    main()
