//! The fingerprint table: the set of distinct block fingerprints with a small reference count,
//! stored dense and sorted in 7 bytes per distinct block, filled by merging sorted batches.
//!
//! Why by hand: a `HashMap<u128, u32>` costs 32+ bytes per entry plus its control bytes and
//! doubling slack (a Java map ~54 B, restic ~56 B, duperemove ~82 B per block), which is what
//! makes a per-block map stop at RAM long before the data ends. Here nothing but the fingerprint's bits are
//! stored, the top bits are not stored at all, and there are no empty slots:
//!
//! - The 64-bit key (the top half of a block's XXH3-128) is split: its top `PART_BITS` (8) bits
//!   pick one of 256 partitions and are implied by it; the next 48 bits (the remainder) are
//!   stored in 6 bytes, and a seventh byte holds the reference count up to 254 (a count that
//!   reaches 255 moves to a small side map, which can hold at most one entry per 255 blocks
//!   scanned; counts saturate at 4,095). 8 + 48 = 56 effective bits: a false merge needs two
//!   different blocks to agree on 56 bits, about n^2 / 2^57 expected in n distinct blocks (0.02
//!   at 50 million, 7 at 10^9, about 700 in 10^10, each an undercount of one unique block, a
//!   relative error under 10^-7; `--exact-keys` keeps all 128 bits). The key's low 8 bits are
//!   not kept either: the caller may put a tag of its own there ([`stage_word`]).
//! - Each partition is a sorted array of 7-byte slots, with no empty slots (a hash table at a
//!   useful load carries 15-25% of empty slots: an ordered linear-probing table takes 8.6-9.5
//!   bytes per distinct key).
//! - Keys are not inserted one by one: a random insert into a table far larger than the caches
//!   is a cache miss (about 9 M inserts/s with prefetching, measured with a hash table).
//!   They are staged, each in its partition's region of the staging as it comes; a flush sorts
//!   each partition's share (a counting sort on the next bits and an insertion pass, in cache)
//!   and merges it into the partition's array from the back, in place, in one sequential pass.
//!   A flush costs a pass over the table, so the staging holds an eighth of the distinct keys
//!   (at least 65,536): about 1 byte per distinct key more, and each key is rewritten about nine
//!   times in all, sequentially (23 M inserts/s at 53 M distinct keys, `bench/table.py`; a
//!   quarter was no faster, a sixteenth 0.8x). Whether a key is new is known at the flush, not
//!   when it is staged: the flush reports each new key's first staged word. The flush gives the
//!   staging's pages back as it sorts the shares out of them, so that the staging and the grown
//!   partitions are not held at once.
//! - Memory that the allocator cannot give back is memory lost: partitions growing on the heap
//!   leave freed blocks that later sizes cannot reuse (RSS 17.8 bytes per distinct block at 50
//!   million for 10 in the slots, measured with heap partitions). So a partition of 32 KiB or more lives in
//!   an anonymous mapping of its own and grows in place (`mremap` moves page tables, not bytes).
//!   With 256 partitions the heap only holds partitions while the table is under about 1 million
//!   keys.
//!
//! This module holds the table ([`FpTable`]) and its constants; a partition and its merge are
//! [`part`]'s, the memory a partition lives in [`store`]'s.

/// Partition-selecting bits (not stored).
pub const PART_BITS: u32 = 8;
const PARTS: usize = 1 << PART_BITS;
/// Remainder bits stored in a slot.
const REM_BITS: u32 = 48;
const REM_MASK: u64 = (1 << REM_BITS) - 1;
/// Key bits below the remainder, not kept (a caller's tag in a staged word).
const LOW_BITS: u32 = 64 - PART_BITS - REM_BITS;
/// Bytes per slot: the remainder and the count byte.
const SLOT: usize = 7;
const SLOT_MASK: u64 = (1 << (8 * SLOT)) - 1;
/// A slot's count byte at this value means: the count is in the side map.
const BYTE_MAX: u64 = 255;
/// Reference counts saturate here.
pub const COUNT_MAX: u64 = 4095;
/// A partition this large (bytes) gets a mapping of its own.
const MAP_MIN: usize = 32 << 10;
const PAGE: usize = 4096;
/// The staging holds at least this many words, and at least 1/`STAGE_DIV` of the distinct keys.
// (Under test, small, so that small inputs cross many flushes.)
const STAGE_MIN: usize = if cfg!(test) { 1 << 8 } else { 1 << 16 };
const STAGE_DIV: u64 = 8;

