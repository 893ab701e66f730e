//! The reduction split across machines: a map folds one shard's files into a packed batch per
//! fingerprint partition and its totals ([`Mapper`]); a reduce counts one partition from every
//! map's batch ([`reduce_partition`]) with the table one machine counts a key partition with
//! ([`crate::counter`]); the client sums the partitions and the totals into the
//! figures one machine would give ([`assemble`]).
//!
//! Every figure is exact against [`Accumulator`](crate::Accumulator) over the same files: unique
//! counts and the reference histogram are sums over disjoint key partitions; compression's
//! combined figure sums each distinct unit's allocated bytes once (they depend only on its
//! bytes, so whichever map carries them carries the same); per-file attribution sums each
//! file's share per partition. Keys are the top 64 bits of each 128-bit fingerprint. Sampled
//! runs are not mapped (their threshold would need to be the same on every map; refused by the
//! caller).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use trawl_report::{Breakdown, ReductionJson, TopFile};

use crate::attribution::{RefBytes, Share, saved, share, static_kind};
use crate::batch::{Batch, BatchError, get, partition_of, put};
use crate::breakdown::BreakdownBuilder;
use crate::config::ReduceConfig;
use crate::dedup::{Dedup, Refs, ref_bucket};
use crate::facts::FileReduce;
use crate::figures::{Figures, cut_sizes, dedup_counts};
use crate::totals::Totals;

/// What one map sums that no key decides ([`Totals`]), and the names of the files it numbered
/// (for attribution), in number order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MapTotals {
    /// The sums (on the wire, their fields sit beside the others).
    #[serde(flatten)]
    pub sums: Totals,
    /// The files numbered, by number.
    pub files: Vec<String>,
    /// Per file numbered (with the breakdowns): its bytes, the bytes the first codec stores of
    /// its non-zero units, and its format.
    #[serde(default)]
    pub file_facts: Vec<(u64, u64, Option<String>)>,
    /// Fingerprints this map ships: its distinct keys, summed over the ways of cutting.
    #[serde(default)]
    pub fingerprints: u64,
}

/// A map's product: its totals, and one encoded batch set per partition (see `encode_part`).
#[derive(Debug, Clone, Default)]
pub struct MapOutput {
    /// What the map summed, and the files it numbered.
    pub totals: MapTotals,
    /// One encoded batch set per fingerprint partition, by partition.
    pub partitions: Vec<Vec<u8>>,
}

/// One way of cutting, on the map side: each distinct key's (length, occurrences, where its
/// carried values start). Keys are hashes already, so they index the map as they are (rotated
/// so that the 8 low bits a 56-bit key leaves zero land at the top).
type WayKeys = nohash_hasher::IntMap<u64, (u32, u64, u32)>;

fn slot(key: u64) -> u64 {
    key.rotate_right(8)
}

fn unslot(s: u64) -> u64 {
    s.rotate_left(8)
}

/// Folds one shard's files (the facts [`FileReducer`](crate::FileReducer) makes) into batches.
pub struct Mapper {
    cfg: Arc<ReduceConfig>,
    partitions: u32,
    sizes: Vec<usize>,
    unit_index: usize,
    ways: Vec<WayKeys>,
    carried: Vec<u32>,
    /// (key, file) of each non-zero block at the smallest size, counted at the end.
    files: Vec<(u64, u32)>,
    /// The files' names as bytes, by the number they were registered under (see `finish`).
    names: Vec<Vec<u8>>,
    totals: MapTotals,
    buf: Vec<u8>,
}

/// The key a fingerprint travels as: the bits one machine's index keeps (the top 56 of the
/// fingerprint, or 64 with `exact_keys`), so that a cluster merges exactly the blocks one
/// machine merges.
fn key_of(fp: u128, exact: bool) -> u64 {
    let k = (fp >> 64) as u64;
    if exact { k } else { k & !0xff }
}

