//! Fingerprints as they cross a wire between machines: per partition of the key space, one
//! packed batch of (key, length, count), sorted and delta-coded, with one header per batch
//! carrying a format version; never a message per block. A map side folds its blocks into
//! batches ([`map`]); a reduce side counts one partition's batches from every map exactly,
//! whatever way the data was split ([`crate::mapreduce::reduce_partition`]).
//!
//! Encoding (integers LEB128 varints unless said): magic `TRB`, version byte, partition, block
//! size, key shift (the low bits a key does not keep, not shipped), entry count; then, if there
//! are entries, the first key shifted right by the key shift, a Rice parameter k, and the byte
//! length of a bit stream holding each next key's difference from the one before (shifted
//! likewise) Rice-coded: the quotient by 2^k in unary (ones and a zero; 64 ones escape to the
//! difference in 64 bits), then its k low bits, least significant bit first (about 1.5 bits
//! over log2 of the mean gap, where varints spend a byte per 7 bits). Then per entry a tag
//! `(count - 1) << 1 | short`, and the length only when `short` (a block shorter than the block
//! size: a file's tail). Then the number of values carried per entry and those values (the
//! allocated bytes of a compression unit per codec, entry-major); then 1 if the files holding
//! each entry follow (attribution), 0 if not; if they do, per entry `(first file + 1) << 1 |
//! more` (0 for none), and when `more` (several files, or the first holds only some of the
//! occurrences) the first file's occurrences, the number of other files, and per other file
//! its difference from the previous one and its occurrences. The varints and the layout are written here because the format is a
//! few lines and must not change with a library's version.

#[cfg(test)]
use trawl_report::RefBucket;

#[cfg(test)]
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

/// The Rice parameter for these differences: about log2 of their mean (uniformly spread keys
/// have nearly geometric gaps, for which that is within a fraction of a bit of the best).
fn rice_parameter(deltas: &[u64]) -> u32 {
    if deltas.is_empty() {
        return 0;
    }
    let mean = deltas.iter().map(|d| *d as u128).sum::<u128>() / deltas.len() as u128;
    (127 - mean.max(1).leading_zeros()).min(63)
}

/// A quotient past this is written as an escape: this many ones, then the value in 64 bits.
const RICE_ESCAPE: u64 = 64;

/// Rice codes, least significant bit first: each value's quotient by 2^k in unary (ones and a
/// zero), then its low k bits. Written here: a few lines, and the layout is the format's.
fn rice_encode(values: &[u64], k: u32) -> Vec<u8> {
    let mut w = BitWriter::default();
    for &v in values {
        let q = v >> k;
        if q >= RICE_ESCAPE {
            w.bits(u64::MAX, RICE_ESCAPE as u32);
            w.bits(v, 64);
            continue;
        }
        w.bits((1u64 << q) - 1, q as u32 + 1); // q ones, then a zero
        w.bits(v, k);
    }
    w.finish()
}

#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u128,
    n: u32,
}

impl BitWriter {
    /// Appends the low `n` bits of `v` (n <= 64).
    fn bits(&mut self, v: u64, n: u32) {
        let v = if n == 64 { v } else { v & ((1u64 << n) - 1) };
        self.acc |= (v as u128) << self.n;
        self.n += n;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

struct BitReader<'a> {
    b: &'a [u8],
    /// The next bit's place.
    at: usize,
}

impl BitReader<'_> {
    fn bit(&mut self) -> Result<u64, BatchError> {
        let byte = *self.b.get(self.at / 8).ok_or(BatchError::Truncated)?;
        let v = (byte >> (self.at % 8)) & 1;
        self.at += 1;
        Ok(v as u64)
    }

    fn bits(&mut self, n: u32) -> Result<u64, BatchError> {
        let mut v = 0u64;
        for i in 0..n {
            v |= self.bit()? << i;
        }
        Ok(v)
    }

