"""A cluster's report is one machine's to the byte: a map's whole output is a function of its
files (whatever the threads), shares of the saving are summed exactly, and a hard-linked file
is counted under the name one machine counts it under, whatever the shards."""

import json
import os
import random

from conftest import comparable, one_machine, trawl_dask

from trawl import _native


def _files_with_halves(root, n=150, seed=11):
    """Files without an extension (one type row) that share odd-length tails two and three
    times over: shares of the saving of x.5 and x.333.. bytes, which a sum of floats rounds one
    way or the other by the order it adds them in. With hard links whose names sort before
    and after their first, in directories shards cut apart."""
    rnd = random.Random(seed)
    tails = [rnd.randbytes(4096 * k + 4095) for k in range(1, 6)]
    for i in range(n):
        d = os.path.join(root, f"d{i % 7}")
        os.makedirs(d, exist_ok=True)
        # Large files among small ones: reads finish out of the order they start in.
        big = 1_500_000 if i % 10 == 0 else 0
        data = rnd.randbytes(1000 + big + (i * 7919) % 30_000) + tails[i % len(tails)][: 4096 + (i * 997) % 8191]
        with open(os.path.join(d, f"f{i:03}"), "wb") as f:
            f.write(data)
    os.link(os.path.join(root, "d3", "f003"), os.path.join(root, "a-first-name"))
    os.link(os.path.join(root, "d0", "f000"), os.path.join(root, "d6", "zz-later-name"))
    return root


def test_a_maps_whole_output_is_the_same_in_every_call(tmp_path):
    root = _files_with_halves(str(tmp_path / "t"))
    files = sorted(
        os.fsencode(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
    )
    for flags in ([b"-j2"], [b"-j2", b"--io-depth", b"8"], [b"-j1"]):
        plan = _native.Plan([os.fsencode(root), b"--cdc", b"16k", b"--top-files", b"5",
                             b"--json", os.fsencode(str(tmp_path / "r.json")), *flags])
        outputs = set()
        for _ in range(4):
            report, records, totals, parts = plan.map(list(files), 64)
            outputs.add((records, totals, tuple(parts)))
        assert len(outputs) == 1, f"{len(outputs)} distinct outputs in 4 calls at {flags}"


def test_every_field_equals_one_machines_at_any_shard_layout(tmp_path):
    root = _files_with_halves(str(tmp_path / "t"))
    flags = ["-d", "sha256", "--cdc", "16k", "--top-files", "10", "--depth", "2"]
    want, code = one_machine([root], *flags, cwd=str(tmp_path))
    assert code == 0
    for layout in (["--shard-files", "7"], ["--shard-files", "23", "--partitions", "5"], []):
        out = str(tmp_path / f"c{len(layout)}.json")
        p = trawl_dask("scan", "--local", "2", *layout, root, *flags, "--json", out, "-q", cwd=str(tmp_path))
        assert p.returncode == 0, p.stderr
        with open(out) as f:
            got = json.load(f)
        assert comparable(got) == comparable(want), layout
    # The hard links are counted under their first names in byte order, here as there.
    rows = {r["path"]: r["files"] for r in want["breakdown"]["directories"]}
    assert rows.get(f"{root}/") == 1, rows  # a-first-name, not d3/f003
    assert (rows.get(f"{root}/d3/"), rows.get(f"{root}/d6/"), rows.get(f"{root}/d0/")) == (20, 21, 22), rows
