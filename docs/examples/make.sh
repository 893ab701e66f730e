#!/usr/bin/env bash
# Remakes the example reports in this directory and their screenshots:
#   scan.html    trawl scan of bench's ~2 GiB mixed tree (bench/gen_corpus.py), every report on
#   catalog.html an audit catalog's history: registration, corruption, deletions, a move, a
#                metadata-only run
# Needs a release build, python3 with playwright, and Debian's chromium (for the screenshots).
#
#     bash docs/examples/make.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
T="$PWD/target/release/trawl"
out=docs/examples
tree=bench/data/mixed
python3 bench/gen_corpus.py mixed "$tree" 2048
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The scan, shown relative to the repository (as a user would type it).
$T scan "$tree" -q --cdc 16k --compress lz4,zstd:3 --json "$work/scan.json" \
  --html "$out/scan.html" --duplicates "$work/dups.txt"

# An audit history on a copy of part of the tree.
mkdir -p "$work/archive"
cp -r "$tree"/* "$work/archive/" 2>/dev/null || true
find "$work/archive" -type f | sort | tail -n +400 | xargs -r rm -f
(cd "$work" && $T audit archive -c catalog.db -q)
# Silent corruption: a byte changed, size and mtime kept.
python3 - "$work/archive" <<'PY'
import os, sys
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(sys.argv[1]) for f in fs)
for p in files[10:13]:
    st = os.stat(p)
    if st.st_size == 0:
        continue
    with open(p, "r+b") as f:
        b = f.read(1); f.seek(0); f.write(bytes([b[0] ^ 0x20]))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
for p in files[20:25]:
    os.remove(p)
os.rename(files[30], files[30] + ".moved")
open(os.path.join(sys.argv[1], "added.txt"), "w").write("a new file\n")
PY
(cd "$work" && $T audit archive -c catalog.db -q) || [ $? -eq 1 ]  # 1: corrupt and missing files, as meant
(cd "$work" && $T audit archive -c catalog.db -q --metadata-only) || [ $? -eq 1 ]
(cd "$work" && $T catalog report -c catalog.db --html catalog.html >/dev/null)
cp "$work/catalog.html" "$out/catalog.html"

python3 - "$out" <<'PY'
import pathlib, sys
from playwright.sync_api import sync_playwright
out = pathlib.Path(sys.argv[1]).resolve()
with sync_playwright() as p:
    b = p.chromium.launch(executable_path="/usr/bin/chromium",
                          args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                "--disable-component-update", "--disable-sync", "--no-first-run"])
    page = b.new_page(viewport={"width": 1100, "height": 900})
    for name in ["scan", "catalog"]:
        page.goto((out / f"{name}.html").as_uri())
        page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    b.close()
PY
ls -la "$out"
