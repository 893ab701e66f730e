#!/bin/sh
# bench/device_cold.sh: on a lent machine (16 cores, a local disk, nothing to build with), the
# warm scaling table of this build against another (base/trawl per row) and the cold table of
# bench/cold.py on the machine's own disk, in one call of about eight minutes.
#
# Here: put this build's binary (trawl), the one to compare with (trawl-base) and xxhsum in a
# folder git ignores, tarred: mkdir -p device-kit/kit2 && cp target/python/trawl device-kit/kit2/
# && cp OLD/trawl device-kit/kit2/trawl-base && cp "$(command -v xxhsum)" device-kit/kit2/ &&
# tar czf device-kit/kit2.tgz -C device-kit kit2
# There (from the repository root, the folder carried along):
#   sh bench/device_cold.sh device-kit/kit2.tgz
set -u
out=${OUT:-/tmp}
mkdir -p /tmp/trawl-kit2
tar xzf "${1:?usage: sh bench/device_cold.sh KIT.tgz}" -C /tmp/trawl-kit2
K=/tmp/trawl-kit2/kit2
export PATH="$K:$PATH"
nproc; id -u; df -h /var/tmp | tail -1; cat /sys/block/*/queue/rotational 2>/dev/null | head -3
timeout -k 5 200 python3 bench/scaling.py --trawl "$K/trawl" --baseline "$K/trawl-base" --runs 3 \
    --no-warmup --js 1,16 --max-j 16 --mib 2048 --small 20000 --tiny 100000 --parts 16 \
    --data /dev/shm/trawl-scaling 2>&1 | tee "$out/scaling.txt"
timeout -k 5 260 python3 bench/cold.py /var/tmp/trawl-cold --trawl "$K/trawl" --runs 3 \
    --scale 0.25 --only small,tiny,big 2>&1 | tee "$out/cold.txt"