/// The word to stage for a 64-bit key: its partition and remainder bits (a remainder of 0 is
/// stored as 1, so that a slot is never all zeros) and `tag` in the low byte, which the table
/// does not keep. Staged words with equal `word >> 8` are the same key.
#[inline]
pub fn stage_word(key: u64, tag: u8) -> u64 {
    let rem = (key >> LOW_BITS) & REM_MASK;
    let rem = if rem == 0 { 1 } else { rem };
    (key & !((REM_MASK << LOW_BITS) | 0xff)) | (rem << LOW_BITS) | tag as u64
}

mod part;
mod store;

use {part::*, store::*};

/// The set of distinct fingerprints with saturating reference counts.
pub struct FpTable {
    parts: Vec<Part>,
    side: Side,
    distinct: u64,
    /// The staging: `PARTS` regions of `region` words, one per partition (words are sorted to
    /// their partition as they come: 256 write heads stay in cache, where sorting them all at
    /// the flush was a cache miss per word), each filled to `fill[p]`.
    staged: Store,
    fill: Vec<u32>,
    region: usize,
    /// Whether a region is full.
    full: bool,
    tmp: Vec<u64>,
    hist: Vec<u32>,
    /// Size (bytes) from which a partition lives in a mapping ([`MAP_MIN`]; lower in tests).
    map_min: usize,
    /// Top key bits fixed by the caller (a counting partition's table sees `PARTS >> fixed` of
    /// the partitions): the staging is sized for those.
    fixed: u32,
}

impl Default for FpTable {
    fn default() -> Self {
        FpTable::new()
    }
}

impl FpTable {
    /// An empty table.
    pub fn new() -> FpTable {
        FpTable::with_map_min(MAP_MIN)
    }

    /// A table for the keys whose top `bits` bits are all one value (at most [`PART_BITS`]):
    /// its staging is sized for the partitions those keys fall in.
    pub fn for_share(bits: u32) -> FpTable {
        FpTable {
            fixed: bits.min(PART_BITS),
            ..FpTable::new()
        }
    }

    fn with_map_min(map_min: usize) -> FpTable {
        FpTable {
            fixed: 0,
            parts: (0..PARTS).map(|_| Part::new()).collect(),
            side: Side::default(),
            distinct: 0,
            staged: Store::Heap(Vec::new()),
            fill: vec![0; PARTS],
            region: 0,
            full: true,
            tmp: Vec::new(),
            hist: Vec::new(),
            map_min,
        }
    }

    /// Sizes the staging's regions for the next batch: an eighth of the distinct keys (at least
    /// 65,536) over the partitions, plus four standard deviations, so that with hashed keys
    /// the first region fills when the staging is nearly full.
    fn size_staging(&mut self) {
        let words = ((self.distinct / STAGE_DIV) as usize).max(STAGE_MIN >> self.fixed);
        let mean = words / self.regions();
        let region = mean + 4 * mean.isqrt() + 16;
        if region > self.region {
            // A new mapping of its own: pages not yet written are not yet memory, and the old
            // one goes back to the kernel whole. (Grown in place instead, every page it ever
            // had stayed resident, though the regions move: 8.0 bytes per distinct key at the
            // end instead of 7.1. On the heap, the sizes it left behind were holes.)
            self.staged = Store::Map(
                memmap2::MmapMut::map_anon(region * self.regions() * 8)
                    .expect("fingerprint table: out of memory"),
            );
            self.region = region;
        }
        self.full = false;
    }

    /// Regions of the staging: one per partition its keys can fall in (a share's keys all
    /// have the same top `fixed` bits, so partition `p` stages in region `p % regions`).
    #[inline]
    fn regions(&self) -> usize {
        PARTS >> self.fixed
    }

