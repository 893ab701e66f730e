#!/bin/sh
# bench/device_60.sh: issue 60's figures on a lent 16-core machine in one call of about five
# minutes (docs/performance.md, "16-core machine"): where the CPU goes at -j16, the scaling
# table against the build before (-j1 and -j16, peers at -P16), one 4 GiB file against b3sum,
# and the cold table on the machine's own disk.
#
# Here: build this commit and the one to compare with, and put both binaries with xxhsum and
# b3sum in a folder git ignores (e.g. `echo /device-kit >> .git/info/exclude`), tarred:
#   cargo build --profile bench-fast && mkdir -p device-kit/kit60 &&
#   cp target/bench-fast/trawl device-kit/kit60/ && cp OLD/trawl device-kit/kit60/trawl-base &&
#   cp "$(command -v xxhsum)" "$(command -v b3sum)" device-kit/kit60/ &&
#   tar czf device-kit/kit60.tgz -C device-kit kit60
# There (from the repository root, the folder carried along; run as root for the cold table):
#   sh bench/device_60.sh device-kit/kit60.tgz
# Each section's table goes to stdout and to $OUT as it ends; a section that runs past its time
# is cut (said by its exit code 124) and the next one runs.
set -u
out=${OUT:-/tmp}
mkdir -p /tmp/trawl-kit60
tar xzf "${1:?usage: sh bench/device_60.sh KIT.tgz}" -C /tmp/trawl-kit60
K=/tmp/trawl-kit60/kit60
export PATH="$K:$PATH"
nproc; id -u; df -h /var/tmp | tail -1; "$K/trawl" --version
section() {
    name=$1; limit=$2; shift 2
    echo "== $name"
    timeout -k 5 "$limit" "$@" > "$out/$name.txt" 2>&1
    echo "(exit $?)" >> "$out/$name.txt"
    cat "$out/$name.txt"
}
section stages 60 python3 bench/stages.py --trawl "$K/trawl" --plain --runs 1 --scale 1 \
    --j 16 --parts 16 --data /dev/shm/trawl-stages
section scaling 150 python3 bench/scaling.py --trawl "$K/trawl" --baseline "$K/trawl-base" \
    --runs 3 --no-warmup --js 1,16 --max-j 16 --mib 2048 --small 20000 --tiny 100000 \
    --parts 16 --data /dev/shm/trawl-scaling
rm -rf /dev/shm/trawl-stages /dev/shm/trawl-scaling
section bigfile 60 python3 bench/bigfile.py --trawl "$K/trawl" --baseline "$K/trawl-base" \
    --mib 4096 --runs 3 --j 16 --data /dev/shm/trawl-bigfile
rm -rf /dev/shm/trawl-bigfile
section cold 120 python3 bench/cold.py /var/tmp/trawl-cold --trawl "$K/trawl" --runs 3 \
    --scale 0.25 --only big,mixed
