//! The fingerprint table: the set of distinct block fingerprints with a small reference count, in
//! 7-byte slots, nine to a cache line, about 8 bytes per distinct block at any size.
//!
//! Why by hand: a `HashMap<u128, u32>` costs 32+ bytes per entry plus its control bytes and
//! doubling slack (the seed's Java map ~54 B, restic ~56 B, duperemove ~82 B per block), which is
//! what made seed 001's scanner choke and stop at RAM. Here nothing but the fingerprint's bits are
//! stored, and the top bits are not stored at all:
//!
//! - The 64-bit key (the top half of a block's XXH3-128) is split: its top `PART_BITS` (12) bits
//!   pick one of 4,096 partitions and are implied by it; the next 48 bits (the remainder) are
//!   stored in 6 bytes, and a seventh byte holds the reference count up to 254 (a count that
//!   reaches 255 moves to a small side map, which can hold at most one entry per 255 blocks
//!   scanned; counts saturate at 4,095). 12 + 48 = 60 effective bits: a false merge needs two
//!   different blocks to agree on 60 bits, about n^2 / 2^61 expected in n distinct blocks (0.001
//!   at 50 million, 0.4 at 10^9, 43 in 10^10, each an undercount of one unique block;
//!   `--exact-keys` keeps all 128 bits).
//! - Each partition is a bucketized cuckoo table: a bucket is one 64-byte cache line holding nine
//!   slots and, in its last byte, how many are used. A remainder has two candidate buckets (its
//!   top bits, and a mix of all its bits, each scaled onto the bucket count); it goes into the
//!   first while that has room, into the second only when the first is full, and when both are
//!   full it displaces a key into that key's other bucket (a bounded random walk). Buckets never
//!   lose a key, so a remainder whose first bucket is not full is not in its second: most
//!   lookups read one line, none more than two. With nine slots a bucket and two choices, tables
//!   fill past 95% before walks grow long, so partitions grow by 1.25x at 95% load and the load
//!   stays between 0.76 and 0.95: about 8.3 bytes per distinct block on average.
//!   (The table it replaces, ordered linear probing, kept the partition sorted but shifted runs
//!   that at these loads span several cache lines; inserts stalled on those misses: 6-7 M/s.)
//! - Partitions start at staggered sizes so that they do not all grow at once, and grow one at a
//!   time by rebuilding into a fresh store (a partition is ~100 KB at 50 million keys, so the
//!   rebuild runs in cache). A partition of 32 KiB or more lives in an anonymous mapping of its
//!   own, sized to whole pages, which goes straight back to the kernel when replaced: partitions
//!   growing on glibc's heaps, from several threads, left freed blocks that later sizes could not
//!   reuse (RSS 17.8 bytes per distinct block at 50 million, for 10 in the slots).
//! - Inserts come in batches; each key's two buckets are prefetched a few keys ahead, so that the
//!   cache misses of a table far larger than the CPU caches overlap instead of queueing.

use std::collections::HashMap;

/// Partition-selecting bits (not stored).
pub const PART_BITS: u32 = 12;
const PARTS: usize = 1 << PART_BITS;
/// Remainder bits stored in a slot.
const REM_BITS: u32 = 48;
/// Key bits below the remainder, not kept.
const LOW_BITS: u32 = 64 - PART_BITS - REM_BITS;
/// Slots per bucket (9 x 7 = 63 bytes), and the byte that counts the used ones.
const WAYS: usize = 9;
const FILL: usize = 63;
/// A slot's count byte at this value means: the count is in the side map.
const BYTE_MAX: u64 = 255;
/// Reference counts saturate here.
pub const COUNT_MAX: u64 = 4095;
/// Grow past this load (percent of the slots).
const MAX_LOAD_PCT: usize = 95;
/// Displacements tried before a partition grows instead.
const MAX_KICKS: usize = 256;
/// A partition this large (bytes) gets a mapping of its own.
const MAP_MIN: usize = 32 << 10;
const PAGE: usize = 4096;