    fn rice(&mut self, k: u32) -> Result<u64, BatchError> {
        let mut q = 0u64;
        while self.bit()? == 1 {
            q += 1;
            if q == RICE_ESCAPE {
                return self.bits(64);
            }
        }
        let low = self.bits(k)?;
        q.checked_shl(k)
            .filter(|x| x >> k == q)
            .map(|x| x | low)
            .ok_or(BatchError::NotABatch)
    }
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
        // The keys: the first as a varint, the differences after it Rice-coded.
        let deltas: Vec<u64> = self
            .entries
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) >> self.shift)
            .collect();
        if let Some(first) = self.entries.first() {
            put(&mut out, first.0 >> self.shift);
            let k = rice_parameter(&deltas);
            let bits = rice_encode(&deltas, k);
            put(&mut out, k as u64);
            put(&mut out, bits.len() as u64);
            out.extend_from_slice(&bits);
        }
        for &(_, len, count) in &self.entries {
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
        put(&mut out, u64::from(!self.files.is_empty()));
        if !self.files.is_empty() {
            let mut rest = &self.files[..];
            for (i, e) in self.entries.iter().enumerate() {
                let k = rest.iter().take_while(|f| f.0 as usize == i).count();
                let (mine, next) = rest.split_at(k);
                rest = next;
                let Some(&(_, f0, n0)) = mine.first() else {
                    put(&mut out, 0);
                    continue;
                };
                // The common case in one varint: one file holds every occurrence.
                let more = mine.len() > 1 || n0 != e.2;
                put(&mut out, (f0 as u64 + 1) << 1 | u64::from(more));
                if more {
                    put(&mut out, n0);
                    put(&mut out, mine.len() as u64 - 1);
                    for w in mine.windows(2) {
                        put(&mut out, (w[1].1 - w[0].1) as u64);
                        put(&mut out, w[1].2);
                    }
                }
            }
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
        let keys = decode_keys(b, &mut at, n, shift)?;
        let entries = decode_entries(b, &mut at, keys, block_size)?;
        let carry = get(b, &mut at)? as u32;
        let values = (carry as u64).checked_mul(n).ok_or(BatchError::NotABatch)?;
        let mut carried = Vec::with_capacity(values.min(1 << 20) as usize);
        for _ in 0..values {
            carried.push(u32::try_from(get(b, &mut at)?).map_err(|_| BatchError::NotABatch)?);
        }
        let files = decode_files(b, &mut at, &entries)?;
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

/// A batch's `n` keys: the first, then the gaps Rice-coded; each kept shifted right by
/// `shift` bits (that many low bits always zero).
fn decode_keys(b: &[u8], at: &mut usize, n: u64, shift: u8) -> Result<Vec<u64>, BatchError> {
    let mut keys = Vec::with_capacity(n.min(1 << 20) as usize);
    if n == 0 {
        return Ok(keys);
    }
    let unshift = |d: u64| {
        d.checked_shl(shift as u32)
            .filter(|x| x >> shift == d)
            .ok_or(BatchError::NotABatch)
    };
    let mut key = unshift(get(b, at)?)?;
    keys.push(key);
    let k = get(b, at)?;
    if k > 63 {
        return Err(BatchError::NotABatch);
    }
    let len = usize::try_from(get(b, at)?).map_err(|_| BatchError::Truncated)?;
    let end = at.checked_add(len).ok_or(BatchError::Truncated)?;
    let bits = b.get(*at..end).ok_or(BatchError::Truncated)?;
    *at = end;
    let mut r = BitReader { b: bits, at: 0 };
    for _ in 1..n {
        let d = r.rice(k as u32)?;
        if d == 0 {
            return Err(BatchError::NotABatch); // keys must increase
        }
        key = key.checked_add(unshift(d)?).ok_or(BatchError::NotABatch)?;
        keys.push(key);
    }
    Ok(keys)
}

/// Each key's entry: (key, length, occurrences); the length is `block_size` unless its tag
/// says it follows.
fn decode_entries(
    b: &[u8],
    at: &mut usize,
    keys: Vec<u64>,
    block_size: u32,
) -> Result<Vec<(u64, u32, u64)>, BatchError> {
    let mut entries = Vec::with_capacity(keys.len());
    for key in keys {
        let tag = get(b, at)?;
        let len = if tag & 1 == 1 {
            get(b, at)? as u32
        } else {
            block_size
        };
        entries.push((key, len, (tag >> 1) + 1));
    }
    Ok(entries)
}

/// Which files hold each of `entries` (entry, file, occurrences), where the map sent them:
/// per entry its first file, then the others by the gap from the last.
fn decode_files(
    b: &[u8],
    at: &mut usize,
    entries: &[(u64, u32, u64)],
) -> Result<Vec<(u32, u32, u64)>, BatchError> {
    let mut files = Vec::new();
    let file_of = |v: u64| u32::try_from(v).map_err(|_| BatchError::NotABatch);
    if get(b, at)? != 1 {
        return Ok(files);
    }
    for (i, e) in entries.iter().enumerate() {
        let head = get(b, at)?;
        if head == 0 {
            continue;
        }
        let mut file = file_of((head >> 1) - 1)?;
        if head & 1 == 0 {
            files.push((i as u32, file, e.2));
            continue;
        }
        files.push((i as u32, file, get(b, at)?));
        for _ in 0..get(b, at)? {
            let d = file_of(get(b, at)?)?;
            file = file.checked_add(d).ok_or(BatchError::NotABatch)?;
            files.push((i as u32, file, get(b, at)?));
        }
    }
    Ok(files)
}

/// A map's blocks (key and length; zero blocks left out by the caller) folded into one batch
/// per partition that has any (the tests' way to make batches).
#[cfg(test)]
fn map(
    blocks: impl IntoIterator<Item = (u64, u32)>,
    partitions: u32,
    block_size: u32,
) -> Vec<Batch> {
    use std::collections::BTreeMap;
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
#[cfg(test)]
pub type KeySeen<'a> = dyn FnMut(u64, u32, u64, &[u32]) + 'a;

/// One partition counted from the batches of every map by a k-way merge of their sorted keys:
/// the tests' reference for what the batches carry (reduces count with the table instead, see
/// [`crate::mapreduce::reduce_partition`]).
#[cfg(test)]
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Merged {
    pub unique_blocks: u64,
    pub unique_bytes: u64,
    pub blocks: u64,
    pub logical_bytes: u64,
    refs: Refs,
}

#[cfg(test)]
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
            // Every kind of entry: one file holding every occurrence, several files, a file
            // holding some, and none.
            b.files = b
                .entries
                .iter()
                .enumerate()
                .flat_map(|(i, e)| match i % 4 {
                    0 => vec![(i as u32, 5, e.2)],
                    1 => vec![(i as u32, 3, 1), (i as u32, 9, i as u64 + 1)],
                    2 => vec![(i as u32, 70, e.2 + 1)],
                    _ => vec![],
                })
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
    fn keys_far_apart_and_keys_side_by_side_read_back() {
        // A gap past the escape among gaps of 1 (k = 0), and a batch of one key.
        for keys in [
            vec![1u64, 2, 3, 1 << 60, (1 << 60) + 5, u64::MAX],
            vec![7],
            (0..1000u64).map(|i| i * 8 + (i % 7)).collect(),
        ] {
            let b = Batch {
                partition: 0,
                block_size: 4096,
                entries: keys.iter().map(|k| (*k, 4096, 1)).collect(),
                ..Batch::default()
            };
            assert_eq!(Batch::decode(&b.encode()).unwrap(), b);
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
    fn a_fingerprint_costs_at_most_seven_bytes_on_the_wire() {
        // 10^6 distinct 4 KiB blocks, as from ~4 GiB of data, in 16 partitions: keys 2^44
        // apart on average.
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
        // Gaps of about 2^44: 45.5 bits Rice-coded, and the tag's byte.
        assert!(per <= 7.0, "{per:.2} bytes per fingerprint");
        // A record per block (key, length and count as they are held, 16 bytes) is twice that.
        assert!(per * 2.0 <= 16.0);
    }
}