impl Mapper {
    /// A mapper folding files into `partitions` partitions' batches.
    pub fn new(cfg: Arc<ReduceConfig>, partitions: u32) -> Mapper {
        let (sizes, unit_index) = cut_sizes(&cfg);
        let nways = sizes.len() + usize::from(cfg.cdc_avg.is_some());
        let n = cfg.codecs.len();
        Mapper {
            partitions: partitions.max(1),
            ways: vec![WayKeys::default(); nways],
            carried: Vec::new(),
            files: Vec::new(),
            names: Vec::new(),
            totals: MapTotals {
                sums: Totals::new(nways, n),
                ..MapTotals::default()
            },
            buf: Vec::new(),
            sizes,
            unit_index,
            cfg,
        }
    }

    /// Numbers a file for attribution (its name as reports spell it). The number holds while
    /// the map runs; the output numbers files by name (see [`Mapper::finish`]).
    pub fn register(&mut self, name: &[u8]) -> u32 {
        self.names.push(name.to_vec());
        (self.names.len() - 1) as u32
    }

    /// Counts file `id` under another name (a hard link's name chosen at the end).
    pub fn rename(&mut self, id: u32, name: &[u8]) {
        if let Some(n) = self.names.get_mut(id as usize) {
            *n = name.to_vec();
        }
    }

    /// Folds in one file, or a part of it (whole groups of blocks).
    pub fn add(&mut self, f: &FileReduce) {
        let ncodec = self.cfg.codecs.len();
        let attributing = self.cfg.attributing();
        let exact = self.cfg.exact_keys;
        // What the first codec stores of this file's non-zero units (for the breakdowns).
        let mut stored = 0u64;
        for idx in 0..self.sizes.len() {
            let is_unit = idx == self.unit_index;
            let (totals, keys, carried, files) = (
                &mut self.totals,
                &mut self.ways[idx],
                &mut self.carried,
                &mut self.files,
            );
            f.for_each_block(self.sizes[idx], &mut self.buf, &mut |g, fp, len, zero| {
                let key = key_of(fp, exact);
                if is_unit && ncodec > 0 {
                    if !zero {
                        stored += f.units[g * ncodec].1 as u64;
                    }
                    let sizes = &f.units[g * ncodec..(g + 1) * ncodec];
                    totals.sums.add_unit(len as u64, zero, sizes);
                }
                totals.sums.ways[idx].add(len as u64, zero);
                if zero {
                    return;
                }
                let at = carried.len() as u32;
                let e = keys.entry(slot(key)).or_insert((len, 0, at));
                if e.1 == 0 && is_unit {
                    carried.extend((0..ncodec).map(|c| f.units[g * ncodec + c].1));
                }
                e.1 += 1;
                if idx == 0
                    && attributing
                    && let Some(file) = f.file
                {
                    files.push((key, file));
                }
            });
        }
        if let Some(id) = f.file
            && attributing
            && self.cfg.breakdown.is_some()
        {
            self.add_facts(id, f, stored);
        }
        if self.cfg.cdc_avg.is_some() {
            self.add_chunks(f);
        }
    }

    /// File `id`'s facts for the breakdowns: its bytes, what the first codec stores of them
    /// (`stored`), its format.
    #[inline]
    fn add_facts(&mut self, id: u32, f: &FileReduce, stored: u64) {
        let facts = &mut self.totals.file_facts;
        if facts.len() <= id as usize {
            facts.resize(id as usize + 1, (0, 0, None));
        }
        let e = &mut facts[id as usize];
        e.0 += f.size;
        e.1 += stored;
        if e.2.is_none() {
            e.2 = f.kind.map(str::to_string);
        }
    }

    /// The file's CDC chunks summed, and the non-zero ones counted by key.
    #[inline]
    fn add_chunks(&mut self, f: &FileReduce) {
        let w = self.sizes.len();
        for (fp, len, zero) in &f.chunks {
            self.totals.sums.add_chunk(w, *len as u64, *zero);
            if *zero {
                continue;
            }
            self.ways[w]
                .entry(slot(key_of(*fp, self.cfg.exact_keys)))
                .or_insert((*len, 0, 0))
                .1 += 1;
        }
    }