/// One cache line: nine slots and the number used (the first ones). A slot's 48-bit remainder
/// is stored split, so that a lookup compares the nine high parts at once: bytes 0..18 hold the
/// remainders' top 16 bits, 18..54 their low 32 bits, 54..63 the count bytes, 63 the fill.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Bucket([u8; 64]);

const TAGS: usize = 0;
const LOWS: usize = 2 * WAYS;
const COUNTS: usize = 6 * WAYS;

impl Bucket {
    #[inline]
    fn fill(&self) -> usize {
        self.0[FILL] as usize
    }

    #[inline]
    fn tag(&self, j: usize) -> u16 {
        u16::from_le_bytes([self.0[TAGS + 2 * j], self.0[TAGS + 2 * j + 1]])
    }

    /// Slot `j` (remainder << 8 | count byte); `j < WAYS`.
    #[inline]
    fn slot(&self, j: usize) -> u64 {
        let low = u32::from_le_bytes(self.0[LOWS + 4 * j..LOWS + 4 * j + 4].try_into().unwrap());
        let rem = ((self.tag(j) as u64) << 32) | low as u64;
        (rem << 8) | self.0[COUNTS + j] as u64
    }

    #[inline]
    fn set(&mut self, j: usize, s: u64) {
        let rem = s >> 8;
        self.0[TAGS + 2 * j..TAGS + 2 * j + 2].copy_from_slice(&((rem >> 32) as u16).to_le_bytes());
        self.0[LOWS + 4 * j..LOWS + 4 * j + 4].copy_from_slice(&(rem as u32).to_le_bytes());
        self.0[COUNTS + j] = s as u8;
    }

    /// The slot holding `rem`, if any: the nine tags are compared without branches (the loop
    /// vectorises), then the few matches are checked in full.
    #[inline]
    fn find(&self, rem: u64) -> Option<usize> {
        let tag = (rem >> 32) as u16;
        let mut hits = 0u32;
        for j in 0..WAYS {
            hits |= ((self.tag(j) == tag) as u32) << j;
        }
        hits &= (1u32 << self.fill()) - 1;
        while hits != 0 {
            let j = hits.trailing_zeros() as usize;
            if self.slot(j) >> 8 == rem {
                return Some(j);
            }
            hits &= hits - 1;
        }
        None
    }

    /// Appends a slot; the bucket has room.
    #[inline]
    fn push(&mut self, s: u64) {
        let n = self.fill();
        debug_assert!(n < WAYS);
        self.set(n, s);
        self.0[FILL] = n as u8 + 1;
    }
}

/// A partition's buckets: on the heap while small, in a mapping of its own once large.
enum Store {
    Heap(Vec<Bucket>),
    Map(memmap2::MmapMut),
}

impl Store {
    /// `n` empty buckets.
    fn new(n: usize, map_min: usize) -> Store {
        let bytes = n * 64;
        if bytes < map_min {
            Store::Heap(vec![Bucket([0; 64]); n])
        } else {
            // Populated: the rebuild that fills it touches every page, and faulting them one by
            // one (a read maps the zero page, the write copies it) was a tenth of insert time.
            Store::Map(
                memmap2::MmapOptions::new()
                    .len(bytes)
                    .populate()
                    .map_anon()
                    .expect("fingerprint table: out of memory"),
            )
        }
    }

    #[inline]
    fn buckets(&self) -> &[Bucket] {
        match self {
            Store::Heap(v) => v,
            // SAFETY: a mapping is page-aligned and its length a multiple of 64 (`new`), so it
            // is a slice of 64-byte-aligned buckets of plain bytes, borrowed as long as `self`.
            Store::Map(m) => unsafe {
                std::slice::from_raw_parts(m.as_ptr().cast::<Bucket>(), m.len() / 64)
            },
        }
    }