    /// Gives the staging's whole pages from byte `from` to below byte `end` back to the kernel
    /// (they read as zeros when staged into again); returns the new low mark.
    fn release_staging(&mut self, from: usize, end: usize) -> usize {
        let end = end / PAGE * PAGE;
        if end <= from {
            return from;
        }
        if let Store::Map(m) = &mut self.staged {
            let end = end.min(m.len() / PAGE * PAGE);
            if end > from {
                // SAFETY: `from..end` is whole pages within the mapping, an anonymous private
                // one; nothing refers into it (the flush reads each share before releasing it).
                unsafe {
                    libc::madvise(
                        m.as_mut_ptr().add(from).cast(),
                        end - from,
                        libc::MADV_DONTNEED,
                    );
                }
            }
        }
        end
    }

    /// Whether the staging is full (flush before staging more).
    #[inline]
    pub fn is_full(&self) -> bool {
        self.full
    }

    /// Stages a word made by [`stage_word`]; the staging must not be full.
    #[inline]
    pub fn stage(&mut self, word: u64) {
        if self.full {
            // Only in a fresh table (full until its staging is sized, so that a caller's
            // first flush is of nothing): the staging is sized at the first word.
            assert!(
                self.region == 0,
                "fingerprint table: staged into a full staging"
            );
            self.size_staging();
        }
        let p = (word >> (64 - PART_BITS)) as usize;
        let r = p & (self.regions() - 1);
        let f = &mut self.fill[p];
        let at = (r * self.region + *f as usize) * 8;
        self.staged.bytes_mut()[at..at + 8].copy_from_slice(&word.to_le_bytes());
        *f += 1;
        if *f as usize == self.region {
            self.full = true;
        }
    }

    /// Merges the staged words into the table; calls `on_new` with one staged word of each key
    /// that was not in the table (the first of its key in sorted order, so the smallest tag),
    /// partition by partition in ascending order, within a partition in descending key order.
    pub fn flush(&mut self, on_new: &mut dyn FnMut(u64)) {
        if self.region == 0 {
            return;
        }
        let mut moved = false;
        // The staging's pages below this byte have been given back in this flush.
        let mut released = 0;
        for p in 0..PARTS {
            let at = (p & (self.regions() - 1)) * self.region * 8;
            let n = std::mem::take(&mut self.fill[p]) as usize;
            if n == 0 {
                continue;
            }
            let share = &self.staged.bytes()[at..at + n * 8];
            sort_share(share, PART_BITS, &mut self.tmp, &mut self.hist);
            // The staging's words up to this partition are sorted out: their pages go back to
            // the kernel as the partitions grow, so that the two are not held at once (peak RSS
            // 7.64 -> 7.30 bytes per distinct key at 53 M, for about 4% of the insert rate; when
            // the staging does not grow, its pages are faulted in again).
            released = self.release_staging(released, at + self.region * 8);
            let new = self.parts[p].merge(
                p as u64,
                &self.tmp,
                &mut self.side,
                self.map_min,
                &mut moved,
                on_new,
            );
            self.distinct += new as u64;
        }
        if moved {
            // Partitions that moved into mappings left their heap blocks free; glibc keeps
            // freed blocks in the middle of its heap resident until asked (measured: 11.1 bytes
            // of peak RSS per distinct key at 1.7 million keys without this).
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe {
                libc::malloc_trim(0);
            }
        }
        self.size_staging();
    }

    /// Inserts a batch of keys and flushes; `on_new` as in [`FpTable::flush`].
    pub fn insert_all(&mut self, keys: &[u64], on_new: &mut dyn FnMut(u64)) {
        for &k in keys {
            if self.is_full() {
                self.flush(on_new);
            }
            self.stage(stage_word(k, 0));
        }
        self.flush(on_new);
    }

    /// The reference count of `key` (0 if it is not in the table); staged keys are not counted
    /// until flushed.
    pub fn count(&self, key: u64) -> u64 {
        let w = stage_word(key, 0);
        let p = (w >> (64 - PART_BITS)) as usize;
        let rem = (w >> LOW_BITS) & REM_MASK;
        self.parts[p].find(rem).map_or(0, |s| {
            self.side.count(s & 0xff, ((p as u64) << REM_BITS) | rem)
        })
    }