    /// The totals and one encoded batch set per partition (every partition has one, empty or
    /// not, so that a reducer knows it heard from every map). Files are numbered in the
    /// order of their names' bytes, not in the order their reads finished: the output is a
    /// function of the files alone, whatever the threads (a map computed again after its worker
    /// was lost gives what the reducers already counted).
    pub fn finish(mut self) -> MapOutput {
        self.number_by_name();
        let p = self.partitions as usize;
        let ncodec = self.cfg.codecs.len();
        let mut parts: Vec<Vec<Batch>> = (0..p)
            .map(|q| {
                self.ways
                    .iter()
                    .enumerate()
                    .map(|(idx, _)| Batch {
                        partition: q as u32,
                        block_size: self.sizes.get(idx).map_or(0, |s| *s as u32),
                        shift: if self.cfg.exact_keys { 0 } else { 8 },
                        carry: if idx == self.unit_index {
                            ncodec as u32
                        } else {
                            0
                        },
                        ..Batch::default()
                    })
                    .collect()
            })
            .collect();
        for (idx, keys) in self.ways.iter().enumerate() {
            let mut sorted: Vec<(u64, (u32, u64, u32))> =
                keys.iter().map(|(k, v)| (unslot(*k), *v)).collect();
            sorted.sort_unstable_by_key(|e| e.0);
            for (key, (len, count, at)) in sorted {
                let b = &mut parts[partition_of(key, self.partitions) as usize][idx];
                b.entries.push((key, len, count));
                if b.carry > 0 {
                    let at = at as usize;
                    b.carried.extend_from_slice(&self.carried[at..at + ncodec]);
                }
            }
        }
        let mut totals = self.totals;
        totals.fingerprints = self.ways.iter().map(|w| w.len() as u64).sum();
        let mut files = self.files;
        files.sort_unstable();
        let counted = files
            .chunk_by(|a, b| a == b)
            .map(|run| (run[0], run.len() as u64));
        for ((key, file), n) in counted {
            let b = &mut parts[partition_of(key, self.partitions) as usize][0];
            let entry = b
                .entries
                .binary_search_by_key(&key, |e| e.0)
                .expect("a file's key is among the entries");
            b.files.push((entry as u32, file, n));
        }
        MapOutput {
            totals,
            partitions: parts.iter().map(|b| encode_part(b)).collect(),
        }
    }
}

impl Mapper {
    /// Numbers the registered files in their names' byte order: the names, their facts and
    /// every block's file, renumbered.
    fn number_by_name(&mut self) {
        // A file folded in under a number it was not registered with has no name.
        let numbered = self
            .files
            .iter()
            .map(|(_, f)| *f as usize + 1)
            .max()
            .unwrap_or(0);
        let n = self
            .names
            .len()
            .max(numbered)
            .max(self.totals.file_facts.len());
        self.names.resize(n, Vec::new());
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by(|a, b| self.names[*a as usize].cmp(&self.names[*b as usize]));
        let mut new = vec![0u32; n];
        for (to, from) in order.iter().enumerate() {
            new[*from as usize] = to as u32;
        }
        let names = std::mem::take(&mut self.names);
        self.totals.files = order
            .iter()
            .map(|i| String::from_utf8_lossy(&names[*i as usize]).into_owned())
            .collect();
        let facts = std::mem::take(&mut self.totals.file_facts);
        if !facts.is_empty() {
            self.totals.file_facts = order
                .iter()
                .map(|i| facts.get(*i as usize).cloned().unwrap_or((0, 0, None)))
                .collect();
        }
        for (_, file) in &mut self.files {
            *file = new[*file as usize];
        }
    }
}

/// One map's batches of one partition (one per way of cutting), each behind its length.
pub fn encode_part(batches: &[Batch]) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, batches.len() as u64);
    for b in batches {
        let e = b.encode();
        put(&mut out, e.len() as u64);
        out.extend_from_slice(&e);
    }
    out
}

