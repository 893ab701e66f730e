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
//! - Each partition is an open-addressing table with linear probing, indexed by the remainder's
//!   high bits (a multiply-shift range reduction, so capacities need not be powers of two), grown
//!   by 1.25x at 90% load. Partitions start at staggered capacities so that they do not all grow
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

struct Part {
    slots: Vec<u64>,
    len: usize,
}

impl Part {
    #[inline]
    fn home(&self, rem: u64) -> usize {
        // Range reduction of the remainder's top bits onto the capacity.
        (((rem << (64 - REM_BITS)) as u128 * self.slots.len() as u128) >> 64) as usize
    }

    /// Inserts `rem` (non-zero, 52 bits) with count `add`; returns true if it was not there.
    #[inline]
    fn insert(&mut self, rem: u64, add: u64) -> bool {
        if (self.len + 1) * 100 > self.slots.len() * MAX_LOAD_NUM {
            self.grow();
        }
        let cap = self.slots.len();
        let mut i = self.home(rem);
        loop {
            let s = self.slots[i];
            if s == 0 {
                self.slots[i] = (rem << COUNT_BITS) | add.min(COUNT_MAX);
                self.len += 1;
                return true;
            }
            if s >> COUNT_BITS == rem {
                let c = ((s & COUNT_MAX) + add).min(COUNT_MAX);
                self.slots[i] = (s & !COUNT_MAX) | c;
                return false;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
    }

    fn grow(&mut self) {
        // x1.25, rounded up: keeps the partitions' staggered sizes staggered.
        let new_cap = (self.slots.len() * 5).div_ceil(4);
        let old = std::mem::replace(&mut self.slots, vec![0; new_cap]);
        self.len = 0;
        for s in old {
            if s != 0 {
                self.insert(s >> COUNT_BITS, s & COUNT_MAX);
            }
        }
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
                Part {
                    slots: vec![0; cap],
                    len: 0,
                }
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
    /// partition's share is inserted while the partition is hot in cache; worth it when the
    /// batch is large against the number of partitions (millions of keys). Only the number of
    /// new keys is returned.
    pub fn insert_sorted(&mut self, keys: &[u64], scratch: &mut Vec<u64>) -> u64 {
        let mut counts = vec![0usize; PARTS + 1];
        for &k in keys {
            counts[(k >> REM_BITS) as usize + 1] += 1;
        }
        for i in 1..=PARTS {
            counts[i] += counts[i - 1];
        }
        scratch.clear();
        scratch.resize(keys.len(), 0);
        for &k in keys {
            let p = (k >> REM_BITS) as usize;
            scratch[counts[p]] = k;
            counts[p] += 1;
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
        let part = &self.parts[p];
        let cap = part.slots.len();
        let mut i = part.home(rem);
        loop {
            let s = part.slots[i];
            if s == 0 {
                return 0;
            }
            if s >> COUNT_BITS == rem {
                return s & COUNT_MAX;
            }
            i += 1;
            if i == cap {
                i = 0;
            }
        }
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
