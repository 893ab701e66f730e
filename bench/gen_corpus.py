#!/usr/bin/env python3
"""Corpus generator for trawl's benchmarks and tests (in the spirit of fclones gen-test-files).

  gen_corpus.py big DIR SIZE_MIB          one file DIR/big.bin of SIZE_MIB MiB of random bytes
  gen_corpus.py small DIR COUNT [SEED]    COUNT files of 1-64 KiB in nested directories
  gen_corpus.py tiny DIR COUNT [SEED]     COUNT files of 0-1 KiB, 500 to a directory
  gen_corpus.py mixed DIR MIB [SEED]      text, binaries, random, duplicates aligned and shifted, zeros
  gen_corpus.py awkward DIR               names with spaces, newlines, backslashes, invalid UTF-8

Deterministic for a given seed; never overwrites an existing complete corpus (a marker file
records what was made).
"""
import os
import random
import sys


def marker_ok(d, tag):
    m = os.path.join(d, ".corpus-done")
    return os.path.exists(m) and open(m).read() == tag


def mark(d, tag):
    with open(os.path.join(d, ".corpus-done"), "w") as f:
        f.write(tag)


def big(d, mib):
    tag = f"big {mib}"
    os.makedirs(d, exist_ok=True)
    if marker_ok(d, tag):
        return
    rnd = random.Random(1)
    with open(os.path.join(d, "big.bin"), "wb") as f:
        for _ in range(mib):
            f.write(rnd.randbytes(1 << 20))
    mark(d, tag)


def small(d, count, seed=2):
    tag = f"small {count} {seed}"
    os.makedirs(d, exist_ok=True)
    if marker_ok(d, tag):
        return
    rnd = random.Random(seed)
    for i in range(count):
        sub = os.path.join(d, f"d{i % 40:02d}", f"e{(i // 40) % 25:02d}")
        os.makedirs(sub, exist_ok=True)
        size = rnd.randint(1024, 64 * 1024)
        with open(os.path.join(sub, f"f{i:06d}.dat"), "wb") as f:
            f.write(rnd.randbytes(size))
    mark(d, tag)


def tiny(d, count, seed=3):
    tag = f"tiny {count} {seed}"
    os.makedirs(d, exist_ok=True)
    if marker_ok(d, tag):
        return
    rnd = random.Random(seed)
    for i in range(count):
        sub = os.path.join(d, f"d{i // 500:04d}")
        if i % 500 == 0:
            os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i:07d}"), "wb") as f:
            f.write(rnd.randbytes(rnd.randint(0, 1024)))
    mark(d, tag)


def mixed(d, mib, seed=4):
    tag = f"mixed {mib} {seed}"
    os.makedirs(d, exist_ok=True)
    if marker_ok(d, tag):
        return
    rnd = random.Random(seed)
    words = [rnd.randbytes(rnd.randint(2, 9)).hex()[:rnd.randint(2, 12)] for _ in range(5000)]
    def text(n):
        out = []
        size = 0
        while size < n:
            line = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14))) + "\n"
            out.append(line)
            size += len(line)
        return "".join(out).encode()[:n]
    target = mib << 20
    made, i, randoms = 0, 0, []
    while made < target:
        kind = rnd.random()
        n = rnd.randint(64 << 10, 16 << 20)
        if kind < 0.3:
            data = text(n)
        elif kind < 0.55:
            data = rnd.randbytes(n)
            randoms.append(data)
        elif kind < 0.7 and randoms:
            data = rnd.choice(randoms)  # an exact duplicate
        elif kind < 0.8 and randoms:
            data = rnd.randbytes(rnd.randint(1, 4000)) + rnd.choice(randoms)  # shifted
        elif kind < 0.9:
            data = bytes(n // 2) + rnd.randbytes(n - n // 2)  # half zeros
        else:
            # binary-like: small-alphabet structured records
            rec = rnd.randbytes(64)
            data = b"".join(rec[:32] + i.to_bytes(8, "little") + rec[40:] for i in range(n // 64))
        sub = os.path.join(d, f"d{i % 16:02d}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"f{i:05d}"), "wb") as f:
            f.write(data)
        made += len(data)
        i += 1
    mark(d, tag)


def awkward(d):
    os.makedirs(d, exist_ok=True)
    names = [b"plain.txt", b"with space.txt", b"new\nline.txt", b"back\\slash.txt", b"cr\rname",
             b"bad\xffutf8.bin", b"caf\xc3\xa9.txt", b"sub dir/inner\nfile", b"empty"]
    for n in names:
        p = os.path.join(os.fsencode(d), n)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"" if n == b"empty" else b"content of " + n)


if __name__ == "__main__":
    kind, d = sys.argv[1], sys.argv[2]
    if kind == "big":
        big(d, int(sys.argv[3]))
    elif kind == "small":
        small(d, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 2)
    elif kind == "tiny":
        tiny(d, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 3)
    elif kind == "mixed":
        mixed(d, int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else 4)
    elif kind == "awkward":
        awkward(d)
    else:
        sys.exit(__doc__)
