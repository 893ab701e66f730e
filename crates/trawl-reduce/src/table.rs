//! The fingerprint table: the set of distinct block fingerprints with a small reference count, in
//! 8 bytes per slot and about 9-10 bytes per distinct block at any size.
//!
//! Why by hand: a `HashMap<u128, u32>` costs 32+ bytes per entry plus its control bytes and
//! doubling slack (the seed's Java map ~54 B, restic ~56 B, duperemove ~82 B per block), which is
//! what made seed 001's scanner choke and stop at RAM. Here nothing but the fingerprint's bits are
//! stored, and the top bits are not stored at all:
//!
//! - The 64-bit key (the top half of a block's XXH3-128) is split: its top `PART_BITS` bits pick one
//!   of 4,096 partitions and are implied by it; the next 52 bits (the remainder) are stored; the
//!   low 12 bits of the slot hold a saturating reference count (up to 4,095). 12 + 52 = 64
//!   effective bits: a false merge needs two different blocks to agree on 64 bits, about
//!   n^2 / 2^65 expected in n distinct blocks (~3 in 10^10).
//! - Each partition is an ordered open-addressing table with linear probing (every run kept
//!   sorted, so the partition is sorted and growing it is one sequential pass), indexed by the
//!   remainder's high bits (a multiply-shift range reduction, monotone, so capacities need not be
//!   powers of two), grown by 1.25x at 90% load. Partitions start at staggered capacities so that they do not all grow
//!   at once: the average load stays near 0.8, i.e. about 10 bytes per distinct block (9.8 at
//!   53 M distinct keys, 10.2 at 17 M, measured by bench/table.py), in place of a doubling
//!   table's 2x swings.
//! - Inserts come in batches; each key's home slot is prefetched a few keys ahead, so that the
//!   cache misses of a table far larger than the CPU caches overlap instead of queueing.

/// Partition-selecting bits (not stored).
pub const PART_BITS: u32 = 12;
const PARTS: usize = 1 << PART_BITS;
const COUNT_BITS: u32 = 12;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const REM_BITS: u32 = 64 - PART_BITS; // 52
const MAX_LOAD_NUM: usize = 90;

/// Slots past the home range, where the last run may spill over (no wrap-around: the order
/// below needs none); the tail is lengthened when a run reaches its end.
const TAIL: usize = 8;

/// One partition: an ordered linear-probing table (Amble and Knuth's ordered hash table). The
/// home of a remainder is a monotone function of it, and every run of occupied slots is kept
/// sorted, so the whole partition is sorted by remainder: a lookup stops at the first larger
/// remainder, growing is one sequential pass (each key lands at the larger of its new home and
/// the slot after the previous key), and keys inserted in sorted order walk the slots forward.
struct Part {
    slots: Vec<u64>,
    /// The home range (the first `cap` slots; the rest is the tail).
    cap: usize,
    len: usize,
}

impl Part {
    fn with_capacity(cap: usize) -> Part {
        Part {
            slots: vec![0; cap + TAIL],
            cap,
            len: 0,
        }
    }

    #[inline]
    fn home(&self, rem: u64) -> usize {
        // Range reduction of the remainder's top bits onto the capacity: monotone in `rem`.
        (((rem << (64 - REM_BITS)) as u128 * self.cap as u128) >> 64) as usize
    }

    /// The slot holding `rem`, or where it belongs.
    #[inline]
    fn seek(&self, rem: u64) -> usize {
        let mut i = self.home(rem);
        while let Some(&s) = self.slots.get(i) {
            if s == 0 || s >> COUNT_BITS >= rem {
                break;
            }
            i += 1;
        }
        i
    }

    /// The count of `rem` (0 if absent).
    fn count(&self, rem: u64) -> u64 {
        match self.slots.get(self.seek(rem)) {
            Some(&s) if s != 0 && s >> COUNT_BITS == rem => s & COUNT_MAX,
            _ => 0,
        }
    }

    /// Inserts `rem` (non-zero, 52 bits) with count `add`; returns true if it was not there.
    #[inline]
    fn insert(&mut self, rem: u64, add: u64) -> bool {
        if (self.len + 1) * 100 > self.cap * MAX_LOAD_NUM {
            self.grow();
        }
        loop {
            let i = self.seek(rem);
            if let Some(&s) = self.slots.get(i)
                && s != 0
            {
                if s >> COUNT_BITS == rem {
                    let c = ((s & COUNT_MAX) + add).min(COUNT_MAX);
                    self.slots[i] = (s & !COUNT_MAX) | c;
                    return false;
                }
                // Make room: shift the rest of the run one slot right.
                let Some(j) = self.slots[i..].iter().position(|&x| x == 0) else {
                    self.slots.resize(self.slots.len() + TAIL, 0);
                    continue;
                };
                self.slots.copy_within(i..i + j, i + 1);
            } else if i == self.slots.len() {
                self.slots.resize(self.slots.len() + TAIL, 0);
                continue;
            }
            self.slots[i] = (rem << COUNT_BITS) | add.min(COUNT_MAX);
            self.len += 1;
            return true;
        }
    }

