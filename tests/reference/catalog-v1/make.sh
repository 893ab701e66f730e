set -e
T=${T:?the trawl that writes schema 1}
F=/tmp/trawl-v1-fixture
rm -rf $F; mkdir -p $F/data/a $F/data/a.b $F/data/deep/er/still "$F/data/sp ace"
cd $F/data
printf 'alpha\n' > a/z; printf 'bravo\n' > a.b/c; printf 'charlie\n' > top.txt
printf 'delta\n' > deep/er/still/d.txt; printf 'echo\n' > "sp ace/e f"
printf 'foxtrot\n' > $'a/\xff-latin1'; printf 'golf golf\n' > deep/er/g; printf 'hotel\n' > gone.txt
printf 'same\n' > a/dup1; printf 'same\n' > deep/dup2
find . -type f -exec touch -d '2020-01-01 00:00:00' {} +
cd $F
$T audit data --catalog cat.db -q
# run 2: modified, corrupt, moved, missing, new
printf 'bravo 2\n' > data/a.b/c
printf 'Charlie\n' > data/top.txt; touch -d '2020-01-01 00:00:00' data/top.txt
mv data/deep/er/g data/a/g-moved
rm data/gone.txt
printf 'india\n' > data/new.txt
$T audit data --catalog cat.db -q || true
# run 3: again (corrupt and missing reported again), and a deep file modified
printf 'delta 2\n' > data/deep/er/still/d.txt
$T audit data --catalog cat.db -q || true
# run 4: metadata only
printf 'juliett\n' > data/new2.txt
$T audit data --catalog cat.db -q --metadata-only || true
$T catalog verify -c cat.db > verify.txt
$T catalog report -c cat.db --list corrupt,missing,modified,new,moved,ok > report.txt
$T catalog export -c cat.db > export.sha256
$T catalog export -c cat.db --format hashdeep > export.hashdeep
$T catalog history -c cat.db data/a/g-moved > history-moved.txt
$T catalog history -c cat.db data/top.txt > history-corrupt.txt
$T catalog history -c cat.db data/gone.txt > history-gone.txt
(cd data && find . -type f ! -name new2.txt -printf '%P\0' | sort -z | xargs -0 sha256sum) > sha256sum.txt
