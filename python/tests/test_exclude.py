"""trawl-dask with --exclude, --exclude-from and --exclude-if-present against `trawl scan` and
`trawl audit` on one machine: the listings on the workers leave out what one machine's walk
leaves out, and the reports are the same, `excluded` included."""

import json
import os
import shutil

from conftest import comparable, make_tree, one_machine, trawl_bin, trawl_dask

import subprocess


def rules(tmp_path, tree):
    """The same rules for both sides: a pattern file (with a negation), patterns, and a
    directory that holds a marker."""
    (tmp_path / "pats").write_text("# scratch\n*3.bin\ne2/\n!d3/e2/\n")
    open(os.path.join(tree, "d2", "e0", ".nobackup"), "w").close()
    return ["--exclude", "d1/", "--exclude-from", "pats", "--exclude", "copy.bin",
            "--exclude-if-present", ".nobackup"]


def test_a_cluster_scan_with_exclusions_equals_one_machine(tree, tmp_path):
    flags = rules(tmp_path, tree)
    want, code = one_machine([tree], *flags, "--manifest", "sha256sum:one.sums", cwd=str(tmp_path))
    assert code == 0
    x = want["excluded"]
    assert x["directories"] >= 4 and x["files"] >= 3 and x["bytes"] > 0, x
    assert x["patterns"] == ["d1/", "*3.bin", "e2/", "!d3/e2/", "copy.bin"]
    r = trawl_dask(
        "scan", "--local", "2", "--shard-files", "4", tree, *flags,
        "--json", "c.json", "--manifest", "sha256sum:c.sums", cwd=str(tmp_path),
    )
    assert r.returncode == 0, r.stderr
    got = json.load(open(tmp_path / "c.json"))
    g, w = comparable(got), comparable(want)
    for k in sorted(set(g) | set(w)):
        assert g.get(k) == w.get(k), f"{k} differs"
    assert open(tmp_path / "c.sums", "rb").read() == open(tmp_path / "one.sums", "rb").read()
    # Nothing excluded was read: the taken-back directory is in, the rest is not.
    names = open(tmp_path / "c.sums", "rb").read()
    assert b"d3/e2/" in names and b"d1/" not in names and b"copy.bin" not in names
    assert b"d2/e0/" not in names and b"3.bin\n" not in names
    assert "excluded:" in r.stdout


def test_a_cluster_audit_with_exclusions_leaves_what_trawl_audit_leaves(tmp_path):
    a, b = make_tree(str(tmp_path / "a")), make_tree(str(tmp_path / "b"))
    for root, run in ((a, "cluster"), (b, "one")):
        if run == "cluster":
            r = trawl_dask("audit", "--local", "2", root, "-c", str(tmp_path / "a.db"), cwd=str(tmp_path))
        else:
            r = subprocess.run([trawl_bin(), "audit", root, "-c", str(tmp_path / "b.db")],
                               cwd=str(tmp_path), capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        # Changes the exclusion covers: a deleted and an edited file in an excluded directory.
        os.remove(os.path.join(root, "d1", "e1", "f001.bin"))
        with open(os.path.join(root, "d1", "e0", "f004.bin"), "ab") as f:
            f.write(b"more")
        shutil.rmtree(os.path.join(root, "d2", "e2"))
    flags = rules(tmp_path, a)
    rules(tmp_path, b)
    r = trawl_dask("audit", "--local", "2", a, "-c", str(tmp_path / "a.db"), *flags,
                   "--json", "a.json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    one = subprocess.run([trawl_bin(), "audit", b, "-c", str(tmp_path / "b.db"), *flags,
                          "--json", "b.json"], cwd=str(tmp_path), capture_output=True, text=True)
    assert one.returncode == 0, one.stderr
    ga, gb = json.load(open(tmp_path / "a.json")), json.load(open(tmp_path / "b.json"))
    assert ga["counts"] == gb["counts"]
    assert ga["counts"]["missing"] == ga["counts"]["modified"] == 0
    xa, xb = ga["excluded"], gb["excluded"]
    for e in xa["listed"] + xb["listed"]:
        e["path"] = os.path.relpath(e["path"], a if e["path"].startswith(a) else b)
    assert xa == xb
    assert xa["registered"] > 3
