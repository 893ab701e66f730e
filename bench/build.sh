#!/bin/sh
# bench/build.sh: the README's build (`cargo build --release`) from a fresh clone of this
# commit, timed: wall seconds, CPU seconds (user + sys), the binary's size. cmake, pkg-config
# and pkgconf are stubs that fail, as in CI; crates are taken from cargo's download cache (a
# first download adds its own time). Extra arguments go to cargo, e.g. a profile setting:
#
#   sh bench/build.sh
#   sh bench/build.sh --config 'profile.release.lto="thin"' --config profile.release.codegen-units=16
#
# The clone is made under $TMPDIR (default /var/tmp) and removed after.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/trawl-build-XXXXXX")
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/trawl"
for t in cmake pkg-config pkgconf; do
  printf '#!/bin/sh\nexit 1\n' > "$work/$t"
  chmod +x "$work/$t"
done
cd "$work/trawl"
echo "commit $(git rev-parse --short HEAD), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), cargo build --release $*"
PATH="$work:$PATH" OPENSSL_NO_PKG_CONFIG=1 PKG_CONFIG=false CARGO_TARGET_DIR="$work/target" \
  /usr/bin/time -f "wall %e s, CPU %U s user + %S s sys" cargo build --quiet --release --locked "$@"
echo "binary $(stat -c %s "$work/target/release/trawl") bytes; load after $(cut -d' ' -f1-3 /proc/loadavg)"
