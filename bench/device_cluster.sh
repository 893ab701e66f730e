#!/bin/sh
# bench/device_cluster.sh: the 16-core machine's cluster figures and scaling table in one call
# of about eight minutes, on a machine with 16 cores, Python 3 and nothing to build with
# (docs/performance.md, "16-core machine").
#
# Here: build the binary and the wheel with one profile, and put them, with Dask installed for
# the other machine's Python, in a folder git ignores, e.g.
#   cargo build --profile python --bin trawl --features openssl,s3 &&
#   maturin build --profile python -m python/Cargo.toml -o target/wheels-py &&
#   mkdir -p device-kit/kit && cp target/python/trawl device-kit/kit/ &&
#   pip install --target device-kit/kit/py --python-version 3.12 --only-binary=:all: \
#       --platform manylinux2014_x86_64 "dask[distributed]==2025.11.0" &&
#   pip install --target device-kit/kit/py --no-deps target/wheels-py/trawl-*.whl &&
#   tar czf device-kit/kit.tgz -C device-kit kit
# There (from the repository root, the folder carried along):
#   sh bench/device_cluster.sh device-kit/kit.tgz
# The data (mixed trees of 2 and 8 GiB, 20,000 small and 100,000 tiny files) is made on /dev/shm
# by 16 generator processes. Each section's table goes to stdout and to $OUT as it ends; a section
# that runs past its time is cut and said so, and the next one runs.
set -u
kit=${1:?usage: sh bench/device_cluster.sh KIT.tgz}
out=${OUT:-/tmp}
mkdir -p /tmp/trawl-kit
tar xzf "$kit" -C /tmp/trawl-kit
K=/tmp/trawl-kit/kit
export PYTHONPATH="$K/py" PATH="$K/py/bin:$K:$PATH"
# The kit is installed here for another Python: compiled there once, before anything is timed.
python3 -m compileall -q -j 16 "$K/py" >/dev/null 2>&1
nproc; python3 --version; "$K/trawl" --version
python3 -c 'import trawl, distributed; print("dask", distributed.__version__)' || exit 1
data=/dev/shm/trawl-scaling
python3 -c "
import sys; sys.path.insert(0, 'bench'); import scaling
print(scaling.generate('$data', 'mixed', 2048, 16, 100))" || exit 1

section() {  # NAME SECONDS COMMAND...
    name=$1 secs=$2; shift 2
    echo "== $name (at most $secs s)" | tee -a "$out/device.txt"
    start=$(date +%s)
    timeout -k 5 "$secs" "$@" 2>&1 | tee "$out/$name.txt" | tee -a "$out/device.txt"
    echo "== $name: $(( $(date +%s) - start )) s" | tee -a "$out/device.txt"
}
# The cluster on a running scheduler: 4 workers x 4 threads and 8 x 2 against trawl scan -j16,
# on mixed trees of 2 and 8 GiB (fixed and per-GiB costs fitted through them).
section running 230 python3 bench/cluster.py --trawl "$K/trawl" --sections running \
    --shapes 4x4,8x2 --sizes 2,8 --gen-parts 16 --data-dir /dev/shm --runs 3
# trawl-dask --local 16 (its start included, and its phases: the reduce) against trawl scan.
section local16 100 python3 bench/cluster.py --trawl "$K/trawl" --mixed "$data/mixed" \
    --sections scan --local 16 --runs 3
# One machine: -j1 and -j16, with xargs -P16 sha256sum and xxhsum where the machine has it.
section scaling 160 python3 bench/scaling.py --trawl "$K/trawl" --runs 3 --no-warmup --js 1,16 \
    --max-j 16 --mib 2048 --small 20000 --tiny 100000 --parts 16 --data "$data"
