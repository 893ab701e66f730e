#!/usr/bin/env python3
"""Independent reference for trawl's data-reduction figures (the README's counting rules), in
plain Python: blocks identified by SHA-256 of their bytes (not trawl's XXH3), compression by
zlib (gzip framing), python-zstandard and python-lz4.

    reduce.py TREE BLOCK_SIZES UNIT SECTOR THRESHOLD CODECS [CDC_AVG]   -> JSON on stdout

CDC is FastCDC 2020 with normalization level 1 as the paper and the `fastcdc` crate define it,
written here byte at a time: the gear table is the first 8 bytes (big-endian) of MD5 of 64 copies
of each byte value; masks are the published per-size masks; min = avg/4, max = 4*avg.
"""
import gzip
import hashlib
import json
import os
import sys

import lz4.frame
import zstandard


def files(tree):
    for d, _, fs in os.walk(tree):
        for f in fs:
            p = os.path.join(d, f)
            if os.path.isfile(p) and not os.path.islink(p):
                yield p


GEAR = [int.from_bytes(hashlib.md5(bytes([i]) * 64).digest()[:8], "big") for i in range(256)]
MASKS = {10: 0x0000590003530000, 11: 0x0000d90003530000, 12: 0x0000d90103530000,
         13: 0x0000d90303530000, 14: 0x0000d90313530000, 15: 0x0000d90f03530000,
         16: 0x0000d90303537000, 17: 0x0000d90703537000, 18: 0x0000d90707537000}
M64 = (1 << 64) - 1


def cdc_chunks(data, avg):
    """Chunk lengths of one file."""
    import math
    bits = round(math.log2(avg))
    mask_s, mask_l = MASKS[bits + 1], MASKS[bits - 1]
    mn, mx = avg // 4, avg * 4
    out, pos = [], 0
    while pos < len(data):
        rem = len(data) - pos
        if rem <= mn:
            out.append(rem)
            break
        center = avg
        if rem > mx:
            rem = mx
        elif rem < center:
            center = rem
        h, cut = 0, rem
        end1, end2 = 2 * (center // 2), 2 * (rem // 2)
        i = 2 * (mn // 2)
        while i < end2:
            h = ((h << 1) + GEAR[data[pos + i]]) & M64
            if h & (mask_s if i < end1 else mask_l) == 0:
                cut = i
                break
            i += 1
        out.append(cut)
        pos += cut
    return out


def compress(codec, level, data):
    if codec == "lz4":
        # The LZ4 block inside a frame (lz4.block in python-lz4 does not call
        # LZ4_compress_default): minus the 15 bytes of frame header, block size and end mark.
        return len(lz4.frame.compress(data, content_checksum=False, block_checksum=False,
                                      store_size=False)) - 15
    if codec == "zstd":
        c = zstandard.ZstdCompressor(level=level, write_checksum=False, write_content_size=True)
        return len(c.compress(data))
    if codec == "gzip":
        return len(gzip.compress(data, compresslevel=level, mtime=0))
    raise SystemExit(f"codec {codec}")


def main():
    tree, sizes, unit, sector, threshold, codecs = sys.argv[1:7]
    cdc_avg = int(sys.argv[7]) if len(sys.argv) > 7 else None
    sizes = [int(s) for s in sizes.split(",")]
    unit, sector, threshold = int(unit), int(sector), float(threshold)
    # lz4 has one level: the JSON says null.
    codecs = [(c.split(":")[0], int(c.split(":")[1]) if ":" in c else {"lz4": None, "zstd": 1, "gzip": 6}[c.split(":")[0]])
              for c in codecs.split(",") if c]
    paths = sorted(files(tree))
    data = [open(p, "rb").read() for p in paths]
    out = {"dedup": [], "compression": []}
    # Per file, at the smallest block size: bytes of blocks that occur more than once, and the
    # file's share of the saving (a block stored c times saves (c-1)*len, shared by its c copies).
    b = min(sizes)
    counts = {}
    for f in data:
        for off in range(0, len(f), b):
            blk = f[off:off + b]
            if blk.count(0) != len(blk):
                h = hashlib.sha256(blk).digest()
                counts[h] = counts.get(h, 0) + 1
    top = {}
    for p, f in zip(paths, data):
        dup, saved = 0, 0.0
        for off in range(0, len(f), b):
            blk = f[off:off + b]
            if blk.count(0) != len(blk):
                c = counts[hashlib.sha256(blk).digest()]
                if c >= 2:
                    dup += len(blk)
                    saved += len(blk) * (c - 1) / c
        if dup:
            top[os.path.relpath(p, tree)] = [dup, saved]
    out["top_files"] = top
    for b in sorted(set(sizes)):
        seen = set()
        d = dict(block_size=b, logical_bytes=0, blocks=0, unique_blocks=0, unique_bytes=0,
                 zero_blocks=0, zero_bytes=0)
        for f in data:
            for off in range(0, len(f), b):
                blk = f[off:off + b]
                d["logical_bytes"] += len(blk)
                d["blocks"] += 1
                if blk.count(0) == len(blk):
                    d["zero_blocks"] += 1
                    d["zero_bytes"] += len(blk)
                    continue
                h = hashlib.sha256(blk).digest()
                if h not in seen:
                    seen.add(h)
                    d["unique_blocks"] += 1
                    d["unique_bytes"] += len(blk)
        d["ratio"] = d["logical_bytes"] / d["unique_bytes"] if d["unique_bytes"] else None
        if b in sizes:
            out["dedup"].append(d)
    if cdc_avg:
        seen = set()
        d = dict(avg_size=cdc_avg, logical_bytes=0, blocks=0, unique_blocks=0, unique_bytes=0,
                 zero_blocks=0, zero_bytes=0)
        for f in data:
            pos = 0
            for n in cdc_chunks(f, cdc_avg):
                blk = f[pos:pos + n]
                pos += n
                d["logical_bytes"] += n
                d["blocks"] += 1
                if blk.count(0) == n:
                    d["zero_blocks"] += 1
                    d["zero_bytes"] += n
                    continue
                h = hashlib.sha256(blk).digest()
                if h not in seen:
                    seen.add(h)
                    d["unique_blocks"] += 1
                    d["unique_bytes"] += n
        d["ratio"] = d["logical_bytes"] / d["unique_bytes"] if d["unique_bytes"] else None
        out["cdc"] = d
    for codec, level in codecs:
        c = dict(codec=codec, level=level, unit=unit, sector=sector, units=0, logical_bytes=0,
                 compressed_bytes=0, allocated_bytes=0, combined_allocated_bytes=0)
        seen = set()
        for f in data:
            for off in range(0, len(f), unit):
                u = f[off:off + unit]
                n = compress(codec, level, u)
                stored = len(u) if n > len(u) * (1 - threshold) else n
                alloc = -(-stored // sector) * sector
                c["units"] += 1
                c["logical_bytes"] += len(u)
                c["compressed_bytes"] += n
                c["allocated_bytes"] += alloc
                if u.count(0) != len(u):
                    h = hashlib.sha256(u).digest()
                    if h not in seen:
                        seen.add(h)
                        c["combined_allocated_bytes"] += alloc
        out["compression"].append(c)
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