    #[inline]
    fn buckets_mut(&mut self) -> &mut [Bucket] {
        match self {
            Store::Heap(v) => v,
            // SAFETY: as in `buckets`, borrowed mutably as long as `self`.
            Store::Map(m) => unsafe {
                std::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<Bucket>(), m.len() / 64)
            },
        }
    }

    /// Bytes held: mappings in whole pages.
    fn held(&self) -> usize {
        match self {
            Store::Heap(v) => v.capacity() * 64,
            Store::Map(m) => m.len().next_multiple_of(PAGE),
        }
    }
}

/// A remainder's first bucket: its top bits scaled onto `n` buckets.
#[inline]
fn first_bucket(n: usize, rem: u64) -> usize {
    (((rem << (64 - REM_BITS)) as u128 * n as u128) >> 64) as usize
}

/// A remainder's second bucket: all its bits mixed (splitmix64's finalizer), scaled onto `n`.
#[inline]
fn second_bucket(n: usize, rem: u64) -> usize {
    let mut x = rem;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^= x >> 31;
    ((x as u128 * n as u128) >> 64) as usize
}

/// One partition: a bucketized cuckoo table (see the module notes).
struct Part {
    store: Store,
    /// Buckets in the store.
    n: usize,
    /// The size it grows from, unrounded: the partitions' sizes stay staggered (rounding each
    /// step up would bring them into step, all growing at once).
    size: f64,
    len: usize,
    /// Size (bytes) from which the partition lives in a mapping ([`MAP_MIN`]; lower in tests).
    map_min: usize,
    /// State of the victim choice of displacement walks (xorshift).
    rng: u32,
}

impl Part {
    /// A partition of `size` buckets (rounded up).
    fn with_buckets(size: f64, map_min: usize) -> Part {
        let n = Self::round((size.ceil() as usize).max(1), map_min);
        Part {
            store: Store::new(n, map_min),
            n,
            size,
            len: 0,
            map_min,
            rng: 0x9e37_79b9,
        }
    }

    /// `n` buckets, or whole pages of them for a partition that gets a mapping (the rest of the
    /// last page is capacity too).
    fn round(n: usize, map_min: usize) -> usize {
        if n * 64 >= map_min {
            n.next_multiple_of(PAGE / 64)
        } else {
            n
        }
    }

    /// The slot of `rem`: (bucket, slot) if present.
    #[inline]
    fn find(&self, rem: u64) -> Option<(usize, usize)> {
        let b = self.store.buckets();
        let a = first_bucket(self.n, rem);
        if let Some(j) = b[a].find(rem) {
            return Some((a, j));
        }
        let c = second_bucket(self.n, rem);
        b[c].find(rem).map(|j| (c, j))
    }

    /// The slot's count byte for `rem` (0 if absent).
    fn count_byte(&self, rem: u64) -> u64 {
        self.find(rem)
            .map_or(0, |(a, j)| self.store.buckets()[a].slot(j) & 0xff)
    }

    /// Adds `add` to the count of `rem` (non-zero, 48 bits; `key` names it in the side map);
    /// returns true if it was not there.
    #[inline]
    fn insert(&mut self, rem: u64, add: u64, key: u64, side: &mut Side) -> bool {
        if let Some((a, j)) = self.find(rem) {
            let bucket = &mut self.store.buckets_mut()[a];
            let had = side.count(bucket.slot(j) & 0xff, key);
            bucket.set(j, slot_with_count(rem, had + add, key, &mut side.big));
            return false;
        }
        let s = slot_with_count(rem, add, key, &mut side.big);
        if (self.len + 1) * 100 > self.n * WAYS * MAX_LOAD_PCT {
            self.grow(side, None);
        }
        if let Err(homeless) = self.place(s) {
            self.grow(side, Some(homeless));
        }
        self.len += 1;
        true
    }

