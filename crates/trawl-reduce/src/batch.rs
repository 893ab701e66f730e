//! Fingerprints as they cross a wire between machines: per partition of the key space, one
//! packed batch of (key, length, count), sorted and delta-coded, with one header per batch
//! carrying a format version; never a message per block. A map side folds its blocks into
//! batches ([`map`]); a reduce side merges one partition's batches from every map and counts
//! it exactly ([`Merged`]), whatever way the data was split.
//!
//! Encoding (all integers LEB128 varints): magic `TRB`, version byte, partition, block size,
//! key shift, entry count; then per entry the key's difference from the previous key (the first
//! from 0) shifted right by the key shift (the low bits a key does not keep), a tag
//! `(count - 1) << 1 | short`, and the length only when `short` (a block shorter than the block
//! size: a file's tail). Then the number of values carried per entry and those values (the
//! allocated bytes of a compression unit per codec, entry-major); then the attribution count
//! and, per (entry, file) in order, the entry's difference from the previous one's (0: the same
//! entry), the file's difference from the previous file of the same entry (the first from 0),
//! and the occurrences. The varints and the layout are written here because the format is a
//! few lines and must not change with a library's version.

use std::collections::BTreeMap;

use trawl_report::reduction::RefBucket;

use crate::dedup::{Refs, histogram};

/// The batch format's version; a reader refuses any other.
pub const BATCH_VERSION: u8 = 1;
const MAGIC: &[u8; 3] = b"TRB";

/// Why a batch could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BatchError {
    #[error("not a fingerprint batch")]
    NotABatch,
    #[error("fingerprint batch format {found}, this trawl reads {BATCH_VERSION}")]
    Version { found: u8 },
    #[error("fingerprint batch cut short")]
    Truncated,
}

/// One partition's fingerprints from one map: sorted by key, each key once with its count.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Batch {
    pub partition: u32,
    pub block_size: u32,
    /// (key, length, occurrences), keys strictly increasing.
    pub entries: Vec<(u64, u32, u64)>,
    /// Low key bits that are always zero (not kept), not shipped.
    pub shift: u8,
    /// Values carried per entry (`carry` of them each, entry-major): what is summed over the
    /// distinct keys (a compression unit's allocated bytes per codec).
    pub carry: u32,
    pub carried: Vec<u32>,
    /// (entry, file, occurrences in that file), ordered: which files hold each block (by its
    /// place in `entries`), for the attribution of duplicates to files. Empty when not
    /// attributing.
    pub files: Vec<(u32, u32, u64)>,
}

/// The partition of a key among `partitions` (its top bits, scaled: partitions need not be a
/// power of two).
pub fn partition_of(key: u64, partitions: u32) -> u32 {
    ((key as u128 * partitions as u128) >> 64) as u32
}

/// Appends `v` as a LEB128 varint.
pub(crate) fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `at`, moving it past.
pub(crate) fn get(b: &[u8], at: &mut usize) -> Result<u64, BatchError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or(BatchError::Truncated)?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err(BatchError::NotABatch)
}

