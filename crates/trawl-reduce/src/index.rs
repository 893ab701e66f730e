//! The set of distinct fingerprints, and the records staged until a flush says which are new.

use crate::spill;
use crate::table;
use crate::table::FpTable;

/// The set of distinct fingerprints: compact (56 bits kept, [`FpTable`]) or exact (all 128
/// bits, a std HashMap at ~40 bytes per entry, for `--exact-keys`).
pub(crate) enum Index {
    Compact(FpTable),
    Exact(std::collections::HashMap<u128, u64>),
}

impl Default for Index {
    fn default() -> Self {
        Index::Compact(FpTable::new())
    }
}

impl Index {
    /// An index for the keys whose top `bits` bits are all one value (a counting partition's).
    pub(crate) fn for_share(exact: bool, bits: u32) -> Index {
        if exact {
            Index::Exact(Default::default())
        } else {
            Index::Compact(FpTable::for_share(bits))
        }
    }

    /// What identifies a key in [`Pending`] (the bits the index keeps, or the top half of an
    /// exact key, whose records are settled as soon as they are staged).
    pub(crate) fn ident(&self, key: u128) -> u64 {
        match self {
            Index::Compact(_) => table::stage_word((key >> 64) as u64, 0) >> 8,
            Index::Exact(_) => (key >> 64) as u64,
        }
    }

    /// Whether the staging is full (flush before staging more).
    pub(crate) fn is_full(&self) -> bool {
        match self {
            Index::Compact(t) => t.is_full(),
            Index::Exact(_) => false,
        }
    }

    /// Stages a key with a tag (0: a whole block with nothing carried; 1: its record is in
    /// [`Pending`]). The exact index inserts it at once and calls `on_new(ident, tag)` if new.
    pub(crate) fn stage(&mut self, key: u128, tag: u8, on_new: &mut dyn FnMut(u64, u8)) {
        match self {
            Index::Compact(t) => t.stage(table::stage_word((key >> 64) as u64, tag)),
            Index::Exact(m) => {
                let c = m.entry(key).or_insert(0);
                if *c == 0 {
                    on_new((key >> 64) as u64, tag);
                }
                *c = (*c + 1).min(table::COUNT_MAX);
            }
        }
    }

    /// Merges what is staged; `on_new(ident, tag)` for each key that was new.
    pub(crate) fn flush(&mut self, on_new: &mut dyn FnMut(u64, u8)) {
        if let Index::Compact(t) = self {
            t.flush(&mut |w| on_new(w >> 8, w as u8));
        }
    }

    /// The reference count of a (flushed) key (0 if absent).
    pub(crate) fn count(&self, key: u128) -> u64 {
        match self {
            Index::Compact(t) => t.count((key >> 64) as u64),
            Index::Exact(m) => m.get(&key).copied().unwrap_or(0),
        }
    }

    pub(crate) fn memory_bytes(&self) -> u64 {
        match self {
            Index::Compact(t) => t.memory_bytes(),
            // Key, count and the map's control byte, over its load.
            Index::Exact(m) => m.capacity() as u64 * 25,
        }
    }

    pub(crate) fn for_each_count(&self, f: &mut dyn FnMut(u64)) {
        match self {
            Index::Compact(t) => t.for_each_count(f),
            Index::Exact(m) => m.values().for_each(|c| f(*c)),
        }
    }

    /// Moves the (flushed) entries whose key's top `spill::BITS` bits are `q` into an index of
    /// their own.
    pub(crate) fn take_partition(&mut self, q: u64) -> Index {
        match self {
            Index::Compact(t) => Index::Compact(t.take_prefix(spill::BITS, q)),
            Index::Exact(m) => Index::Exact(
                m.extract_if(|k, _| (k >> (128 - spill::BITS)) as u64 == q)
                    .collect(),
            ),
        }
    }
}

