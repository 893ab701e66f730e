#!/usr/bin/env python3
"""bench/scale: the fingerprint index at tens of millions of distinct blocks, in RAM and spilled.

The figure: bytes of RAM per unique block (peak RSS over unique blocks) at >= 50 million
unique 4 KiB blocks, in RAM and with --memory at a quarter of what the index needs; the spilled
run's throughput against the in-RAM one; identical reduction JSON.

50 million distinct 4 KiB blocks are 200 GB of data. To hold them on a small disk, DIR should be
on a filesystem that compresses (btrfs with compress-force=zstd): every block is distinct (its
first 16 bytes are its file and block number) and the rest is zeros, so the data compresses about
250:1 while every block still has a fingerprint of its own. (Compression per unit is left out of
the timed runs, as it would only measure zstd on zeros; the index is what is measured.)

    truncate -s 40G /tmp/btrfs.img && mkfs.btrfs /tmp/btrfs.img
    mkdir -p /mnt/b && mount -o loop,compress-force=zstd:1 /tmp/btrfs.img /mnt/b
    python3 bench/scale.py /mnt/b/scale [--blocks 50000000] [--trawl PATH]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BLOCK = 4096
FILE_BLOCKS = 1 << 20  # 4 GiB files
CHUNK_BLOCKS = 1024  # 4 MiB writes


def generate(d, blocks):
    done = d.rstrip("/") + ".done"  # beside DIR, not in it: it would be scanned
    if os.path.exists(done) and open(done).read() == str(blocks):
        return
    os.makedirs(d, exist_ok=True)
    buf = bytearray(CHUNK_BLOCKS * BLOCK)
    t0 = time.perf_counter()
    n, f = 0, 0
    while n < blocks:
        count = min(FILE_BLOCKS, blocks - n)
        with open(os.path.join(d, f"f{f:04}"), "wb") as out:
            for c in range(0, count, CHUNK_BLOCKS):
                k = min(CHUNK_BLOCKS, count - c)
                for i in range(k):
                    struct.pack_into("<QQ", buf, i * BLOCK, f + 1, c + i + 1)
                out.write(memoryview(buf)[: k * BLOCK])
        n += count
        f += 1
        print(f"  wrote {n:,} blocks ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    open(done, "w").write(str(blocks))


def run(cmd):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    return time.perf_counter() - t0, ru.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--blocks", type=int, default=50_000_000)
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    a = ap.parse_args()
    generate(a.dir, a.blocks)
    tmp = tempfile.mkdtemp(prefix="trawl-bench-scale-")
    base = [a.trawl, "scan", a.dir, "-q", "-d", "xxh3", "--dedup", "4k", "--compress", "none",
            "--no-media", "--top-files", "0"]
    j_ram, j_spill = os.path.join(tmp, "ram.json"), os.path.join(tmp, "spill.json")
    subprocess.run(["cat"] + [os.path.join(a.dir, f) for f in sorted(os.listdir(a.dir))
                              if f.startswith("f")], stdout=subprocess.DEVNULL)
    t_ram, rss_ram = run(base + ["--json", j_ram])
    rep = json.load(open(j_ram))["reduction"]
    dedup = rep["dedup"][0]
    unique = dedup["unique_blocks"]
    quarter = max(rss_ram // 4, 16 << 20)
    t_sp, rss_sp = run(base + ["--json", j_spill, "--memory", str(quarter), "--temp-dir", tmp])
    same = (json.load(open(j_ram))["reduction"] == json.load(open(j_spill))["reduction"])
    logical = a.blocks * BLOCK
    print(f"{a.blocks:,} blocks of 4 KiB ({logical / 1e9:.0f} GB logical), unique: {unique:,}")
    print(f"{'run':<28} {'s':>8} {'GB/s':>6} {'peak RSS':>10} {'RSS / unique block':>19}")
    for label, t, rss in [("in RAM", t_ram, rss_ram),
                          (f"--memory {quarter >> 20}M (a quarter)", t_sp, rss_sp)]:
        print(f"{label:<28} {t:>8.1f} {logical / t / 1e9:>6.2f} {rss / 2**20:>8.0f}Mi"
              f" {rss / unique:>18.2f}B")
    print(f"spilled/in-RAM throughput {t_ram / t_sp:.2f}x; reduction JSON identical: {same}")
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