    /// Moves the (flushed) keys whose top `bits` bits equal `prefix` into a table of their own.
    pub fn take_prefix(&mut self, bits: u32, prefix: u64) -> FpTable {
        assert!(bits <= PART_BITS && self.fill.iter().all(|&f| f == 0));
        let per = 1usize << (PART_BITS - bits);
        let first = prefix as usize * per;
        let mut t = FpTable::with_map_min(self.map_min);
        t.fixed = self.fixed.max(bits);
        for p in first..first + per {
            std::mem::swap(&mut t.parts[p], &mut self.parts[p]);
            t.distinct += t.parts[p].len as u64;
            self.distinct -= t.parts[p].len as u64;
        }
        let lo = (first as u64) << REM_BITS;
        let hi = ((first + per) as u64) << REM_BITS;
        t.side.big = self
            .side
            .big
            .extract_if(|id, _| (lo..hi).contains(id))
            .collect();
        t
    }

    /// Calls `f(partition, remainder, count)` for every flushed key.
    fn for_each(&self, f: &mut dyn FnMut(u64, u64, u64)) {
        for (p, part) in self.parts.iter().enumerate() {
            for i in 0..part.len {
                let s = part.get(i);
                let id = ((p as u64) << REM_BITS) | s >> 8;
                f(p as u64, s >> 8, self.side.count(s & 0xff, id));
            }
        }
    }

    /// Distinct keys flushed.
    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Bytes held by the slots (mappings in whole pages), the staging and the side map.
    pub fn memory_bytes(&self) -> u64 {
        let slots: usize = self.parts.iter().map(|p| p.store.held()).sum();
        // An entry (key, count) and the map's control byte.
        let per = std::mem::size_of::<(u64, u16)>() + 1;
        let staging = self.staged.held() + self.tmp.capacity() * 8 + self.hist.capacity() * 4;
        (slots + staging + self.side.big.capacity() * per) as u64
    }