/// Reads back what [`encode_part`] wrote.
pub fn decode_part(b: &[u8]) -> Result<Vec<Batch>, BatchError> {
    let mut at = 0;
    let n = get(b, &mut at)?;
    let mut out = Vec::with_capacity(n.min(64) as usize);
    for _ in 0..n {
        let len = usize::try_from(get(b, &mut at)?).map_err(|_| BatchError::Truncated)?;
        let end = at.checked_add(len).ok_or(BatchError::Truncated)?;
        out.push(Batch::decode(b.get(at..end).ok_or(BatchError::Truncated)?)?);
        at = end;
    }
    if at != b.len() {
        return Err(BatchError::NotABatch);
    }
    Ok(out)
}

/// One partition counted from every map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartitionResult {
    /// Per way of cutting: its distinct records in this partition.
    pub ways: Vec<WayResult>,
    /// Per reference-count bucket of the smallest size: (bytes of every occurrence, bytes
    /// stored once as summed `1/c` shares, in parts of a byte); empty when not attributing.
    pub ref_bytes: Vec<(u64, Share)>,
    /// (map, file, duplicate bytes, share of the saving) for each file with a duplicate block
    /// in this partition, ordered by map then file.
    pub shares: Vec<(u32, u32, u64, Share)>,
    /// Bytes this reduce held at its peak: every map's batches decoded, and the smallest
    /// size's counts kept for the attribution.
    #[serde(default)]
    pub held_bytes: u64,
}

/// One way of cutting's distinct records in one partition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WayResult {
    /// Distinct non-zero keys.
    pub unique_blocks: u64,
    /// Their bytes (each counted once).
    pub unique_bytes: u64,
    refs: Refs,
    /// Carried values summed over the distinct keys (the combined allocated bytes per codec).
    pub carried: Vec<u64>,
}

/// Why a partition could not be counted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ReduceError {
    /// A map's batch could not be decoded.
    #[error("map {map}: {source}")]
    Batch {
        /// The map's place in the reduce's input.
        map: usize,
        /// What was wrong with its batch.
        source: BatchError,
    },
    /// Two maps cut their data a different number of ways.
    #[error("map {map} cut its data {found} ways, map 0 {expected}: made by another configuration")]
    Ways {
        /// The map's place in the reduce's input.
        map: usize,
        /// Its ways of cutting.
        found: usize,
        /// Map 0's.
        expected: usize,
    },
}

/// Counts one partition from each map's encoded batch set, given in map order (a file's map
/// number in the attribution is its place in `parts`).
pub fn reduce_partition(parts: &[&[u8]]) -> Result<PartitionResult, ReduceError> {
    let decoded: Vec<Vec<Batch>> = parts
        .iter()
        .enumerate()
        .map(|(map, b)| decode_part(b).map_err(|source| ReduceError::Batch { map, source }))
        .collect::<Result<_, _>>()?;
    let nways = decoded.first().map_or(0, Vec::len);
    for (map, d) in decoded.iter().enumerate() {
        if d.len() != nways {
            return Err(ReduceError::Ways {
                map,
                found: d.len(),
                expected: nways,
            });
        }
    }
    let mut out = PartitionResult {
        held_bytes: decoded
            .iter()
            .flatten()
            .map(|b| {
                (b.entries.len() * size_of::<(u64, u32, u64)>()
                    + b.carried.len() * 4
                    + b.files.len() * size_of::<(u32, u32, u64)>()) as u64
            })
            .sum(),
        ..PartitionResult::default()
    };
    let mut first: Option<Dedup> = None;
    for w in 0..nways {
        let d = count_way(&decoded, w);
        out.held_bytes += d.memory_bytes();
        out.ways.push(WayResult {
            unique_blocks: d.found.blocks,
            unique_bytes: d.found.bytes,
            refs: d.refs(),
            carried: d.found.carried.clone(),
        });
        if w == 0 {
            first = Some(d);
        }
    }
    if let Some(d0) = first.filter(|_| decoded.iter().any(|d| !d[0].files.is_empty())) {
        attribute(&decoded, &d0, &mut out);
    }
    Ok(out)
}