impl Batch {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.entries.len() * 8);
        out.extend_from_slice(MAGIC);
        out.push(BATCH_VERSION);
        put(&mut out, self.partition as u64);
        put(&mut out, self.block_size as u64);
        put(&mut out, self.shift as u64);
        put(&mut out, self.entries.len() as u64);
        let mut prev = 0u64;
        for &(key, len, count) in &self.entries {
            put(&mut out, (key - prev) >> self.shift);
            prev = key;
            let short = len != self.block_size;
            put(&mut out, (count - 1) << 1 | u64::from(short));
            if short {
                put(&mut out, len as u64);
            }
        }
        put(&mut out, self.carry as u64);
        for v in &self.carried {
            put(&mut out, *v as u64);
        }
        put(&mut out, self.files.len() as u64);
        let (mut prev, mut prev_file) = (0u32, 0u32);
        for &(entry, file, n) in &self.files {
            if entry != prev {
                prev_file = 0;
            }
            put(&mut out, (entry - prev) as u64);
            put(&mut out, (file - prev_file) as u64);
            put(&mut out, n);
            (prev, prev_file) = (entry, file);
        }
        out
    }

    pub fn decode(b: &[u8]) -> Result<Batch, BatchError> {
        if b.len() < 4 || &b[..3] != MAGIC {
            return Err(BatchError::NotABatch);
        }
        if b[3] != BATCH_VERSION {
            return Err(BatchError::Version { found: b[3] });
        }
        let mut at = 4;
        let partition = get(b, &mut at)? as u32;
        let block_size = get(b, &mut at)? as u32;
        let shift = get(b, &mut at)?;
        if shift > 32 {
            return Err(BatchError::NotABatch);
        }
        let shift = shift as u8;
        let n = get(b, &mut at)?;
        let mut entries = Vec::with_capacity(n.min(1 << 20) as usize);
        let mut key = 0u64;
        for i in 0..n {
            let d = get(b, &mut at)?;
            if i > 0 && d == 0 {
                return Err(BatchError::NotABatch); // keys must increase
            }
            let d = d.checked_shl(shift as u32).filter(|x| x >> shift == d);
            key = d
                .and_then(|d| key.checked_add(d))
                .ok_or(BatchError::NotABatch)?;
            let tag = get(b, &mut at)?;
            let len = if tag & 1 == 1 {
                get(b, &mut at)? as u32
            } else {
                block_size
            };
            entries.push((key, len, (tag >> 1) + 1));
        }
        let carry = get(b, &mut at)? as u32;
        let values = (carry as u64).checked_mul(n).ok_or(BatchError::NotABatch)?;
        let mut carried = Vec::with_capacity(values.min(1 << 20) as usize);
        for _ in 0..values {
            carried.push(u32::try_from(get(b, &mut at)?).map_err(|_| BatchError::NotABatch)?);
        }
        let nf = get(b, &mut at)?;
        let mut files = Vec::with_capacity(nf.min(1 << 20) as usize);
        let (mut entry, mut file) = (0u64, 0u64);
        for _ in 0..nf {
            let d = get(b, &mut at)?;
            if d > 0 {
                file = 0;
            }
            entry = entry
                .checked_add(d)
                .filter(|e| *e < n)
                .ok_or(BatchError::NotABatch)?;
            file = file
                .checked_add(get(b, &mut at)?)
                .ok_or(BatchError::NotABatch)?;
            let f = u32::try_from(file).map_err(|_| BatchError::NotABatch)?;
            files.push((entry as u32, f, get(b, &mut at)?));
        }
        if at != b.len() {
            return Err(BatchError::NotABatch);
        }
        Ok(Batch {
            partition,
            block_size,
            entries,
            shift,
            carry,
            carried,
            files,
        })
    }
}

/// A map's blocks (key and length; zero blocks left out by the caller) folded into one batch
/// per partition that has any.
pub fn map(
    blocks: impl IntoIterator<Item = (u64, u32)>,
    partitions: u32,
    block_size: u32,
) -> Vec<Batch> {
    let mut parts: BTreeMap<u32, BTreeMap<u64, (u32, u64)>> = BTreeMap::new();
    for (key, len) in blocks {
        let e = parts
            .entry(partition_of(key, partitions))
            .or_default()
            .entry(key)
            .or_insert((len, 0));
        e.1 += 1;
    }
    parts
        .into_iter()
        .map(|(partition, keys)| Batch {
            partition,
            block_size,
            entries: keys.into_iter().map(|(k, (l, c))| (k, l, c)).collect(),
            ..Batch::default()
        })
        .collect()
}

/// What [`Merged::visit`] shows each distinct key to: key, length, occurrences, carried values.
pub type KeySeen<'a> = dyn FnMut(u64, u32, u64, &[u32]) + 'a;

/// One partition counted from the batches of every map: exact, in any order of batches.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Merged {
    pub unique_blocks: u64,
    pub unique_bytes: u64,
    pub blocks: u64,
    pub logical_bytes: u64,
    refs: Refs,
}

impl Merged {
    /// Merges one partition's batches (a k-way merge of their sorted keys).
    pub fn partition(batches: &[&Batch]) -> Merged {
        Merged::visit(batches, &mut |_, _, _, _| {})
    }

    /// Merges one partition's batches, showing each distinct key to `seen` with its length,
    /// its occurrences in all, and the values the first batch holding it carries.
    pub fn visit(batches: &[&Batch], seen: &mut KeySeen<'_>) -> Merged {
        let mut m = Merged::default();
        let mut at = vec![0usize; batches.len()];
        loop {
            let next = batches
                .iter()
                .zip(&at)
                .filter_map(|(b, &i)| b.entries.get(i).map(|e| e.0))
                .min();
            let Some(key) = next else { break };
            let (mut len, mut count, mut carried): (u32, u64, &[u32]) = (0, 0, &[]);
            for (b, i) in batches.iter().zip(at.iter_mut()) {
                if let Some(&(k, l, c)) = b.entries.get(*i)
                    && k == key
                {
                    if count == 0 {
                        let w = b.carry as usize;
                        carried = b.carried.get(*i * w..(*i + 1) * w).unwrap_or(&[]);
                    }
                    len = l;
                    count += c;
                    *i += 1;
                }
            }
            seen(key, len, count, carried);
            m.unique_blocks += 1;
            m.unique_bytes += len as u64;
            m.blocks += count;
            m.logical_bytes += len as u64 * count;
            m.refs.add(count);
        }
        m
    }

