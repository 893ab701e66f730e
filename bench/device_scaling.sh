#!/bin/sh
# bench/device_scaling.sh: the 16-core scaling table in one call of a few minutes, on a machine
# with 16 cores and nothing to build with (docs/performance.md, "Scaling with threads").
#
# Here: build both binaries (this commit and the one to compare with) and put them in a folder
# git ignores, e.g.
#   cargo build --profile bench-fast --features openssl,s3 && mkdir -p target-old/device &&
#   cp target/bench-fast/trawl target-old/device/trawl &&
#   cp OLD_BUILD/trawl target-old/device/trawl-base
# There (from the repository root, the folder carried along):
#   sh bench/device_scaling.sh target-old/device
# The data (4 GiB mixed, 40,000 small and 200,000 tiny files) is made on /dev/shm by 16
# generator processes; the table goes to stdout and to $OUT/scaling.txt.
set -eu
dir=${1:?usage: sh bench/device_scaling.sh DIR-WITH-trawl-AND-trawl-base}
out=${OUT:-/tmp}
base=""
if [ -x "$dir/trawl-base" ]; then
    base="--baseline $dir/trawl-base"
fi
nproc
# shellcheck disable=SC2086
python3 bench/scaling.py --trawl "$dir/trawl" $base --runs 3 --no-warmup --js 1,16 \
    --max-j 16 --mib 4096 --small 40000 --tiny 200000 --parts 16 --rss \
    --data /dev/shm/trawl-scaling 2>&1 | tee "$out/scaling.txt"
