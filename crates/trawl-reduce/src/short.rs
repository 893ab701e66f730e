//! Keys that are the same key at every block size, stored once: a whole file (or a large file's
//! last part, which starts at a boundary of every size) shorter than the smallest size is one
//! block of the same bytes, so of the same fingerprint and length, at every size. One entry
//! holds its key, length, count and carried sizes for all the ways of cutting, where each way's
//! table would hold a copy.
//!
//! Such a block can also be a block of another file at some size: the last, shorter block of a
//! larger file with the same bytes. Each way's table holds those; when the counts are settled,
//! every entry here is looked up in each way's table ([`Short::overlap`]), and a key found in
//! both is counted once for that way, with the count of both.

use crate::dedup::Refs;
use crate::index::Index;
use crate::table::COUNT_MAX;

/// One partition's short keys.
#[derive(Default)]
pub(crate) struct Short {
    /// (ident, length, count) per distinct key, sorted by ident once flushed; the ident is the
    /// bits a compact index keeps of the key ([`crate::table::stage_word`] without the tag).
    entries: Vec<(u64, u32, u32)>,
    /// Carried values (the unit's allocated sizes, one per codec) per entry, in entry order.
    carried: Vec<u32>,
    /// Staged records, the same way, not yet merged.
    staged: Vec<(u64, u32, u32)>,
    staged_carried: Vec<u32>,
    /// Values carried per record.
    carry: usize,
    /// Records staged at least before a merge.
    stage_min: usize,
}

/// What one way's table shares with the short keys: the keys in both (counted once), their
/// bytes and carried values, and the histogram's correction.
#[derive(Debug, Default, Clone)]
pub(crate) struct Overlap {
    pub(crate) blocks: u64,
    pub(crate) bytes: u64,
    pub(crate) carried: Vec<u64>,
    /// Buckets to take one block (and its references) out of, and to put one into.
    pub(crate) out: Vec<u64>,
    pub(crate) into: Vec<u64>,
}

/// The ident of a key (the bits a compact index keeps).
pub(crate) fn ident(key: u128) -> u64 {
    crate::table::stage_word((key >> 64) as u64, 0) >> 8
}

/// A key that a compact index looks up as `ident`.
fn key_of(ident: u64) -> u128 {
    ((ident << 8) as u128) << 64
}

impl Short {
    /// Keys carrying `carry` values each; merges at least `stage_min` staged records at once.
    pub(crate) fn new(carry: usize, stage_min: usize) -> Short {
        Short {
            carry,
            stage_min: stage_min.max(1),
            ..Short::default()
        }
    }

    /// Stages one record.
    pub(crate) fn stage(&mut self, key: u128, len: u32, carried: &[u32]) {
        self.staged.push((ident(key), len, 1));
        self.staged_carried
            .extend_from_slice(&carried[..self.carry]);
        // Merged once it holds an eighth of the entries (at least `stage_min`): each entry is
        // moved about nine times in all.
        if self.staged.len() >= (self.entries.len() / 8).max(self.stage_min) {
            self.flush();
        }
    }

    /// Merges what is staged into the sorted entries, in place from the back.
    pub(crate) fn flush(&mut self) {
        if self.staged.is_empty() {
            return;
        }
        let c = self.carry;
        // Staged records sorted (stable: a key's first record gives its length and carried
        // values) and each key's records made one.
        let mut order: Vec<u32> = (0..self.staged.len() as u32).collect();
        order.sort_by_key(|&i| self.staged[i as usize].0);
        let mut add: Vec<(u64, u32, u32)> = Vec::with_capacity(order.len());
        let mut add_carried: Vec<u32> = Vec::with_capacity(order.len() * c);
        for &i in &order {
            let r = self.staged[i as usize];
            match add.last_mut() {
                Some(last) if last.0 == r.0 => last.2 = last.2.saturating_add(r.2),
                _ => {
                    add.push(r);
                    let at = i as usize * c;
                    add_carried.extend_from_slice(&self.staged_carried[at..at + c]);
                }
            }
        }
        self.staged.clear();
        self.staged_carried.clear();
        let new = add.iter().filter(|r| self.find(r.0).is_none()).count();
        let old = self.entries.len();
        self.entries.resize(old + new, (0, 0, 0));
        self.carried.resize((old + new) * c, 0);
        let (mut i, mut j, mut w) = (old, add.len(), old + new);
        while j > 0 {
            let r = add[j - 1];
            if i > 0 && self.entries[i - 1].0 > r.0 {
                self.entries[w - 1] = self.entries[i - 1];
                self.carried.copy_within((i - 1) * c..i * c, (w - 1) * c);
                i -= 1;
            } else if i > 0 && self.entries[i - 1].0 == r.0 {
                let mut e = self.entries[i - 1];
                e.2 = e.2.saturating_add(r.2);
                self.entries[w - 1] = e;
                self.carried.copy_within((i - 1) * c..i * c, (w - 1) * c);
                i -= 1;
                j -= 1;
            } else {
                self.entries[w - 1] = r;
                self.carried[(w - 1) * c..w * c].copy_from_slice(&add_carried[(j - 1) * c..j * c]);
                j -= 1;
            }
            w -= 1;
        }
    }