    /// Puts a slot for a remainder known to be absent: into its first bucket if that has room,
    /// else its second, else displaces keys along a bounded random walk. On failure every key is
    /// in place except the one returned (not necessarily `s`).
    fn place(&mut self, mut s: u64) -> Result<(), u64> {
        let n = self.n;
        let rem = s >> 8;
        let b = self.store.buckets_mut();
        let (a, c) = (first_bucket(n, rem), second_bucket(n, rem));
        // The emptier of the two (two choices keep the buckets even).
        let mut at = if b[c].fill() < b[a].fill() { c } else { a };
        for _ in 0..MAX_KICKS {
            if b[at].fill() < WAYS {
                b[at].push(s);
                return Ok(());
            }
            // Displace a victim: `at` stays full, and the victim goes to its other bucket (if
            // that is its second, its first is `at`, full).
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 17;
            self.rng ^= self.rng << 5;
            let j = self.rng as usize % WAYS;
            let victim = b[at].slot(j);
            b[at].set(j, s);
            s = victim;
            let r = s >> 8;
            let first = first_bucket(n, r);
            at = if first == at {
                second_bucket(n, r)
            } else {
                first
            };
        }
        Err(s)
    }

    /// Grows by 1.25x (more if a rebuild cannot place every key): every key is placed again in
    /// a fresh store, plus `extra`, a key left without a slot by a failed walk. The old store
    /// is dropped: a mapping goes straight back to the kernel.
    #[inline(never)]
    fn grow(&mut self, side: &mut Side, extra: Option<u64>) {
        let mut size = self.size;
        let fresh = 'rebuild: loop {
            size *= 1.25;
            let n = Self::round((size.ceil() as usize).max(self.n + 1), self.map_min);
            let mut p = Part {
                store: Store::new(n, self.map_min),
                n,
                size,
                len: self.len,
                map_min: self.map_min,
                rng: self.rng,
            };
            // Pull the fresh (zero) lines into the cache first: the kernel's page clearing can
            // leave them out of it, and the placing below reads them in random order.
            for b in p.store.buckets_mut() {
                b.0[FILL] = 0;
            }
            for bucket in self.store.buckets() {
                for j in 0..bucket.fill() {
                    if p.place(bucket.slot(j)).is_err() {
                        continue 'rebuild;
                    }
                }
            }
            if let Some(s) = extra
                && p.place(s).is_err()
            {
                continue 'rebuild;
            }
            break p;
        };
        let moved = matches!(self.store, Store::Heap(_)) && matches!(fresh.store, Store::Map(_));
        *self = fresh;
        if moved {
            side.moved_to_map();
        }
    }
}