    fn grow(&mut self) {
        // x1.25, rounded up: keeps the partitions' staggered sizes staggered.
        let mut t = Part::with_capacity((self.cap * 5).div_ceil(4));
        let mut next = 0;
        for &s in self.slots.iter().filter(|&&s| s != 0) {
            let at = t.home(s >> COUNT_BITS).max(next);
            if at >= t.slots.len() {
                t.slots.resize(at + TAIL, 0);
            }
            t.slots[at] = s;
            next = at + 1;
        }
        t.len = self.len;
        *self = t;
    }
}

#[inline(always)]
fn prefetch(p: *const u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// The set of distinct fingerprints with saturating reference counts.
pub struct FpTable {
    parts: Vec<Part>,
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
        let base = ((distinct as f64 / PARTS as f64) / 0.8).max(16.0);
        let parts = (0..PARTS)
            .map(|i| {
                // Staggered: base * 1.25^(i/PARTS), so growth steps are spread over the partitions.
                let cap = (base * 1.25f64.powf(i as f64 / PARTS as f64)).ceil() as usize;
                Part::with_capacity(cap)
            })
            .collect();
        FpTable { parts, distinct: 0 }
    }

    #[inline]
    fn split(key: u64) -> (usize, u64) {
        let part = (key >> REM_BITS) as usize;
        let rem = key & ((1 << REM_BITS) - 1);
        (part, if rem == 0 { 1 } else { rem })
    }

    /// Inserts one key; true if it was new.
    pub fn insert(&mut self, key: u64) -> bool {
        let (p, rem) = Self::split(key);
        let new = self.parts[p].insert(rem, 1);
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
                let (p, rem) = Self::split(k);
                let part = &self.parts[p];
                let slot = part.slots.as_ptr().wrapping_add(part.home(rem));
                prefetch(slot);
            }
            let (p, rem) = Self::split(keys[i]);
            let n = self.parts[p].insert(rem, 1);
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
            starts[(k >> REM_BITS) as usize + 1] += 1;
        }
        for i in 1..=PARTS {
            starts[i] += starts[i - 1];
        }
        let mut next = starts;
        scratch.clear();
        scratch.resize(keys.len(), 0);
        for &k in keys {
            let p = (k >> REM_BITS) as usize;
            scratch[next[p]] = k;
            next[p] += 1;
        }
        let mut distinct = 0;
        const AHEAD: usize = 16;
        for i in 0..scratch.len() {
            if let Some(&k) = scratch.get(i + AHEAD) {
                let (p, rem) = Self::split(k);
                let part = &self.parts[p];
                prefetch(part.slots.as_ptr().wrapping_add(part.home(rem)));
            }
            let (p, rem) = Self::split(scratch[i]);
            distinct += self.parts[p].insert(rem, 1) as u64;
        }
        self.distinct += distinct;
        distinct
    }

    /// The reference count of `key` (0 if it is not in the table).
    pub fn count(&self, key: u64) -> u64 {
        let (p, rem) = Self::split(key);
        self.parts[p].count(rem)
    }

    /// Inserts a key with a reference count (e.g. carried over from another table).
    pub fn insert_count(&mut self, key: u64, count: u64) -> bool {
        let (p, rem) = Self::split(key);
        let new = self.parts[p].insert(rem, count.max(1));
        self.distinct += new as u64;
        new
    }

    /// Calls `f(key, count)` for every key whose top `bits` bits equal `prefix`. The key comes
    /// back whole (partition bits and remainder; a remainder of 0 was stored as 1), so that
    /// inserting it again lands on the same slot content.
    pub fn for_each_with_prefix(&self, bits: u32, prefix: u64, f: &mut dyn FnMut(u64, u64)) {
        assert!(bits <= PART_BITS);
        let per = 1usize << (PART_BITS - bits);
        let first = prefix as usize * per;
        for (i, part) in self.parts[first..first + per].iter().enumerate() {
            let p = (first + i) as u64;
            for &s in &part.slots {
                if s != 0 {
                    f((p << REM_BITS) | (s >> COUNT_BITS), s & COUNT_MAX);
                }
            }
        }
    }

    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Bytes held by the slots.
    pub fn memory_bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.slots.len() as u64 * 8).sum()
    }

    /// Calls `f` with every distinct key's reference count (saturated at 4,095).
    pub fn for_each_count(&self, f: &mut dyn FnMut(u64)) {
        for p in &self.parts {
            for &s in &p.slots {
                if s != 0 {
                    f(s & COUNT_MAX);
                }
            }
        }
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

    #[test]
    fn partitions_stay_ordered_and_lookups_find_every_count() {
        let ks = keys(500_000, 150_000, 5);
        let mut t = FpTable::new();
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
        for p in &t.parts {
            let mut last = 0;
            for (i, &s) in p.slots.iter().enumerate() {
                if s != 0 {
                    let rem = s >> COUNT_BITS;
                    assert!(rem > last, "slot {i}: not in order");
                    assert!(i >= p.home(rem), "slot {i}: before its home");
                    last = rem;
                }
            }
        }
        for (k, c) in &m {
            assert_eq!(t.count(*k), (*c).min(COUNT_MAX), "key {k:x}");
        }
        for k in keys(1000, u64::MAX, 99) {
            if !m.contains_key(&k) {
                assert_eq!(t.count(k), 0);
            }
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
        assert!(worst <= 11.0, "{worst} bytes per distinct key");
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
