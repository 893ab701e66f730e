#!/usr/bin/env python3
"""bench/ocfl: `trawl ocfl validate` against `ocfl-validate.py` (the ocfl-py package) and `rocfl
validate` (the rocfl crate) on one generated OCFL 1.1 storage root, in one run.

The storage root (generated once under DIR, default /var/tmp/trawl-bench-ocfl): OBJECTS objects
(default 1,000) of three versions each (v1 adds three files, v2 changes one and adds one, v3
adds one and removes one), about SIZE in all (default 2 GiB of random content), sha512 with an
md5 fixity block in every inventory, laid out by the 0003 hash-and-id n-tuple extension (which all three read). Each tool
checks every digest it is given: trawl and ocfl-validate both the sha512 manifest and the md5
fixity block; rocfl checks the manifest's sha512 only (it reads no fixity block), so its figure
is a floor for what it would take to check both.

Warm (the default): one warm-up each, then RUNS rounds (default 3) with the tools interleaved;
the table gives each tool's median wall time, its CPU time and the ratio against trawl (>1:
trawl is faster). Every run must report the root valid.

--cold: the page cache dropped before every command (needs root; DIR on a real disk, never
tmpfs), the same rounds; with each command's bytes read from the device (`read_bytes` of
/proc/PID/io, taken as it exits, its children's included) against the content's size, and
`cat` of every file of the root once as the floor (directories, inodes and inventories are read
from the device too).

--baseline PATH runs another build of trawl beside this one (as "trawl baseline"), to show what
a change does to the figures.

    python3 bench/ocfl.py [--objects N] [--size 2G] [--runs N] [--cold] [--only trawl,rocfl]
        [--trawl PATH] [--baseline PATH] [--rocfl PATH] [--ocfl-validate PATH] [--dir DIR]
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LAYOUT = "0003-hash-and-id-n-tuple-storage-layout"


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(s[:-1]) * mult[s[-1].upper()]) if s[-1].upper() in mult else int(s)


def object_dir(oid):
    """The 0003 hash-and-id n-tuple layout: three 3-character tuples of the id's sha256, then
    the id percent-encoded (all but letters, digits, '-' and '_', in lower-case hex)."""
    h = hashlib.sha256(oid.encode()).hexdigest()
    enc = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else
                  "".join(f"%{b:02x}" for b in c.encode()) for c in oid)
    return os.path.join(h[0:3], h[3:6], h[6:9], enc)


def write_inventory(path, inv):
    text = json.dumps(inv, indent=2, sort_keys=True).encode()
    for d in (path,):
        with open(os.path.join(d, "inventory.json"), "wb") as f:
            f.write(text)
        with open(os.path.join(d, "inventory.json.sha512"), "w") as f:
            f.write(hashlib.sha512(text).hexdigest() + "  inventory.json\n")


def make_object(args):
    """Writes object number `i` under `root`; each file about `unit` bytes."""
    root, i, unit = args
    rnd = random.Random(i)
    oid = f"info:trawl-bench/{i:06d}"
    obj = os.path.join(root, object_dir(oid))
    os.makedirs(obj, exist_ok=True)
    with open(os.path.join(obj, "0=ocfl_object_1.1"), "w") as f:
        f.write("ocfl_object_1.1\n")
    manifest, md5, versions = {}, {}, {}
    state = {}
    plan = [
        [("add", "a.bin"), ("add", "docs/b.txt"), ("add", "c.dat")],
        [("change", "a.bin"), ("add", "docs/d.txt")],
        [("add", "e.bin"), ("remove", "c.dat")],
    ]
    for n, steps in enumerate(plan, 1):
        v = f"v{n}"
        for op, name in steps:
            if op == "remove":
                del state[name]
                continue
            data = os.urandom(max(1, int(unit * rnd.uniform(0.5, 1.5))))
            digest = hashlib.sha512(data).hexdigest()
            cp = f"{v}/content/{name}"
            p = os.path.join(obj, cp)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
            manifest[digest] = [cp]
            md5[hashlib.md5(data).hexdigest()] = [cp]
            state[name] = digest
        st = {}
        for name, d in sorted(state.items()):
            st.setdefault(d, []).append(name)
        versions[v] = {
            "created": f"2026-01-0{n}T00:00:00Z",
            "message": f"version {n}",
            "user": {"name": "bench", "address": "mailto:bench@example.org"},
            "state": st,
        }
        inv = {
            "id": oid,
            "type": "https://ocfl.io/1.1/spec/#inventory",
            "digestAlgorithm": "sha512",
            "head": v,
            "manifest": dict(manifest),
            "versions": json.loads(json.dumps(versions)),
            "fixity": {"md5": dict(md5)},
        }
        vdir = os.path.join(obj, v)
        os.makedirs(vdir, exist_ok=True)
        write_inventory(vdir, inv)
    write_inventory(obj, inv)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(obj) for f in fs
               if "/content" in d)


def generate(root, objects, size):
    done = os.path.join(root, ".bench-done")
    want = f"{objects} {size} {LAYOUT}\n"
    if os.path.exists(done) and open(done).read() == want:
        return int(open(os.path.join(root, ".bench-bytes")).read())
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with open(os.path.join(root, "0=ocfl_1.1"), "w") as f:
        f.write("ocfl_1.1\n")
    with open(os.path.join(root, "ocfl_layout.json"), "w") as f:
        json.dump({"extension": LAYOUT, "description": "hash and id n-tuple"}, f)
    ext = os.path.join(root, "extensions", LAYOUT)
    os.makedirs(ext)
    with open(os.path.join(ext, "config.json"), "w") as f:
        json.dump({"extensionName": LAYOUT, "digestAlgorithm": "sha256", "tupleSize": 3,
                   "numberOfTuples": 3}, f)
    unit = size // (objects * 6)  # six content files written per object
    t0 = time.time()
    with ProcessPoolExecutor(os.cpu_count()) as ex:
        content = sum(ex.map(make_object, [(root, i, unit) for i in range(objects)], chunksize=16))
    print(f"generated {objects} objects, {content / 2**30:.2f} GiB of content in "
          f"{time.time() - t0:.0f} s under {root}", file=sys.stderr)
    # The bench's own marks: files at the top of a storage root are allowed (no verdict changes).
    with open(os.path.join(root, ".bench-bytes"), "w") as f:
        f.write(str(content))
    with open(done, "w") as f:
        f.write(want)
    return content


def script(name):
    """A Python console script's own file (pyenv puts a shell shim first on PATH)."""
    import sysconfig
    p = os.path.join(sysconfig.get_path("scripts"), name)
    return p if os.path.exists(p) else shutil.which(name)


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def run_once(cmd):
    """Wall and CPU seconds, and the bytes it read from the device, of one run."""
    out_f, err_f = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    dt = time.perf_counter() - t0
    io = {}
    try:
        for line in open(f"/proc/{p.pid}/io"):
            k, v = line.split(":")
            io[k] = int(v)
    except OSError:
        pass
    _, status, ru = os.wait4(p.pid, 0)
    out_f.seek(0)
    err_f.seek(0)
    out = out_f.read().decode(errors="replace")
    err = err_f.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"not valid, or failed ({code}): {' '.join(cmd)}\n{out[-2000:]}\n{err[-2000:]}")
    return dt, ru.ru_utime + ru.ru_stime, io.get("read_bytes", 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--size", default="2G")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cold", action="store_true")
    ap.add_argument("--only")
    ap.add_argument("--dir", default="/var/tmp/trawl-bench-ocfl")
    ap.add_argument("--trawl", default=os.path.join(ROOT, "target", "release", "trawl"))
    ap.add_argument("--baseline")
    ap.add_argument("--rocfl", default=shutil.which("rocfl"))
    ap.add_argument("--ocfl-validate", default=script("ocfl-validate.py"))
    a = ap.parse_args()
    if a.cold and os.geteuid() != 0:
        sys.exit("--cold drops the page cache (echo 3 > /proc/sys/vm/drop_caches): run as root")
    content = generate(a.dir, a.objects, parse_size(a.size))
    tools = {"trawl": [a.trawl, "ocfl", "validate", "-q", a.dir]}
    if a.baseline:
        tools["trawl baseline"] = [a.baseline, "ocfl", "validate", "-q", a.dir]
    if a.ocfl_validate:
        tools["ocfl-validate"] = [sys.executable, a.ocfl_validate, a.dir]
    else:
        print("ocfl-validate.py not found (pip install ocfl-py): left out", file=sys.stderr)
    if a.rocfl:
        tools["rocfl"] = [a.rocfl, "-r", a.dir, "validate", "-l", "error"]
    else:
        print("rocfl not found (cargo install rocfl): left out", file=sys.stderr)
    if a.cold:
        # The floor for "every file read once": every file of the root (content, inventories,
        # sidecars) read by cat, the directories and inodes on the way included.
        tools["cat every file"] = ["sh", "-c", 'find "$0" -type f -print0 | xargs -0 cat > /dev/null',
                                   a.dir]
    if a.only:
        keep = a.only.split(",") + (["trawl baseline"] if a.baseline else [])
        tools = {k: v for k, v in tools.items() if k in keep}
    times = {k: [] for k in tools}
    if not a.cold:
        for cmd in tools.values():
            run_once(cmd)
    for _ in range(a.runs):
        for name, cmd in tools.items():
            if a.cold:
                drop_caches()
            times[name].append(run_once(cmd))
    mode = "cold (page cache dropped before each command)" if a.cold else "warm"
    print(f"\nOCFL storage root: {a.objects} objects x 3 versions, "
          f"{content / 2**30:.2f} GiB of content, sha512 + md5 fixity; {mode}; "
          f"{os.cpu_count()} CPUs; medians of {a.runs}\n")
    print("| tool | wall s | CPU s | GiB/s | trawl faster by | read from device / content |")
    print("|---|---:|---:|---:|---:|---:|")
    base = statistics.median(t[0] for t in times["trawl"]) if "trawl" in times else None
    for name, ts in times.items():
        wall = statistics.median(t[0] for t in ts)
        cpu = statistics.median(t[1] for t in ts)
        rb = statistics.median(t[2] for t in ts)
        ratio = f"{wall / base:.2f}x" if base else "-"
        dev = f"{rb / content:.3f}" if a.cold else "-"
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {content / 2**30 / wall:.2f} | {ratio} | {dev} |")


if __name__ == "__main__":
    main()