/// A slot for `rem` with count `c` (saturated): in the count byte below 255, else in the side
/// map under `key`.
#[inline]
fn slot_with_count(rem: u64, c: u64, key: u64, big: &mut HashMap<u64, u16>) -> u64 {
    let c = c.min(COUNT_MAX);
    if c < BYTE_MAX {
        (rem << 8) | c
    } else {
        big.insert(key, c as u16);
        (rem << 8) | BYTE_MAX
    }
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// What the partitions share: the side map of large counts, and how many have moved off the
/// heap.
#[derive(Default)]
struct Side {
    /// Counts of 255 and more, by (partition << 48 | remainder).
    big: HashMap<u64, u16>,
    moved: usize,
}

impl Side {
    /// The count behind a slot's count byte (`id`: the key in the side map).
    #[inline]
    fn count(&self, byte: u64, id: u64) -> u64 {
        if byte == BYTE_MAX {
            self.big.get(&id).map_or(BYTE_MAX, |&c| c as u64)
        } else {
            byte
        }
    }

    /// Every eighth of the partitions moved into mappings: the heap blocks they left are given
    /// back (glibc keeps freed blocks in the middle of its heaps resident until asked).
    fn moved_to_map(&mut self) {
        self.moved += 1;
        if self.moved.is_multiple_of(PARTS / 8) {
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe {
                libc::malloc_trim(0);
            }
        }
    }
}

/// The set of distinct fingerprints with saturating reference counts.
pub struct FpTable {
    parts: Vec<Part>,
    side: Side,
    distinct: u64,
}

impl Default for FpTable {
    fn default() -> Self {
        FpTable::new()
    }
}

impl FpTable {
    pub fn new() -> FpTable {
        FpTable::with_capacity(0)
    }

    /// A table sized for about `distinct` keys up front (no growth until then).
    pub fn with_capacity(distinct: u64) -> FpTable {
        FpTable::with_map_min(distinct, MAP_MIN)
    }

    /// As [`FpTable::with_capacity`], with partitions of `map_min` bytes or more in mappings.
    fn with_map_min(distinct: u64, map_min: usize) -> FpTable {
        // Buckets for a load of 0.8, at least two (18 slots).
        let base = ((distinct as f64 / PARTS as f64) / 0.8 / WAYS as f64).max(2.0);
        let parts = (0..PARTS)
            .map(|i| {
                // Staggered: base * 1.25^(i/PARTS), so growth steps are spread over the partitions.
                Part::with_buckets(base * 1.25f64.powf(i as f64 / PARTS as f64), map_min)
            })
            .collect();
        FpTable {
            parts,
            side: Side::default(),
            distinct: 0,
        }
    }

    /// (partition, remainder, side-map key) of a 64-bit key.
    #[inline]
    fn split(key: u64) -> (usize, u64, u64) {
        let part = (key >> (64 - PART_BITS)) as usize;
        let rem = (key >> LOW_BITS) & ((1 << REM_BITS) - 1);
        let rem = if rem == 0 { 1 } else { rem };
        (part, rem, ((part as u64) << REM_BITS) | rem)
    }

    /// Prefetches both of a key's buckets (the second is needed when the first is full, which
    /// is most of them near the top of the load range).
    #[inline]
    fn prefetch_home(&self, key: u64) {
        let (p, rem, _) = Self::split(key);
        let part = &self.parts[p];
        let b = part.store.buckets().as_ptr();
        prefetch(b.wrapping_add(first_bucket(part.n, rem)).cast());
        prefetch(b.wrapping_add(second_bucket(part.n, rem)).cast());
    }

    #[inline]
    fn insert_one(&mut self, key: u64, add: u64) -> bool {
        let (p, rem, id) = Self::split(key);
        self.parts[p].insert(rem, add, id, &mut self.side)
    }

    /// Inserts one key; true if it was new.
    pub fn insert(&mut self, key: u64) -> bool {
        let new = self.insert_one(key, 1);
        self.distinct += new as u64;
        new
    }

    /// Inserts a batch; `new[i]` says whether `keys[i]` was new (the first of equal keys in a
    /// batch is the new one). Each key's home slot is prefetched `AHEAD` keys before it is
    /// probed, so that many cache misses are in flight at once (the table is far larger than the
    /// caches; one miss at a time would cap inserts near 10 M/s).
    pub fn insert_batch(&mut self, keys: &[u64], new: &mut Vec<bool>) {
        const AHEAD: usize = 16;
        new.clear();
        new.resize(keys.len(), false);
        let mut distinct = 0;
        for i in 0..keys.len() {
            if let Some(&k) = keys.get(i + AHEAD) {
                self.prefetch_home(k);
            }
            let n = self.insert_one(keys[i], 1);
            new[i] = n;
            distinct += n as u64;
        }
        self.distinct += distinct;
    }

    /// Inserts a batch in partition order (a counting sort by partition first), so that each
    /// partition's share is inserted while the partition is hot in cache, with each key's home
    /// prefetched a few keys ahead; worth it when the batch is large against the number of
    /// partitions (millions of keys). Only the number of new keys is returned.
    pub fn insert_sorted(&mut self, keys: &[u64], scratch: &mut Vec<u64>) -> u64 {
        let mut starts = vec![0usize; PARTS + 1];
        for &k in keys {
            starts[(k >> (64 - PART_BITS)) as usize + 1] += 1;
        }
        for i in 1..=PARTS {
            starts[i] += starts[i - 1];
        }
        let mut next = starts;
        scratch.clear();
        scratch.resize(keys.len(), 0);
        for &k in keys {
            let p = (k >> (64 - PART_BITS)) as usize;
            scratch[next[p]] = k;
            next[p] += 1;
        }
        let mut distinct = 0;
        const AHEAD: usize = 16;
        for i in 0..scratch.len() {
            if let Some(&k) = scratch.get(i + AHEAD) {
                self.prefetch_home(k);
            }
            distinct += self.insert_one(scratch[i], 1) as u64;
        }
        self.distinct += distinct;
        distinct
    }

    /// The reference count of `key` (0 if it is not in the table).
    pub fn count(&self, key: u64) -> u64 {
        let (p, rem, id) = Self::split(key);
        self.side.count(self.parts[p].count_byte(rem), id)
    }

    /// Inserts a key with a reference count (e.g. carried over from another table).
    pub fn insert_count(&mut self, key: u64, count: u64) -> bool {
        let new = self.insert_one(key, count.max(1));
        self.distinct += new as u64;
        new
    }

    /// Calls `f(part, rem, count)` for every key of these partitions.
    fn for_each_in(&self, parts: std::ops::Range<usize>, f: &mut dyn FnMut(u64, u64, u64)) {
        for p in parts {
            for bucket in self.parts[p].store.buckets() {
                for j in 0..bucket.fill() {
                    let s = bucket.slot(j);
                    let rem = s >> 8;
                    let id = ((p as u64) << REM_BITS) | rem;
                    f(p as u64, rem, self.side.count(s & 0xff, id));
                }
            }
        }
    }

    /// Calls `f(key, count)` for every key whose top `bits` bits equal `prefix`. The key comes
    /// back with the bits the table keeps (partition bits and remainder; a remainder of 0 was
    /// stored as 1), so that inserting it again lands on the same slot content.
    pub fn for_each_with_prefix(&self, bits: u32, prefix: u64, f: &mut dyn FnMut(u64, u64)) {
        assert!(bits <= PART_BITS);
        let per = 1usize << (PART_BITS - bits);
        let first = prefix as usize * per;
        self.for_each_in(first..first + per, &mut |p, rem, c| {
            f((p << (64 - PART_BITS)) | (rem << LOW_BITS), c)
        });
    }

    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Bytes held by the slots (mappings in whole pages) and the side map.
    pub fn memory_bytes(&self) -> u64 {
        let slots: usize = self.parts.iter().map(|p| p.store.held()).sum();
        // An entry (key, count) and the map's control byte.
        let per = std::mem::size_of::<(u64, u16)>() + 1;
        (slots + self.side.big.capacity() * per) as u64
    }

    /// Calls `f` with every distinct key's reference count (saturated at 4,095).
    pub fn for_each_count(&self, f: &mut dyn FnMut(u64)) {
        self.for_each_in(0..PARTS, &mut |_, _, c| f(c));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn keys(n: usize, distinct: u64, seed: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                xxhash_rust::xxh3::xxh3_64(&(x % distinct).to_le_bytes())
            })
            .collect()
    }

    #[test]
    fn agrees_with_a_hashmap_on_distinct_and_counts() {
        let ks = keys(300_000, 100_000, 7);
        let mut t = FpTable::new();
        let mut m: HashMap<u64, u64> = HashMap::new();
        let mut new = Vec::new();
        for chunk in ks.chunks(10_000) {
            t.insert_batch(chunk, &mut new);
            for (i, k) in chunk.iter().enumerate() {
                let e = m.entry(*k).or_insert(0);
                assert_eq!(new[i], *e == 0, "key {k:x}");
                *e += 1;
            }
        }
        assert_eq!(t.distinct(), m.len() as u64);
        let mut a: Vec<u64> = Vec::new();
        t.for_each_count(&mut |c| a.push(c));
        let mut b: Vec<u64> = m.values().map(|&c| c.min(COUNT_MAX)).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    /// Every key in one of its two buckets and there once, every bucket's fill within its
    /// nine slots, every count found, absent keys not found.
    fn check_against(t: &FpTable, m: &HashMap<u64, u64>) {
        for (pi, p) in t.parts.iter().enumerate() {
            let mut seen = std::collections::HashSet::new();
            for (i, b) in p.store.buckets().iter().enumerate() {
                assert!(b.fill() <= WAYS);
                for j in 0..b.fill() {
                    let rem = b.slot(j) >> 8;
                    assert!(
                        i == first_bucket(p.n, rem) || i == second_bucket(p.n, rem),
                        "partition {pi} bucket {i}: a key in neither of its buckets"
                    );
                    assert!(seen.insert(rem), "partition {pi}: a key twice");
                }
                // Free slots are zero (a slot is read only below the fill, but a stale one
                // would mean a push that wrote past it).
                for j in b.fill()..WAYS {
                    assert_eq!(b.slot(j), 0, "partition {pi} bucket {i} slot {j}");
                }
            }
            assert_eq!(seen.len(), p.len);
        }
        for (k, c) in m {
            assert_eq!(t.count(*k), (*c).min(COUNT_MAX), "key {k:x}");
        }
        for k in keys(1000, u64::MAX, 99) {
            if !m.contains_key(&k) {
                assert_eq!(t.count(k), 0);
            }
        }
    }

    fn checked_run(mut t: FpTable) -> FpTable {
        let ks = keys(500_000, 150_000, 5);
        let mut m: HashMap<u64, u64> = HashMap::new();
        let (mut new, mut scratch) = (Vec::new(), Vec::new());
        for (i, chunk) in ks.chunks(50_000).enumerate() {
            if i % 2 == 0 {
                t.insert_batch(chunk, &mut new);
            } else {
                t.insert_sorted(chunk, &mut scratch);
            }
            for k in chunk {
                *m.entry(*k).or_insert(0) += 1;
            }
        }
        assert_eq!(t.distinct(), m.len() as u64);
        check_against(&t, &m);
        t
    }

    #[test]
    fn keys_stay_in_their_buckets_and_lookups_find_every_count() {
        checked_run(FpTable::new());
    }

    #[test]
    fn partitions_moved_into_their_own_mappings_keep_every_key_and_fill_whole_pages() {
        // A 256-byte threshold: partitions move from the heap to mappings after a growth or
        // two, then are rebuilt into fresh mappings many times over.
        let t = checked_run(FpTable::with_map_min(0, 256));
        let mapped = t
            .parts
            .iter()
            .filter(|p| matches!(p.store, Store::Map(_)))
            .count();
        // All started on the heap (two buckets are 128 bytes); most have moved.
        assert!(
            mapped > PARTS * 3 / 4,
            "{mapped} partitions moved to mappings"
        );
        // Whole pages: the buckets fill the last page (these partitions are ~300 bytes of
        // keys, so without that most of each page would lie unused).
        let mapped = || t.parts.iter().filter(|p| matches!(p.store, Store::Map(_)));
        let used: usize = mapped().map(|p| p.n * 64).sum();
        let held: usize = mapped().map(|p| p.store.held()).sum();
        assert_eq!(used, held);
    }

    #[test]
    fn full_buckets_displace_keys_and_a_failed_walk_grows_the_partition() {
        // One partition, filled far past where walks start: every key must stay findable
        // through displacements and growths forced by failed walks.
        let mut t = FpTable::new();
        let mut m: HashMap<u64, u64> = HashMap::new();
        let mut new = Vec::new();
        // Keys of partition 0 only (top 12 bits zero).
        let ks: Vec<u64> = keys(60_000, u64::MAX, 31)
            .into_iter()
            .map(|k| k >> PART_BITS)
            .collect();
        for chunk in ks.chunks(1000) {
            t.insert_batch(chunk, &mut new);
            for k in chunk {
                *m.entry(*k).or_insert(0) += 1;
            }
        }
        let p = &t.parts[0];
        let displaced = p
            .store
            .buckets()
            .iter()
            .enumerate()
            .flat_map(|(i, b)| (0..b.fill()).map(move |j| (i, b.slot(j) >> 8)))
            .filter(|&(i, rem)| i != first_bucket(p.n, rem))
            .count();
        assert!(
            displaced > 10_000,
            "{displaced} keys in their second bucket"
        );
        check_against(&t, &m);
        // A failed walk leaves one key homeless; growing must place it.
        let mut p = Part::with_buckets(1.0, MAP_MIN);
        let mut side = Side::default();
        for rem in 1..=(WAYS as u64) {
            assert!(p.place(rem << 8 | 1).is_ok());
        }
        let homeless = p.place(100 << 8 | 1).unwrap_err();
        p.grow(&mut side, Some(homeless));
        p.len = WAYS + 1;
        let mut all: Vec<u64> = p
            .store
            .buckets()
            .iter()
            .flat_map(|b| (0..b.fill()).map(|j| b.slot(j) >> 8))
            .collect();
        all.sort_unstable();
        let mut want: Vec<u64> = (1..=WAYS as u64).chain([100]).collect();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn counts_past_the_count_byte_are_exact_up_to_the_cap() {
        for map_min in [MAP_MIN, 256] {
            let mut t = FpTable::with_map_min(0, map_min);
            let mut m: HashMap<u64, u64> = HashMap::new();
            // Keys repeated 25 j^2 times (25 to 38,025), interleaved with others that make
            // partitions grow.
            let hot = keys(40, u64::MAX, 21);
            let cold = keys(200_000, u64::MAX, 22);
            let mut new = Vec::new();
            for chunk in cold.chunks(1000) {
                let mut batch = chunk.to_vec();
                for (j, &h) in hot.iter().enumerate() {
                    batch.extend(std::iter::repeat_n(h, j * j / 8));
                }
                t.insert_batch(&batch, &mut new);
                for k in batch {
                    *m.entry(k).or_insert(0) += 1;
                }
            }
            assert!(m[&hot[3]] < 255 && m[&hot[9]] > 255 && m[&hot[9]] < COUNT_MAX);
            assert!(m[&hot[39]] > COUNT_MAX);
            check_against(&t, &m);
            assert!(!t.side.big.is_empty());
            // Carried over with their counts (what a spill does), they stay exact.
            let mut u = FpTable::with_map_min(0, map_min);
            for prefix in 0..4 {
                t.for_each_with_prefix(2, prefix, &mut |k, c| {
                    u.insert_count(k, c);
                });
            }
            assert_eq!(u.distinct(), t.distinct());
            check_against(&u, &m);
            u.insert_count(hot[9], 300);
            assert_eq!(u.count(hot[9]), (m[&hot[9]] + 300).min(COUNT_MAX));
        }
    }

    #[test]
    fn stays_near_eight_bytes_per_distinct_key() {
        let mut t = FpTable::new();
        let mut new = Vec::new();
        let mut worst: f64 = 0.0;
        for (i, chunk) in keys(4_000_000, u64::MAX, 3).chunks(100_000).enumerate() {
            t.insert_batch(chunk, &mut new);
            if i >= 5 {
                worst = worst.max(t.memory_bytes() as f64 / t.distinct() as f64);
            }
        }
        eprintln!("worst {worst}");
        assert!(worst <= 9.0, "{worst} bytes per distinct key");
    }

    #[test]
    fn sorted_batches_count_the_same_keys() {
        let ks = keys(200_000, 50_000, 11);
        let mut a = FpTable::new();
        let mut b = FpTable::new();
        let (mut new, mut scratch) = (Vec::new(), Vec::new());
        let mut n = 0;
        for chunk in ks.chunks(30_000) {
            a.insert_batch(chunk, &mut new);
            n += b.insert_sorted(chunk, &mut scratch);
        }
        assert_eq!(a.distinct(), b.distinct());
        assert_eq!(n, b.distinct());
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        a.for_each_count(&mut |c| ca.push(c));
        b.for_each_count(&mut |c| cb.push(c));
        ca.sort_unstable();
        cb.sort_unstable();
        assert_eq!(ca, cb);
    }

    #[test]
    fn the_count_saturates() {
        let mut t = FpTable::new();
        for _ in 0..5000 {
            t.insert(42);
        }
        let mut c = Vec::new();
        t.for_each_count(&mut |n| c.push(n));
        assert_eq!(c, vec![COUNT_MAX]);
    }
}