/// What the flushes found: distinct keys, their bytes, and the sums of what new records carried.
#[derive(Default)]
pub(crate) struct Found {
    pub(crate) blocks: u64,
    pub(crate) bytes: u64,
    pub(crate) carried: Vec<u64>,
}

/// Staged records that are not plain whole blocks (a file's last, shorter block, a chunk, a unit
/// carrying its allocated sizes): their length and carried values, kept until the flush says
/// whether their key is new. Whole blocks carrying nothing are staged with tag 0 and cost
/// nothing here.
#[derive(Default)]
pub(crate) struct Pending {
    /// (ident, length, record number) per record staged with tag 1.
    pub(crate) recs: Vec<(u64, u32, u32)>,
    /// `carry` values per record, by record number.
    pub(crate) carried: Vec<u32>,
    pub(crate) sorted: bool,
    /// Length of a whole block (0 for chunks: every chunk's length is kept).
    pub(crate) full: u32,
}

impl Pending {
    pub(crate) fn clear(&mut self) {
        self.recs.clear();
        self.carried.clear();
        self.sorted = false;
    }

    /// Counts a new key from its staged word's ident and tag.
    pub(crate) fn new_key(&mut self, found: &mut Found, ident: u64, tag: u8) {
        found.blocks += 1;
        if tag == 0 {
            found.bytes += self.full as u64;
            return;
        }
        // Settled at once (exact keys): the record just staged. Else sorted once per flush.
        let i = match self.recs.last() {
            Some(r) if !self.sorted && r.0 == ident => self.recs.len() - 1,
            _ => {
                if !self.sorted {
                    self.recs.sort_unstable_by_key(|r| r.0);
                    self.sorted = true;
                }
                self.recs
                    .binary_search_by_key(&ident, |r| r.0)
                    .expect("a new key has its staged record")
            }
        };
        let (_, len, n) = self.recs[i];
        found.bytes += len as u64;
        // Values carried per record: as many as `found` sums.
        let carry = found.carried.len();
        let at = n as usize * carry;
        for (c, v) in found.carried.iter_mut().zip(&self.carried[at..at + carry]) {
            debug_assert!(*v != u32::MAX, "an unsampled unit was staged");
            *c += *v as u64;
        }
    }

    /// Stages one non-zero record in `index`, flushing first when the staging is full.
    pub(crate) fn stage(
        &mut self,
        index: &mut Index,
        found: &mut Found,
        key: u128,
        len: u32,
        carry: &[u32],
    ) {
        if index.is_full() {
            self.flush(index, found);
        }
        let tag = if len == self.full && carry.is_empty() {
            0
        } else {
            let n = u32::try_from(self.recs.len()).expect("under 2^32 records staged");
            self.recs.push((index.ident(key), len, n));
            self.carried.extend_from_slice(carry);
            1
        };
        index.stage(key, tag, &mut |ident, tag| self.new_key(found, ident, tag));
        if matches!(index, Index::Exact(_)) {
            self.clear();
        }
    }

    /// `n` occurrences of one record (a cluster map's entry, counted there): the record is
    /// staged once, and the other occurrences, up to the most a count holds, with tag 2, which
    /// sorts after the record's own 0 or 1 (so a key's first word is always its record's).
    pub(crate) fn stage_n(
        &mut self,
        index: &mut Index,
        found: &mut Found,
        key: u128,
        len: u32,
        carry: &[u32],
        n: u64,
    ) {
        if n == 0 {
            return;
        }
        self.stage(index, found, key, len, carry);
        for _ in 1..n.min(table::COUNT_MAX) {
            if index.is_full() {
                self.flush(index, found);
            }
            index.stage(key, 2, &mut |ident, tag| self.new_key(found, ident, tag));
        }
    }

    pub(crate) fn flush(&mut self, index: &mut Index, found: &mut Found) {
        index.flush(&mut |ident, tag| self.new_key(found, ident, tag));
        self.clear();
    }
}
