//! The fingerprint table: the set of distinct block fingerprints with a small reference count, in
//! 7 bytes per slot and about 8-9 bytes per distinct block at any size.
//!
//! Why by hand: a `HashMap<u128, u32>` costs 32+ bytes per entry plus its control bytes and
//! doubling slack (the seed's Java map ~54 B, restic ~56 B, duperemove ~82 B per block), which is
//! what made seed 001's scanner choke and stop at RAM. Here nothing but the fingerprint's bits are
//! stored, and the top bits are not stored at all:
//!
//! - The 64-bit key (the top half of a block's XXH3-128) is split: its top `PART_BITS` (8) bits
//!   pick one of 256 partitions and are implied by it; the next 48 bits (the remainder) are
//!   stored in 6 bytes, and a seventh byte holds the reference count up to 254 (a count that
//!   reaches 255 moves to a small side map, which can hold at most one entry per 255 blocks
//!   scanned; counts saturate at 4,095). 8 + 48 = 56 effective bits: a false merge needs two
//!   different blocks to agree on 56 bits, about n^2 / 2^57 expected in n distinct blocks (0.02
//!   at 50 million, 7 at 10^9, about 700 in 10^10, each an undercount of one unique block, a
//!   relative error under 10^-7; `--exact-keys` keeps all 128 bits).
//! - Why 256 partitions and not more: a partition lives on the heap until it reaches 32 KiB
//!   (below that a whole page of its own would cost more than the heap's holes), and while they
//!   are on the heap, partitions growing by 1.25x leave holes that later, larger sizes cannot
//!   reuse (about 18% of the heap, measured with `mallinfo2`). With 4,096 partitions the heap
//!   phase lasted until about 15 million distinct blocks and RSS was 10.6-11.7 bytes per distinct
//!   block from 1 to 12 million; with 256 it ends near 1 million and RSS is at most 9.6 from 1.7
//!   million up (`bench/table.py --sweep`). Four implied bits fewer is the price.
//! - Each partition is an ordered open-addressing table with linear probing (every run kept
//!   sorted, so the partition is sorted and growing it is one sequential pass), indexed by the
//!   remainder's high bits (a multiply-shift range reduction, monotone, so capacities need not be
//!   powers of two), grown by 1.25x at 90% load. Partitions start at staggered capacities so that
//!   they do not all grow at once: the average load stays near 0.8, about 8.8 bytes per distinct
//!   block, in place of a doubling table's 2x swings.
//! - Memory that the allocator cannot give back is memory lost: partitions growing by 1.25x on
//!   the heap, from several threads, left freed blocks that later sizes could not reuse (RSS
//!   17.8 bytes per distinct block at 50 million, for 10 in the slots). So a partition of 32 KiB
//!   or more lives in an anonymous mapping of its own, sized to whole pages, and grows in place:
//!   `mremap` extends it (the kernel moves page tables, not bytes), then the keys are packed to
//!   the far end and placed forward at their new homes, which never lie after where they were
//!   packed. The heap only ever holds the small partitions (at most 8 MiB in all), and what they
//!   leave there is given back as they move out.
//! - Inserts come in batches; each key's home slot is prefetched a few keys ahead, so that the
//!   cache misses of a table far larger than the CPU caches overlap instead of queueing.

use std::collections::HashMap;

/// Partition-selecting bits (not stored).
pub const PART_BITS: u32 = 8;
const PARTS: usize = 1 << PART_BITS;
/// Remainder bits stored in a slot.
const REM_BITS: u32 = 48;
/// Key bits below the remainder, not kept.
const LOW_BITS: u32 = 64 - PART_BITS - REM_BITS;
/// Bytes per slot: the remainder and the count byte.
const SLOT: usize = 7;
const SLOT_MASK: u64 = (1 << (8 * SLOT)) - 1;
/// A slot's count byte at this value means: the count is in the side map.
const BYTE_MAX: u64 = 255;
/// Reference counts saturate here.
pub const COUNT_MAX: u64 = 4095;
const MAX_LOAD_NUM: usize = 90;
/// A partition this large (bytes) gets a mapping of its own.
const MAP_MIN: usize = 32 << 10;
const PAGE: usize = 4096;

/// Slots past the home range, where the last run may spill over (no wrap-around: the order
/// below needs none); the tail is lengthened when a run reaches its end.
const TAIL: usize = 8;

/// A partition's bytes: on the heap while small, in a mapping of its own once large.
enum Store {
    Heap(Vec<u8>),
    Map(memmap2::MmapMut),
}