/// Way `w`'s distinct keys, counted as one machine counts a key partition's (the same table,
/// staging and rules): every map's entries staged with their occurrences.
fn count_way(decoded: &[Vec<Batch>], w: usize) -> Dedup {
    let b0 = decoded.first().map(|d| &d[w]);
    let carry = b0.map_or(0, |b| b.carry as usize);
    let exact = b0.is_some_and(|b| b.shift == 0);
    let mut d = Dedup::new(b0.map_or(0, |b| b.block_size), carry, exact, 0);
    let none = vec![0u32; carry];
    for b in decoded.iter().map(|d| &d[w]) {
        for (i, &(key, len, count)) in b.entries.iter().enumerate() {
            let c = b.carried.get(i * carry..(i + 1) * carry).unwrap_or(&none);
            d.insert_n((key as u128) << 64, len, c, count);
        }
    }
    d.flush();
    d
}

/// The attribution of the first way's files: bytes per reference bucket, and each map's
/// files' shares of the duplicates (`d0`: that way's counts).
fn attribute(decoded: &[Vec<Batch>], d0: &Dedup, out: &mut PartitionResult) {
    let mut ref_bytes: RefBytes = [(0, 0); 13];
    let mut shares: BTreeMap<(u32, u32), (u64, Share)> = BTreeMap::new();
    for (map, d) in decoded.iter().enumerate() {
        for &(entry, file, n) in &d[0].files {
            let Some(&(key, len, _)) = d[0].entries.get(entry as usize) else {
                continue; // an entry the map did not send: not made by a Mapper
            };
            let c = d0.table.count((key as u128) << 64);
            let b = ref_bucket(c);
            ref_bytes[b].0 += len as u64 * n;
            // Each occurrence's share rounded as one machine rounds it, then summed.
            ref_bytes[b].1 += share(len, 1, c) * Share::from(n);
            if c >= 2 {
                let s = shares.entry((map as u32, file)).or_insert((0, 0));
                s.0 += len as u64 * n;
                s.1 += share(len, c - 1, c) * Share::from(n);
            }
        }
    }
    out.ref_bytes = ref_bytes.to_vec();
    out.shares = shares
        .into_iter()
        .map(|((m, f), (d, s))| (m, f, d, s))
        .collect();
}

/// The report's reduction figures from every map's totals (in map order, as the partitions
/// were reduced) and every partition's counts; with the breakdowns by directory and type when
/// the configuration asks for them (their rows wait under `cfg.temp_dir`).
pub fn assemble(
    cfg: &ReduceConfig,
    maps: &[MapTotals],
    parts: &[PartitionResult],
) -> std::io::Result<(ReductionJson, Option<Breakdown>)> {
    let (sizes, unit_index) = cut_sizes(cfg);
    let nways = sizes.len() + usize::from(cfg.cdc_avg.is_some());
    let mut sums = Totals::new(nways, cfg.codecs.len());
    for m in maps {
        sums.merge(&m.sums);
    }
    let counts = |w: usize| {
        let t = sums.ways.get(w).copied().unwrap_or_default();
        let (mut unique_blocks, mut unique_bytes, mut refs) = (0, 0, Refs::default());
        for p in parts {
            if let Some(r) = p.ways.get(w) {
                unique_blocks += r.unique_blocks;
                unique_bytes += r.unique_bytes;
                refs.merge(&r.refs);
            }
        }
        dedup_counts(&t, unique_blocks, unique_bytes, &refs, None)
    };
    let combined = combined_of(parts, unit_index, cfg.codecs.len());
    let mut chunk_sizes = [0u64; 64];
    chunk_sizes.copy_from_slice(&sums.chunk_sizes[..64]);
    let attributing = cfg.attributing();
    let ref_bytes = attributing.then(|| ref_bytes_of(parts));
    let per = attributing.then(|| shares(parts));
    let top = per
        .as_ref()
        .filter(|_| cfg.top_files > 0)
        .map(|per| rank(maps, per, cfg, sizes[0]));
    let breakdown = match (&cfg.breakdown, &per) {
        (Some(b), Some(per)) => Some(breakdown_of(cfg, b, maps, per)?),
        _ => None,
    };
    let reduction = Figures {
        sizes: sizes
            .iter()
            .enumerate()
            .map(|(w, s)| (*s, counts(w)))
            .collect(),
        ref_bytes,
        cdc: cfg.cdc_avg.map(|_| (counts(nways - 1), chunk_sizes)),
        combined,
        totals: sums,
        top,
        attributing,
    }
    .report(cfg);
    Ok((reduction, breakdown))
}