    /// Adds another partition's counts.
    pub fn add(&mut self, o: &Merged) {
        self.unique_blocks += o.unique_blocks;
        self.unique_bytes += o.unique_bytes;
        self.blocks += o.blocks;
        self.logical_bytes += o.logical_bytes;
        self.refs.merge(&o.refs);
    }

    pub(crate) fn refs(&self) -> Refs {
        self.refs
    }

    /// The reference-count histogram, as the report has it.
    pub fn references(&self) -> Vec<RefBucket> {
        histogram(&self.refs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys spread like hashes, some repeated, a few short blocks.
    fn blocks(n: usize, seed: u64) -> Vec<(u64, u32)> {
        let mut x = seed | 1;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // About a third of the blocks repeat an earlier key.
                let key = if i % 3 == 2 {
                    (x % 1000).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                } else {
                    x
                };
                (
                    key,
                    if key % 50 == 0 {
                        100 + (key % 3000) as u32
                    } else {
                        4096
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_batch_reads_back_as_written_and_refuses_other_versions_and_garbage() {
        for mut b in map(blocks(10_000, 3), 7, 4096) {
            b.carry = 2;
            b.carried = (0..b.entries.len() as u32 * 2).collect();
            b.shift = 8;
            for e in &mut b.entries {
                e.0 &= !0xff;
            }
            b.entries.dedup_by_key(|e| e.0);
            b.carried = (0..b.entries.len() as u32 * 2).collect();
            b.files = (0..b.entries.len() as u32)
                .flat_map(|i| [(i, 3, 1), (i, 9, i as u64 + 1)])
                .collect();
            let bytes = b.encode();
            assert_eq!(Batch::decode(&bytes).unwrap(), b);
            let mut other = bytes.clone();
            other[3] = 2;
            assert_eq!(Batch::decode(&other), Err(BatchError::Version { found: 2 }));
            assert!(Batch::decode(&bytes[..bytes.len() - 1]).is_err());
            assert_eq!(Batch::decode(b"nope"), Err(BatchError::NotABatch));
        }
    }

    #[test]
    fn merged_shards_count_exactly_what_one_machine_counts() {
        let all = blocks(30_000, 11);
        // Each key's length is a function of the key here, as in real data.
        let whole = {
            let mut m = Merged::default();
            for b in map(all.iter().copied(), 1, 4096) {
                m.add(&Merged::partition(&[&b]));
            }
            m
        };
        for (shards, partitions) in [(3usize, 16u32), (5, 256), (1, 3)] {
            let maps: Vec<Vec<Batch>> = all
                .chunks(all.len().div_ceil(shards))
                .map(|c| map(c.iter().copied(), partitions, 4096))
                .collect();
            let mut total = Merged::default();
            for p in 0..partitions {
                // Batches travel encoded.
                let batches: Vec<Batch> = maps
                    .iter()
                    .flatten()
                    .filter(|b| b.partition == p)
                    .map(|b| Batch::decode(&b.encode()).unwrap())
                    .collect();
                total.add(&Merged::partition(&batches.iter().collect::<Vec<_>>()));
            }
            assert_eq!(total, whole, "{shards} shards, {partitions} partitions");
            assert_eq!(total.references(), whole.references());
        }
        assert_eq!(whole.blocks, all.len() as u64);
    }

    #[test]
    fn a_fingerprint_costs_at_most_eight_bytes_on_the_wire() {
        // 10^6 distinct 4 KiB blocks, as from ~4 GiB of data, in 16 partitions: keys 2^44
        // apart on average, so a delta takes 6-7 bytes and the tag one.
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let keys: Vec<(u64, u32)> = (0..1_000_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x, 4096)
            })
            .collect();
        let bytes: usize = map(keys, 16, 4096).iter().map(|b| b.encode().len()).sum();
        let per = bytes as f64 / 1e6;
        assert!(per <= 8.0, "{per:.2} bytes per fingerprint");
        // A record per block (key, length and count as they are held, 16 bytes) is twice that.
        assert!(per * 2.0 <= 16.0);
    }
}