impl Store {
    /// Zeroed bytes for `slots` slots (plus one byte, so that every slot can be read as a u64).
    fn new(slots: usize, map_min: usize) -> Store {
        let bytes = slots * SLOT + 1;
        if bytes < map_min {
            Store::Heap(vec![0; bytes])
        } else {
            Store::Map(memmap2::MmapMut::map_anon(bytes).expect("fingerprint table: out of memory"))
        }
    }

    #[inline]
    fn bytes(&self) -> &[u8] {
        match self {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    #[inline]
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Store::Heap(v) => v,
            Store::Map(m) => m,
        }
    }

    /// Resizes to `slots` slots; new bytes are zero.
    fn resize(&mut self, slots: usize) {
        let bytes = slots * SLOT + 1;
        match self {
            Store::Heap(v) => {
                // Exactly: a doubled capacity would be memory the table never uses.
                v.reserve_exact(bytes.saturating_sub(v.len()));
                v.resize(bytes, 0)
            }
            #[cfg(target_os = "linux")]
            Store::Map(m) => {
                // SAFETY: an anonymous private mapping: the added pages are zero-filled memory
                // of the process, and no reference into the old range outlives `&mut self`.
                unsafe { m.remap(bytes, memmap2::RemapOptions::new().may_move(true)) }
                    .expect("fingerprint table: out of memory");
            }
            #[cfg(not(target_os = "linux"))]
            Store::Map(m) => {
                let mut n =
                    memmap2::MmapMut::map_anon(bytes).expect("fingerprint table: out of memory");
                let keep = m.len().min(bytes);
                n[..keep].copy_from_slice(&m[..keep]);
                *m = n;
            }
        }
    }

    /// Bytes held: mappings in whole pages.
    fn held(&self) -> usize {
        match self {
            Store::Heap(v) => v.capacity(),
            Store::Map(m) => m.len().next_multiple_of(PAGE),
        }
    }
}

/// One partition: an ordered linear-probing table (Amble and Knuth's ordered hash table). The
/// home of a remainder is a monotone function of it, and every run of occupied slots is kept
/// sorted, so the whole partition is sorted by remainder: a lookup stops at the first larger
/// remainder, growing is one sequential pass (each key lands at the larger of its new home and
/// the slot after the previous key), and keys inserted in sorted order walk the slots forward.
struct Part {
    store: Store,
    /// Slots in the store: the home range (`cap`) and the tail.
    slots: usize,
    cap: usize,
    len: usize,
    /// Size (bytes) from which the partition lives in a mapping ([`MAP_MIN`]; lower in tests).
    map_min: usize,
}

/// Writes slot `i` of `bytes`.
#[inline]
fn write_slot(bytes: &mut [u8], i: usize, s: u64) {
    bytes[i * SLOT..(i + 1) * SLOT].copy_from_slice(&s.to_le_bytes()[..SLOT]);
}

/// Where `rem` belongs among `cap` home slots: the remainder's top bits scaled onto the
/// capacity, monotone in `rem`.
#[inline]
fn home_in(cap: usize, rem: u64) -> usize {
    (((rem << (64 - REM_BITS)) as u128 * cap as u128) >> 64) as usize
}

impl Part {
    fn with_capacity(cap: usize, map_min: usize) -> Part {
        Part {
            store: Store::new(cap + TAIL, map_min),
            slots: cap + TAIL,
            cap,
            len: 0,
            map_min,
        }
    }

    #[inline]
    fn home(&self, rem: u64) -> usize {
        home_in(self.cap, rem)
    }

    /// Slot `i` (remainder << 8 | count byte; 0 when empty); `i < self.slots`.
    #[inline]
    fn get(&self, i: usize) -> u64 {
        let b = &self.store.bytes()[i * SLOT..i * SLOT + 8];
        u64::from_le_bytes(b.try_into().unwrap()) & SLOT_MASK
    }

    #[inline]
    fn set(&mut self, i: usize, s: u64) {
        write_slot(self.store.bytes_mut(), i, s);
    }

    /// The slot holding `rem`, or where it belongs (`self.slots` if past the end).
    #[inline]
    fn seek(&self, rem: u64) -> usize {
        let p = self.store.bytes().as_ptr();
        let mut i = self.home(rem);
        while i < self.slots {
            // SAFETY: i < self.slots, and the store holds self.slots * SLOT + 1 bytes, so the
            // 8 bytes read at i * SLOT are in bounds (the hot loop of every insert: the
            // checked read was measured 20% slower).
            let s = unsafe { p.add(i * SLOT).cast::<u64>().read_unaligned() } & SLOT_MASK;
            if s == 0 || s >> 8 >= rem {
                break;
            }
            i += 1;
        }
        i
    }