    /// Calls `f` with every flushed key's reference count (saturated at 4,095).
    pub fn for_each_count(&self, f: &mut dyn FnMut(u64)) {
        self.for_each(&mut |_, _, c| f(c));
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

    /// Every partition strictly sorted, every count found, absent keys not found.
    fn check_against(t: &FpTable, m: &HashMap<u64, u64>) {
        for (pi, p) in t.parts.iter().enumerate() {
            for i in 1..p.len {
                assert!(p.get(i - 1) >> 8 < p.get(i) >> 8, "partition {pi} slot {i}");
            }
        }
        assert_eq!(t.distinct(), m.len() as u64);
        for (k, c) in m {
            assert_eq!(t.count(*k), (*c).min(COUNT_MAX), "key {k:x}");
        }
        for k in keys(1000, u64::MAX, 99) {
            if !m.contains_key(&k) {
                assert_eq!(t.count(k), 0);
            }
        }
    }

    /// Stages `ks` with their index's low byte as the tag; checks that each key is reported new
    /// exactly once, with the tag of its first staging, and counts against a HashMap.
    fn run(t: &mut FpTable, ks: &[u64], flush_every: usize) -> HashMap<u64, u64> {
        let mut m: HashMap<u64, u64> = HashMap::new();
        let mut first_tag: HashMap<u64, u8> = HashMap::new();
        let mut reported: HashMap<u64, u8> = HashMap::new();
        for (i, chunk) in ks.chunks(flush_every).enumerate() {
            let mut on_new = |w: u64| {
                assert!(reported.insert(w >> 8, w as u8).is_none(), "{w:x} twice");
            };
            for (j, &k) in chunk.iter().enumerate() {
                // Equal keys are staged with equal tags (as the scanner does: the tag says
                // whether its record has a side entry, a property of the block).
                let tag = (k >> 3) as u8;
                first_tag.entry(stage_word(k, 0) >> 8).or_insert(tag);
                *m.entry(k).or_insert(0) += 1;
                if t.is_full() {
                    t.flush(&mut on_new);
                }
                t.stage(stage_word(k, tag));
                let _ = (i, j);
            }
            t.flush(&mut on_new);
        }
        assert_eq!(reported, first_tag);
        m
    }

    #[test]
    fn agrees_with_a_hashmap_on_new_keys_and_counts() {
        for flush_every in [7, 10_000, 300_000] {
            let mut t = FpTable::new();
            let m = run(&mut t, &keys(300_000, 100_000, 7), flush_every);
            check_against(&t, &m);
        }
    }

    #[test]
    fn partitions_in_their_own_mappings_merge_the_same() {
        // A 256-byte threshold: partitions move from the heap to mappings after a few flushes,
        // then grow in place many times over.
        let mut t = FpTable::with_map_min(256);
        let m = run(&mut t, &keys(500_000, 150_000, 5), 20_000);
        let mapped = t
            .parts
            .iter()
            .filter(|p| matches!(p.store, Store::Map(_)))
            .count();
        assert_eq!(mapped, PARTS);
        check_against(&t, &m);
    }

    #[test]
    fn counts_past_the_count_byte_are_exact_up_to_the_cap() {
        for map_min in [MAP_MIN, 256] {
            let mut t = FpTable::with_map_min(map_min);
            let mut m: HashMap<u64, u64> = HashMap::new();
            // Keys repeated 25 j^2 times (25 to 38,025), interleaved with others that make
            // partitions grow.
            let hot = keys(40, u64::MAX, 21);
            let cold = keys(200_000, u64::MAX, 22);
            for chunk in cold.chunks(1000) {
                let mut batch = chunk.to_vec();
                for (j, &h) in hot.iter().enumerate() {
                    batch.extend(std::iter::repeat_n(h, j * j / 8));
                }
                t.insert_all(&batch, &mut |_| {});
                for k in batch {
                    *m.entry(k).or_insert(0) += 1;
                }
            }
            assert!(m[&hot[3]] < 255 && m[&hot[9]] > 255 && m[&hot[9]] < COUNT_MAX);
            assert!(m[&hot[39]] > COUNT_MAX);
            check_against(&t, &m);
            assert!(!t.side.big.is_empty());
            // Taken apart by prefix (what a spill does), the counts stay exact.
            let all = t.distinct();
            let mut n = 0;
            let mut big = 0;
            for prefix in 0..4 {
                let u = t.take_prefix(2, prefix);
                n += u.distinct();
                big += u.side.big.len();
                let mine: HashMap<u64, u64> = m
                    .iter()
                    .filter(|(k, _)| *k >> 62 == prefix)
                    .map(|(k, c)| (*k, *c))
                    .collect();
                check_against(&u, &mine);
            }
            assert_eq!((n, t.distinct(), t.side.big.len()), (all, 0, 0));
            assert!(big > 0);
        }
    }

    #[test]
    fn stays_near_eight_bytes_per_distinct_key() {
        let mut t = FpTable::new();
        let mut worst: f64 = 0.0;
        for (i, chunk) in keys(4_000_000, u64::MAX, 3).chunks(100_000).enumerate() {
            t.insert_all(chunk, &mut |_| {});
            if i >= 5 {
                worst = worst.max(t.memory_bytes() as f64 / (t.distinct() + 100_000) as f64);
            }
        }
        // 7 bytes of slots, the staging (1/8 of the keys, 8 bytes each) and page rounding.
        assert!(worst <= 8.5, "{worst} bytes per distinct key");
    }

    #[test]
    fn the_count_saturates() {
        let mut t = FpTable::new();
        t.insert_all(&[42; 5000], &mut |_| {});
        let mut c = Vec::new();
        t.for_each_count(&mut |n| c.push(n));
        assert_eq!(c, vec![COUNT_MAX]);
    }

    #[test]
    fn sorting_a_share_sorts() {
        let (mut tmp, mut hist) = (Vec::new(), Vec::new());
        for n in [0, 1, 63, 64, 1000, 100_000] {
            let b: Vec<u64> = keys(n, 5000, n as u64).iter().map(|k| k >> 8).collect();
            let bytes: Vec<u8> = b.iter().flat_map(|w| w.to_le_bytes()).collect();
            let mut want = b.clone();
            want.sort_unstable();
            sort_share(&bytes, 8, &mut tmp, &mut hist);
            assert_eq!(tmp, want);
        }
    }
}