/// The combined figure per codec: the unit way's carried sums over every partition.
fn combined_of(parts: &[PartitionResult], unit_index: usize, ncodec: usize) -> Vec<u64> {
    let mut combined = vec![0u64; ncodec];
    for p in parts {
        if let Some(r) = p.ways.get(unit_index) {
            for (a, b) in combined.iter_mut().zip(&r.carried) {
                *a += b;
            }
        }
    }
    combined
}

/// Bytes per reference bucket, over every partition.
fn ref_bytes_of(parts: &[PartitionResult]) -> RefBytes {
    let mut rb: RefBytes = [(0, 0); 13];
    for p in parts {
        for (a, b) in rb.iter_mut().zip(&p.ref_bytes) {
            a.0 += b.0;
            a.1 += b.1;
        }
    }
    rb
}

/// The breakdowns by directory and type, from every map's files and their shares of the
/// duplicates (their rows wait under `cfg.temp_dir`).
fn breakdown_of(
    cfg: &ReduceConfig,
    b: &crate::config::BreakdownConfig,
    maps: &[MapTotals],
    per: &HashMap<(u32, u32), (u64, Share)>,
) -> std::io::Result<Breakdown> {
    let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut builder = BreakdownBuilder::new(b.clone(), &dir);
    for (m, t) in maps.iter().enumerate() {
        for (f, name) in t.files.iter().enumerate() {
            let (dup, share) = per.get(&(m as u32, f as u32)).copied().unwrap_or_default();
            let (bytes, stored, kind) = t.file_facts.get(f).cloned().unwrap_or_default();
            let kind = kind.as_deref().and_then(|k| static_kind(k.as_bytes()));
            builder.add(name.as_bytes(), bytes, dup, share, stored, kind)?;
        }
    }
    builder.finish()
}

/// Each file's (duplicate bytes, share of the saving), summed over the partitions.
fn shares(parts: &[PartitionResult]) -> HashMap<(u32, u32), (u64, Share)> {
    let mut per: HashMap<(u32, u32), (u64, Share)> = HashMap::new();
    for p in parts {
        for &(m, f, d, s) in &p.shares {
            let e = per.entry((m, f)).or_insert((0, 0));
            e.0 += d;
            e.1 += s;
        }
    }
    per
}

/// The files with the largest share of the saving, ties by name (as one machine ranks them).
fn rank(
    maps: &[MapTotals],
    per: &HashMap<(u32, u32), (u64, Share)>,
    cfg: &ReduceConfig,
    block_size: usize,
) -> Vec<TopFile> {
    let mut best: Vec<(Share, &str, u64)> = per
        .iter()
        .filter(|(_, (d, _))| *d > 0)
        .map(|(&(m, f), &(d, s))| {
            let name = maps
                .get(m as usize)
                .and_then(|t| t.files.get(f as usize))
                .map_or("", String::as_str);
            (s, name, d)
        })
        .collect();
    best.sort_by(|a, b| saved(b.0).cmp(&saved(a.0)).then_with(|| a.1.cmp(b.1)));
    best.truncate(cfg.top_files);
    best.into_iter()
        .map(|(share, path, dup)| TopFile {
            path: path.to_string(),
            block_size: block_size as u64,
            duplicate_bytes: dup,
            saved_bytes: saved(share),
        })
        .collect()
}

#[cfg(test)]
mod tests;