    /// The entry of `ident`, among the merged ones.
    fn find(&self, ident: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&ident, |e| e.0).ok()
    }

    /// The count of `key` (0 if absent); flushed first.
    pub(crate) fn count(&self, key: u128) -> u64 {
        self.find(ident(key))
            .map_or(0, |i| (self.entries[i].2 as u64).min(COUNT_MAX))
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> u64 {
        (self.entries.capacity() * 16
            + self.staged.capacity() * 16
            + (self.carried.capacity() + self.staged_carried.capacity()) * 4) as u64
    }

    /// The distinct keys, their bytes, the sums of their carried values and their histogram
    /// (what each way counts of them, before its overlap is taken out); flushed first.
    pub(crate) fn found(&self) -> (u64, u64, Vec<u64>, Refs) {
        let mut carried = vec![0u64; self.carry];
        let mut refs = Refs::default();
        let mut bytes = 0;
        for (n, e) in self.entries.iter().enumerate() {
            bytes += e.1 as u64;
            // Saturated as a table's counts are.
            refs.add((e.2 as u64).min(COUNT_MAX));
            for (s, v) in carried
                .iter_mut()
                .zip(&self.carried[n * self.carry..(n + 1) * self.carry])
            {
                *s += *v as u64;
            }
        }
        (self.entries.len() as u64, bytes, carried, refs)
    }

    /// The keys whose top `bits` bits are `prefix`: a range of the sorted entries.
    fn range(&self, bits: u32, prefix: u64) -> std::ops::Range<usize> {
        let shift = 56 - bits;
        let lo = self.entries.partition_point(|e| (e.0 >> shift) < prefix);
        let hi = self.entries.partition_point(|e| (e.0 >> shift) <= prefix);
        lo..hi
    }

    /// What `table` (one way's, or its keys with top `bits` bits `prefix`) shares with these
    /// keys, added to `o`; `carry` says whether the way sums carried values (the unit's).
    pub(crate) fn overlap(
        &self,
        table: &Index,
        bits: u32,
        prefix: u64,
        carry: bool,
        o: &mut Overlap,
    ) {
        if carry && o.carried.len() < self.carry {
            o.carried.resize(self.carry, 0);
        }
        for n in self.range(bits, prefix) {
            let (id, len, c) = self.entries[n];
            let c = (c as u64).min(COUNT_MAX);
            let t = table.count(key_of(id));
            if t == 0 {
                continue;
            }
            o.blocks += 1;
            o.bytes += len as u64;
            if carry {
                for (s, v) in o
                    .carried
                    .iter_mut()
                    .zip(&self.carried[n * self.carry..(n + 1) * self.carry])
                {
                    *s += *v as u64;
                }
            }
            o.out.push(c);
            o.out.push(t);
            o.into.push((c + t).min(COUNT_MAX));
        }
    }
}

impl Overlap {
    /// Applies the histogram's correction to `refs`.
    pub(crate) fn fix(&self, refs: &mut Refs) {
        for &c in &self.out {
            refs.take(c);
        }
        for &c in &self.into {
            refs.add(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn key(n: u64) -> u128 {
        // Spread over the key space, as hashes are.
        let k = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 0x100;
        (k as u128) << 64 | n as u128
    }

    #[test]
    fn merged_entries_count_each_key_once_with_its_first_length_and_carried_values() {
        let mut s = Short::new(2, 3);
        let mut want: HashMap<u64, (u32, u64, [u32; 2])> = HashMap::new();
        for round in 0..5u64 {
            for n in 0..500u64 {
                if (n + round) % 3 == 0 {
                    continue;
                }
                let (len, carried) = (n as u32 % 4000 + 1, [n as u32, 7]);
                s.stage(key(n), len, &carried);
                let e = want.entry(n).or_insert((len, 0, carried));
                e.1 += 1;
            }
        }
        s.flush();
        let (blocks, bytes, carried, refs) = s.found();
        assert_eq!(blocks, want.len() as u64);
        assert_eq!(bytes, want.values().map(|e| e.0 as u64).sum::<u64>());
        assert_eq!(
            carried[0],
            want.values().map(|e| e.2[0] as u64).sum::<u64>()
        );
        assert_eq!(carried[1], 7 * want.len() as u64);
        let mut r = Refs::default();
        for (n, e) in &want {
            r.add(e.1);
            assert_eq!(s.count(key(*n)), e.1);
        }
        assert_eq!(refs, r);
        assert_eq!(s.count(key(10_000)), 0);
    }

    #[test]
    fn a_key_in_a_table_too_is_one_block_there_with_both_counts() {
        let mut s = Short::new(1, 1);
        for n in 0..100u64 {
            s.stage(key(n), 10, &[3]);
        }
        s.stage(key(5), 10, &[3]);
        s.flush();
        let mut t = Index::default();
        let mut pending = crate::index::Pending {
            full: 4096,
            ..Default::default()
        };
        let mut found = crate::index::Found {
            carried: vec![0],
            ..Default::default()
        };
        // Keys 5 and 50 are in the table too (twice and once); 1,000 is not a short key.
        for n in [5u64, 5, 50, 1000] {
            pending.stage(&mut t, &mut found, key(n), 10, &[3]);
        }
        pending.flush(&mut t, &mut found);
        let mut o = Overlap::default();
        s.overlap(&t, 0, 0, true, &mut o);
        assert_eq!((o.blocks, o.bytes, o.carried.clone()), (2, 20, vec![6]));
        // Key 5: 2 short + 2 in the table; key 50: 1 + 1.
        let mut refs = Refs::default();
        t.for_each_count(&mut |c| refs.add(c));
        refs.merge(&s.found().3);
        o.fix(&mut refs);
        let mut want = Refs::default();
        for c in [4, 2, 1] {
            want.add(c);
        }
        for _ in 0..98 {
            want.add(1);
        }
        assert_eq!(refs, want);
        // Prefix by prefix (as a spilled partition is settled), every key is looked at once.
        let mut total = Overlap::default();
        for q in 0..64 {
            s.overlap(&t, 6, q, true, &mut total);
        }
        assert_eq!((total.blocks, total.bytes), (2, 20));
    }
}