    /// The first empty slot at or after `i`. (An occupied slot's count byte, its first, is
    /// never 0.)
    #[inline]
    fn next_empty(&self, mut i: usize) -> Option<usize> {
        let p = self.store.bytes().as_ptr();
        while i < self.slots {
            // SAFETY: as in `seek`.
            if unsafe { *p.add(i * SLOT) } == 0 {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// The slot's count byte for `rem` (0 if absent).
    fn count_byte(&self, rem: u64) -> u64 {
        let i = self.seek(rem);
        if i < self.slots {
            let s = self.get(i);
            if s != 0 && s >> 8 == rem {
                return s & 0xff;
            }
        }
        0
    }

    fn extend(&mut self, by: usize) {
        self.slots += by;
        self.store.resize(self.slots);
    }

    /// Adds `add` to the count of `rem` (non-zero, 48 bits; `key` names it in the side map);
    /// returns true if it was not there.
    #[inline]
    fn insert(&mut self, rem: u64, add: u64, key: u64, side: &mut Side) -> bool {
        if (self.len + 1) * 100 > self.cap * MAX_LOAD_NUM {
            self.grow(side);
        }
        loop {
            let i = self.seek(rem);
            if i == self.slots {
                self.extend(TAIL);
                continue;
            }
            let s = self.get(i);
            if s != 0 {
                if s >> 8 == rem {
                    let had = side.count(s & 0xff, key);
                    self.put_count(i, rem, had + add, key, &mut side.big);
                    return false;
                }
                // Make room: shift the rest of the run one slot right.
                let Some(j) = self.next_empty(i) else {
                    self.extend(TAIL);
                    continue;
                };
                self.store
                    .bytes_mut()
                    .copy_within(i * SLOT..j * SLOT, (i + 1) * SLOT);
            }
            self.put_count(i, rem, add, key, &mut side.big);
            self.len += 1;
            return true;
        }
    }

    /// Writes `rem` with count `c` (saturated) at slot `i`: in the count byte below 255, else
    /// in the side map under `key`.
    #[inline]
    fn put_count(&mut self, i: usize, rem: u64, c: u64, key: u64, big: &mut HashMap<u64, u16>) {
        let c = c.min(COUNT_MAX);
        if c < BYTE_MAX {
            self.set(i, (rem << 8) | c);
        } else {
            self.set(i, (rem << 8) | BYTE_MAX);
            big.insert(key, c as u16);
        }
    }

    fn grow(&mut self, side: &mut Side) {
        // x1.25, rounded up: keeps the partitions' staggered sizes staggered.
        let mut cap = (self.cap * 5).div_ceil(4);
        if (cap + TAIL) * SLOT + 1 >= self.map_min {
            // Whole pages: the rest of the last page is capacity too.
            cap = ((cap + TAIL) * SLOT + 1)
                .next_multiple_of(PAGE)
                .saturating_sub(1)
                / SLOT
                - TAIL;
        }
        // Where the last key will land, so that the new slots hold every key.
        let mut next = 0;
        for i in 0..self.slots {
            let s = self.get(i);
            if s != 0 {
                next = home_in(cap, s >> 8).max(next) + 1;
            }
        }
        let slots = cap.max(next) + TAIL;
        match &self.store {
            Store::Map(_) => self.grow_in_place(cap, slots),
            Store::Heap(_) => {
                let mut store = Store::new(slots, self.map_min);
                let mut next = 0;
                for i in 0..self.slots {
                    let s = self.get(i);
                    if s != 0 {
                        let at = home_in(cap, s >> 8).max(next);
                        write_slot(store.bytes_mut(), at, s);
                        next = at + 1;
                    }
                }
                let moved = matches!(store, Store::Map(_));
                self.store = store;
                if moved {
                    side.moved_to_map();
                }
            }
        }
        self.cap = cap;
        self.slots = slots;
    }

    /// The store is a mapping: extend it, pack the keys against its far end (walking backward,
    /// each key moves right or stays), then place them forward at their new homes. A key's new
    /// place is never after its packed place, since the slots were sized for the last key plus
    /// the tail, so placing never overwrites a key not yet placed.
    fn grow_in_place(&mut self, cap: usize, slots: usize) {
        let old = self.slots;
        self.store.resize(slots);
        let mut j = slots;
        for i in (0..old).rev() {
            let s = self.get(i);
            if s != 0 {
                j -= 1;
                if j != i {
                    self.set(j, s);
                }
            }
        }
        self.store.bytes_mut()[..j * SLOT].fill(0);
        let mut next = 0;
        for q in j..slots {
            let s = self.get(q);
            let at = home_in(cap, s >> 8).max(next);
            debug_assert!(at <= q);
            if at != q {
                self.set(at, s);
                self.set(q, 0);
            }
            next = at + 1;
        }
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
        let base = ((distinct as f64 / PARTS as f64) / 0.8).max(16.0);
        let parts = (0..PARTS)
            .map(|i| {
                // Staggered: base * 1.25^(i/PARTS), so growth steps are spread over the partitions.
                let cap = (base * 1.25f64.powf(i as f64 / PARTS as f64)).ceil() as usize;
                Part::with_capacity(cap, map_min)
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

    #[inline]
    fn prefetch_home(&self, key: u64) {
        let (p, rem, _) = Self::split(key);
        let part = &self.parts[p];
        let at = part
            .store
            .bytes()
            .as_ptr()
            .wrapping_add(part.home(rem) * SLOT);
        prefetch(at);
        // Two lines: a run crosses into the next line about half the time at these loads
        // (measured: 1.08x inserts/s over one line; three lines no better).
        prefetch(at.wrapping_add(64));
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
    /// partitions (millions of keys). (Sorting within partitions too was measured slower: runs
    /// of ascending keys lengthen the shifts.) Only the number of new keys is returned.
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
            let part = &self.parts[p];
            for i in 0..part.slots {
                let s = part.get(i);
                if s != 0 {
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

    /// Every partition sorted, every key at or after its home, every count found.
    fn check_ordered_against(t: &FpTable, m: &HashMap<u64, u64>) {
        for (pi, p) in t.parts.iter().enumerate() {
            let mut last = 0;
            for i in 0..p.slots {
                let s = p.get(i);
                if s != 0 {
                    let rem = s >> 8;
                    assert!(rem > last, "partition {pi} slot {i}: not in order");
                    assert!(i >= p.home(rem), "partition {pi} slot {i}: before its home");
                    last = rem;
                }
            }
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

    fn ordered_run(mut t: FpTable) -> FpTable {
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
        check_ordered_against(&t, &m);
        t
    }

    #[test]
    fn partitions_stay_ordered_and_lookups_find_every_count() {
        ordered_run(FpTable::new());
    }

    #[test]
    fn partitions_grown_in_place_in_their_own_mappings_stay_ordered() {
        // A 256-byte threshold: partitions move from the heap to mappings after a few growths,
        // then grow in place many times over.
        let t = ordered_run(FpTable::with_map_min(0, 256));
        let mapped = t
            .parts
            .iter()
            .filter(|p| matches!(p.store, Store::Map(_)))
            .count();
        // All started on the heap (24 slots are 169 bytes); most have moved.
        assert!(
            mapped > PARTS * 3 / 4,
            "{mapped} partitions moved to mappings"
        );
        // Whole pages: the capacity fills the last page. Without that, a mapping would leave
        // half a page unused on average; with it, only a tail lengthened since the last growth
        // leaves any (these partitions are 2-3 pages).
        let used: usize = t.parts.iter().map(|p| p.store.bytes().len()).sum();
        let held: usize = t.parts.iter().map(|p| p.store.held()).sum();
        assert!(
            (held - used) / mapped < PAGE / 4,
            "{used} of {held} bytes used in {mapped} mappings"
        );
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
            check_ordered_against(&t, &m);
            assert!(!t.side.big.is_empty());
            // Carried over with their counts (what a spill does), they stay exact.
            let mut u = FpTable::with_map_min(0, map_min);
            for prefix in 0..4 {
                t.for_each_with_prefix(2, prefix, &mut |k, c| {
                    u.insert_count(k, c);
                });
            }
            assert_eq!(u.distinct(), t.distinct());
            check_ordered_against(&u, &m);
            u.insert_count(hot[9], 300);
            assert_eq!(u.count(hot[9]), (m[&hot[9]] + 300).min(COUNT_MAX));
        }
    }

    #[test]
    fn stays_near_ten_bytes_per_distinct_key() {
        let mut t = FpTable::new();
        let mut new = Vec::new();
        let mut worst: f64 = 0.0;
        for (i, chunk) in keys(4_000_000, u64::MAX, 3).chunks(100_000).enumerate() {
            t.insert_batch(chunk, &mut new);
            if i >= 5 {
                worst = worst.max(t.memory_bytes() as f64 / t.distinct() as f64);
            }
        }
        // The bound (at most 10 at any scale); measured worst 9.7 here.
        assert!(worst <= 10.0, "{worst} bytes per distinct key");
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
