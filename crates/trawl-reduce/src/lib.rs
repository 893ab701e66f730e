//! Data reduction from the scan's own buffers: fixed-block dedup at several block sizes from one
//! hash pass, content-defined chunking (FastCDC 2020), compression per unit with real codecs, and
//! the combined figure a deduplicating, compressing array would show.
//!
//! [`FileReducer`] consumes one file's bytes in order (it is a scan lane: it runs on the thread
//! that owns the file) and returns a compact [`FileReduce`]: one XXH3-128 fingerprint per 4 KiB
//! block, per-unit compressed sizes, and CDC chunk fingerprints. [`Accumulator`] folds those into
//! the global counts through the hand-written [`table::FpTable`]; its result is order-independent
//! (a set of fingerprints, and sizes that depend only on content), so any scan order gives the
//! same report. The counting rules are stated in the README ("Data reduction") and in
//! [`Accumulator`].

pub mod codec;
pub mod lane;
pub mod spill;
pub mod table;

use std::sync::Arc;

pub use trawl_report::reduction::*;
use xxhash_rust::xxh3::xxh3_128;

pub use codec::{Codec, Compressor};
use table::FpTable;

/// The fingerprint granule: every fixed block size is a multiple of it.
pub const BASE: usize = 4096;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ReduceConfig {
    /// Fixed block sizes, each a multiple of 4 KiB, ascending.
    pub dedup_sizes: Vec<usize>,
    /// Content-defined chunking at this average size (min = avg/4, max = avg*4).
    pub cdc_avg: Option<usize>,
    pub codecs: Vec<Codec>,
    /// Compression unit (a multiple of 4 KiB).
    pub unit: usize,
    /// Allocation granule: each stored unit is rounded up to it.
    pub sector: usize,
    /// A unit is stored raw unless compression saves at least this fraction of it.
    pub threshold: f64,
    /// Sizes of units compressed lately, shared by all lanes (see [`SizeCache`]).
    pub size_cache: Arc<SizeCache>,
    /// Estimate from a sample: only blocks, chunks and units whose fingerprint falls under this
    /// fraction of the hash space are indexed and compressed (`--sample`).
    pub sample: Option<f64>,
    /// Bound on the fingerprint indexes in RAM; past it they spill to `temp_dir` (`--memory`).
    pub memory: Option<u64>,
    pub temp_dir: Option<std::path::PathBuf>,
    /// A large file's facts are folded in every this many 4 KiB blocks (see
    /// [`FileReducer::with_accumulator`]).
    pub flush_blocks: usize,
    /// Index all 128 bits of each fingerprint (no false merges in practice; ~40 bytes per
    /// distinct block instead of ~10).
    pub exact_keys: bool,
    /// List this many files that contribute most duplicate bytes (0: none).
    pub top_files: usize,
}

/// Compressed sizes of recently seen units by fingerprint, so that a duplicate unit is not
/// compressed again (the codecs are deterministic: equal bytes give equal sizes). A lossy,
/// direct-mapped cache of 131,072 entries in 64 locked shards (about 6 MiB): a miss only costs a
/// compression, so the results never depend on what it holds.
pub struct SizeCache {
    shards: Vec<std::sync::Mutex<Vec<CacheEntry>>>,
}

/// A unit fingerprint and its (compressed, allocated) sizes per codec.
type CacheEntry = (u128, [(u32, u32); CACHE_CODECS]);

const CACHE_CODECS: usize = 4;
const CACHE_SHARDS: usize = 64;
const CACHE_WAYS: usize = 2048;

impl Default for SizeCache {
    fn default() -> Self {
        SizeCache {
            shards: (0..CACHE_SHARDS)
                .map(|_| std::sync::Mutex::new(Vec::new()))
                .collect(),
        }
    }
}

impl std::fmt::Debug for SizeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SizeCache")
    }
}

impl SizeCache {
    fn slot(fp: u128) -> (usize, usize) {
        let h = fp as u64;
        (
            (h % CACHE_SHARDS as u64) as usize,
            ((h >> 6) % CACHE_WAYS as u64) as usize,
        )
    }

    fn get(&self, fp: u128, out: &mut [(u32, u32)]) -> bool {
        let (s, w) = Self::slot(fp);
        let shard = self.shards[s].lock().unwrap_or_else(|p| p.into_inner());
        match shard.get(w) {
            Some((k, v)) if *k == fp && fp != 0 => {
                out.copy_from_slice(&v[..out.len()]);
                true
            }
            _ => false,
        }
    }

    fn put(&self, fp: u128, sizes: &[(u32, u32)]) {
        let (s, w) = Self::slot(fp);
        let mut shard = self.shards[s].lock().unwrap_or_else(|p| p.into_inner());
        if shard.is_empty() {
            shard.resize(CACHE_WAYS, (0, [(0, 0); CACHE_CODECS]));
        }
        let mut v = [(0, 0); CACHE_CODECS];
        v[..sizes.len()].copy_from_slice(sizes);
        shard[w] = (fp, v);
    }
}

impl Default for ReduceConfig {
    fn default() -> Self {
        ReduceConfig {
            dedup_sizes: vec![4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10, 128 << 10],
            cdc_avg: None,
            codecs: vec![Codec::Lz4],
            unit: 32 << 10,
            sector: 4 << 10,
            threshold: 0.125,
            size_cache: Arc::default(),
            sample: None,
            memory: None,
            temp_dir: None,
            flush_blocks: 1 << 16,
            exact_keys: false,
            top_files: 10,
        }
    }
}

impl ReduceConfig {
    pub fn check(&self) -> Result<(), String> {
        for &b in &self.dedup_sizes {
            if b == 0 || !b.is_multiple_of(BASE) {
                return Err(format!("dedup block size {b}: must be a multiple of 4K"));
            }
        }
        if self.unit == 0 || !self.unit.is_multiple_of(BASE) {
            return Err(format!("unit {}: must be a multiple of 4K", self.unit));
        }
        if self.sector == 0 {
            return Err("sector must be at least 1 byte".into());
        }
        // A unit takes whole sectors: one larger than the unit would count every unit as a
        // sector, more than its bytes, a layout no array stores.
        if self.sector > self.unit {
            return Err(format!(
                "sector {} is larger than the unit {}: a unit is stored in whole sectors",
                self.sector, self.unit
            ));
        }
        if !(0.0..1.0).contains(&self.threshold) {
            return Err("threshold must be in [0, 1)".into());
        }
        if let Some(r) = self.sample
            && !(r > 0.0 && r <= 1.0)
        {
            return Err(format!("sample rate {r}: must be in (0, 1]"));
        }
        if let Some(a) = self.cdc_avg
            && !(1024..=(4 << 20)).contains(&a)
        {
            return Err(format!("cdc average {a}: must be between 1K and 4M"));
        }
        Ok(())
    }

    /// The 4 KiB-block count that every block size and the unit divide: flushing a file's facts
    /// at its multiples cuts no block in two.
    pub fn group(&self) -> usize {
        fn gcd(a: usize, b: usize) -> usize {
            if b == 0 { a } else { gcd(b, a % b) }
        }
        self.dedup_sizes
            .iter()
            .chain(std::iter::once(&self.unit))
            .map(|s| s / BASE)
            .fold(1, |l, k| l / gcd(l, k) * k)
    }

    /// Keys below this are in the sample (hash-threshold sampling: equal content, equal fate).
    pub fn sample_threshold(&self) -> Option<u64> {
        self.sample
            .filter(|r| *r < 1.0)
            .map(|r| (r * u64::MAX as f64) as u64)
    }

    fn cdc_bounds(&self) -> Option<(usize, usize, usize)> {
        self.cdc_avg.map(|a| (a / 4, a, a * 4))
    }

    /// Bytes allocated for a unit of `len` bytes that compressed to `c` bytes.
    pub fn allocated(&self, len: usize, c: usize) -> u64 {
        let stored = if (c as f64) > len as f64 * (1.0 - self.threshold) {
            len
        } else {
            c
        };
        stored.div_ceil(self.sector) as u64 * self.sector as u64
    }
}

/// The fingerprint of a block made of these 4 KiB blocks: its own for one, else XXH3-128 of
/// their fingerprints, 16 bytes each (a 128 KiB block costs hashing 512 bytes).
fn block_fp(fps: &[u128], buf: &mut Vec<u8>) -> u128 {
    if let [one] = fps {
        return *one;
    }
    buf.clear();
    for fp in fps {
        buf.extend_from_slice(&fp.to_le_bytes());
    }
    xxh3_128(buf)
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().fold(0u8, |a, &x| a | x) == 0
}

/// One file's reduction facts, to be folded into an [`Accumulator`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReduce {
    pub size: u64,
    /// XXH3-128 of each 4 KiB block (the last may be shorter), in order.
    pub fps: Vec<u128>,
    /// Whether each 4 KiB block is all zeros.
    pub zero: Vec<bool>,
    /// Per unit: (compressed bytes, allocated bytes) for each codec, codec-major.
    pub units: Vec<(u32, u32)>,
    /// CDC chunks: fingerprint, length, all zeros.
    pub chunks: Vec<(u128, u32, bool)>,
    /// The file's number from [`Accumulator::register`], for the files contributing most
    /// duplicate bytes.
    pub file: Option<u32>,
}

/// Consumes one file's bytes in order.
pub struct FileReducer {
    cfg: Arc<ReduceConfig>,
    out: FileReduce,
    block: Vec<u8>,
    unit: Vec<u8>,
    compressors: Vec<Compressor>,
    cdc: Vec<u8>,
    acc: Option<Arc<std::sync::Mutex<Accumulator>>>,
}

impl FileReducer {
    pub fn new(cfg: Arc<ReduceConfig>) -> FileReducer {
        let compressors = cfg.codecs.iter().map(|c| Compressor::new(*c)).collect();
        FileReducer {
            cfg,
            out: FileReduce::default(),
            block: Vec::new(),
            unit: Vec::new(),
            compressors,
            cdc: Vec::new(),
            acc: None,
        }
    }

    fn push_block(&mut self, b: &[u8]) {
        self.out.fps.push(xxh3_128(b));
        self.out.zero.push(is_zero(b));
    }

    fn push_unit(&mut self, u: &[u8]) {
        let n = self.compressors.len();
        let base = self.out.units.len();
        self.out.units.resize(base + n, (0, 0));
        // The unit's fingerprint, derived from its 4 KiB blocks' (already taken): it picks the
        // sample and keys the size cache.
        let k = self.cfg.unit / BASE;
        let u_idx = base / n.max(1);
        let len = self.out.fps.len();
        let fp = block_fp(
            &self.out.fps[(u_idx * k).min(len)..((u_idx + 1) * k).min(len)],
            &mut Vec::with_capacity(k * 16),
        );
        if let Some(t) = self.cfg.sample_threshold()
            && ((fp >> 64) as u64) >= t
            && !is_zero(u)
        {
            // Not in the sample: not compressed.
            for x in &mut self.out.units[base..] {
                *x = (u32::MAX, u32::MAX);
            }
            return;
        }
        let cached = n <= CACHE_CODECS;
        if cached && self.cfg.size_cache.get(fp, &mut self.out.units[base..]) {
            return;
        }
        for (i, c) in self.compressors.iter_mut().enumerate() {
            let clen = c.compress(u);
            let alloc = self.cfg.allocated(u.len(), clen);
            self.out.units[base + i] = (clen as u32, alloc as u32);
        }
        if cached {
            self.cfg.size_cache.put(fp, &self.out.units[base..]);
        }
    }

    /// Feeds `data` in fixed pieces of `size` through `buf` (holding a partial piece between
    /// calls), calling `f` for every full piece.
    fn pieces(buf: &mut Vec<u8>, size: usize, mut data: &[u8], f: &mut dyn FnMut(&[u8])) {
        if !buf.is_empty() {
            let take = (size - buf.len()).min(data.len());
            buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if buf.len() == size {
                f(buf);
                buf.clear();
            }
        }
        let mut it = data.chunks_exact(size);
        for p in &mut it {
            f(p);
        }
        buf.extend_from_slice(it.remainder());
    }

    /// With a shared accumulator, a large file's facts are folded in every `flush_blocks`
    /// blocks (at a boundary of every block size), so memory stays flat whatever the file size.
    pub fn with_accumulator(mut self, acc: Arc<std::sync::Mutex<Accumulator>>) -> FileReducer {
        self.acc = Some(acc);
        self
    }

    /// The file's number from [`Accumulator::register`].
    pub fn with_file(mut self, id: u32) -> FileReducer {
        self.out.file = Some(id);
        self
    }

    fn maybe_flush(&mut self) {
        let Some(acc) = &self.acc else { return };
        if self.out.fps.len() < self.cfg.flush_blocks {
            return;
        }
        let g = self.cfg.group();
        let n = self.out.fps.len() / g * g;
        if n == 0 {
            return;
        }
        let ncodec = self.compressors.len();
        let nunits = (n / (self.cfg.unit / BASE)) * ncodec;
        let part = FileReduce {
            size: (n * BASE) as u64,
            fps: self.out.fps.drain(..n).collect(),
            zero: self.out.zero.drain(..n).collect(),
            units: self
                .out
                .units
                .drain(..nunits.min(self.out.units.len()))
                .collect(),
            chunks: std::mem::take(&mut self.out.chunks),
            file: self.out.file,
        };
        self.out.size -= part.size;
        acc.lock()
            .unwrap_or_else(|p| p.into_inner())
            .add_part(&part);
    }

    pub fn update(&mut self, data: &[u8]) {
        self.out.size += data.len() as u64;
        let mut block = std::mem::take(&mut self.block);
        Self::pieces(&mut block, BASE, data, &mut |b| {
            self.out.fps.push(xxh3_128(b));
            self.out.zero.push(is_zero(b));
        });
        self.block = block;
        if !self.compressors.is_empty() {
            let mut unit = std::mem::take(&mut self.unit);
            let size = self.cfg.unit;
            Self::pieces(&mut unit, size, data, &mut |u| self.push_unit(u));
            self.unit = unit;
        }
        if let Some(bounds) = self.cfg.cdc_bounds() {
            self.cut_chunks(data, bounds);
        }
        self.maybe_flush();
    }

    /// Content-defined chunking of the next `data`, cut where it lies: a chunk is known once
    /// a cut point is found before the end of the bytes seen or it reaches `max`, so only the
    /// unfinished last chunk (under `max` bytes) is kept in `self.cdc`, and it is topped up from
    /// the next data by at most `max` bytes until its cut is known (copying every byte into the
    /// buffer and draining it made a full reduction scan of the mixed benchmark tree 6% slower).
    /// The chunks are those of one FastCDC pass over the whole file.
    fn cut_chunks(&mut self, mut data: &[u8], (min, avg, max): (usize, usize, usize)) {
        let chunks = &mut self.out.chunks;
        let mut push = |d: &[u8]| chunks.push((xxh3_128(d), d.len() as u32, is_zero(d)));
        while !self.cdc.is_empty() && !data.is_empty() {
            let old = self.cdc.len();
            let take = max.saturating_sub(old).min(data.len());
            self.cdc.extend_from_slice(&data[..take]);
            let len = fastcdc::v2020::FastCDC::new(&self.cdc, min, avg, max)
                .next()
                .map_or(0, |c| c.length);
            if len < self.cdc.len() || len == max {
                push(&self.cdc[..len]);
                if len >= old {
                    data = &data[len - old..];
                    self.cdc.clear();
                } else {
                    self.cdc.truncate(old);
                    self.cdc.drain(..len);
                }
            } else {
                // No cut yet, and under `max`: all of `data` was taken.
                data = &[];
            }
        }
        let mut done = 0;
        for c in fastcdc::v2020::FastCDC::new(data, min, avg, max) {
            if c.offset + c.length == data.len() && c.length < max {
                break;
            }
            push(&data[c.offset..c.offset + c.length]);
            done = c.offset + c.length;
        }
        self.cdc.extend_from_slice(&data[done..]);
    }

    pub fn finish(mut self) -> FileReduce {
        if !self.block.is_empty() {
            let b = std::mem::take(&mut self.block);
            self.push_block(&b);
        }
        if !self.unit.is_empty() && !self.compressors.is_empty() {
            let u = std::mem::take(&mut self.unit);
            self.push_unit(&u);
        }
        if let Some((min, avg, max)) = self.cfg.cdc_bounds() {
            // The end of the file ends the last chunks.
            for c in fastcdc::v2020::FastCDC::new(&self.cdc, min, avg, max) {
                let d = &self.cdc[c.offset..c.offset + c.length];
                self.out
                    .chunks
                    .push((xxh3_128(d), c.length as u32, is_zero(d)));
            }
        }
        self.out
    }
}

/// The set of distinct fingerprints: compact (56 bits kept, [`FpTable`]) or exact (all 128
/// bits, a std HashMap at ~40 bytes per entry, for `--exact-keys`).
enum Index {
    Compact(FpTable),
    Exact(std::collections::HashMap<u128, u64>),
}

impl Default for Index {
    fn default() -> Self {
        Index::Compact(FpTable::new())
    }
}

impl Index {
    /// What identifies a key in [`Pending`] (the bits the index keeps, or the top half of an
    /// exact key, whose records are settled as soon as they are staged).
    fn ident(&self, key: u128) -> u64 {
        match self {
            Index::Compact(_) => table::stage_word((key >> 64) as u64, 0) >> 8,
            Index::Exact(_) => (key >> 64) as u64,
        }
    }

    /// Whether the staging is full (flush before staging more).
    fn is_full(&self) -> bool {
        match self {
            Index::Compact(t) => t.is_full(),
            Index::Exact(_) => false,
        }
    }

    /// Stages a key with a tag (0: a whole block with nothing carried; 1: its record is in
    /// [`Pending`]). The exact index inserts it at once and calls `on_new(ident, tag)` if new.
    fn stage(&mut self, key: u128, tag: u8, on_new: &mut dyn FnMut(u64, u8)) {
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
    fn flush(&mut self, on_new: &mut dyn FnMut(u64, u8)) {
        if let Index::Compact(t) = self {
            t.flush(&mut |w| on_new(w >> 8, w as u8));
        }
    }

    /// The reference count of a (flushed) key (0 if absent).
    fn count(&self, key: u128) -> u64 {
        match self {
            Index::Compact(t) => t.count((key >> 64) as u64),
            Index::Exact(m) => m.get(&key).copied().unwrap_or(0),
        }
    }

    fn memory_bytes(&self) -> u64 {
        match self {
            Index::Compact(t) => t.memory_bytes(),
            // Key, count and the map's control byte, over its load.
            Index::Exact(m) => m.capacity() as u64 * 25,
        }
    }

    fn for_each_count(&self, f: &mut dyn FnMut(u64)) {
        match self {
            Index::Compact(t) => t.for_each_count(f),
            Index::Exact(m) => m.values().for_each(|c| f(*c)),
        }
    }

    /// Moves the (flushed) entries whose key's top `spill::BITS` bits are `q` into an index of
    /// their own.
    fn take_partition(&mut self, q: u64) -> Index {
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
struct Found {
    blocks: u64,
    bytes: u64,
    carried: Vec<u64>,
}

/// Staged records that are not plain whole blocks (a file's last, shorter block, a chunk, a unit
/// carrying its allocated sizes): their length and carried values, kept until the flush says
/// whether their key is new. Whole blocks carrying nothing are staged with tag 0 and cost
/// nothing here.
#[derive(Default)]
struct Pending {
    /// (ident, length, record number) per record staged with tag 1.
    recs: Vec<(u64, u32, u32)>,
    /// `carry` values per record, by record number.
    carried: Vec<u32>,
    sorted: bool,
    /// Length of a whole block (0 for chunks: every chunk's length is kept).
    full: u32,
}

impl Pending {
    fn clear(&mut self) {
        self.recs.clear();
        self.carried.clear();
        self.sorted = false;
    }

    /// Counts a new key from its staged word's ident and tag.
    fn new_key(&mut self, found: &mut Found, ident: u64, tag: u8) {
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
    fn stage(&mut self, index: &mut Index, found: &mut Found, key: u128, len: u32, carry: &[u32]) {
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

    fn flush(&mut self, index: &mut Index, found: &mut Found) {
        index.flush(&mut |ident, tag| self.new_key(found, ident, tag));
        self.clear();
    }
}

/// Counts for one way of cutting the data.
#[derive(Default)]
struct Dedup {
    table: Index,
    pending: Pending,
    /// Unique blocks and bytes, and (for the unit size) the allocated sizes of unique units.
    found: Found,
    logical_bytes: u64,
    blocks: u64,
    zero_blocks: u64,
    zero_bytes: u64,
    /// Sampling: keys at or above it are left out.
    threshold: Option<u64>,
    rate: f64,
    /// Past the memory budget: records go to partition files instead of the table.
    spill: Option<spill::Spill>,
    /// Reference-count histogram, when computed partition by partition after a spill.
    refs: Option<[u64; 13]>,
}

impl Dedup {
    /// `full`: the block size (0 for chunks); `carry`: values carried per record (the unit
    /// size's allocated sizes, one per codec), summed over unique records.
    fn new(full: u32, carry: usize, threshold: Option<u64>, rate: f64, exact: bool) -> Dedup {
        Dedup {
            threshold,
            rate,
            table: if exact {
                Index::Exact(Default::default())
            } else {
                Index::default()
            },
            pending: Pending {
                full,
                ..Pending::default()
            },
            found: Found {
                carried: vec![0; carry],
                ..Found::default()
            },
            ..Dedup::default()
        }
    }

    /// `carry(i, out)` appends the values carried by record `i` (those of a unique record are
    /// summed in `found.carried`; they also travel with a spilled record).
    fn add(
        &mut self,
        keys: &[u128],
        lens: &[u32],
        zero: &[bool],
        carry: &dyn Fn(usize, &mut Vec<u32>),
    ) -> std::io::Result<()> {
        let mut carried = Vec::with_capacity(self.found.carried.len());
        for i in 0..keys.len() {
            self.logical_bytes += lens[i] as u64;
            self.blocks += 1;
            // Zero blocks are thin-provisioned: counted apart, never indexed.
            if zero[i] {
                self.zero_blocks += 1;
                self.zero_bytes += lens[i] as u64;
                continue;
            }
            if self
                .threshold
                .is_some_and(|t| ((keys[i] >> 64) as u64) >= t)
            {
                continue;
            }
            carried.clear();
            carry(i, &mut carried);
            if let Some(sp) = &mut self.spill {
                // Decided when the partitions are counted.
                sp.write(keys[i], lens[i], &carried)?;
            } else {
                self.pending
                    .stage(&mut self.table, &mut self.found, keys[i], lens[i], &carried);
            }
        }
        Ok(())
    }

    /// The index's bytes, with the records kept aside until the next flush.
    fn memory_bytes(&self) -> u64 {
        let p = &self.pending;
        self.table.memory_bytes() + (p.recs.capacity() * 16 + p.carried.capacity() * 4) as u64
    }

    /// Merges what is staged (before a spill starts, and at the end).
    fn flush(&mut self) {
        self.pending.flush(&mut self.table, &mut self.found);
    }

    /// Counts the spilled records partition by partition (each partition's keys taken from the
    /// table, then its records staged and merged), so that memory holds one partition at a
    /// time. The table was flushed when the spill began.
    fn settle_spill(
        &mut self,
        hook: &mut dyn FnMut(usize, &Index) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let Some(sp) = self.spill.take() else {
            self.flush();
            return Ok(());
        };
        let mut refs = [0u64; 13];
        let mut table = std::mem::take(&mut self.table);
        let mut hook_err = None;
        sp.for_each_partition(&mut |q, records| {
            let mut t = table.take_partition(q as u64);
            for r in records {
                self.pending
                    .stage(&mut t, &mut self.found, r.key, r.len, &r.extra);
            }
            self.pending.flush(&mut t, &mut self.found);
            t.for_each_count(&mut |c| refs[ref_bucket(c)] += 1);
            if hook_err.is_none()
                && let Err(e) = hook(q, &t)
            {
                hook_err = Some(e);
            }
        })?;
        if let Some(e) = hook_err {
            return Err(e);
        }
        self.refs = Some(refs);
        Ok(())
    }

    fn references(&self) -> Vec<RefBucket> {
        match &self.refs {
            Some(r) => histogram(r),
            None => {
                let mut counts = [0u64; 13];
                self.table
                    .for_each_count(&mut |c| counts[ref_bucket(c)] += 1);
                histogram(&counts)
            }
        }
    }

    /// (unique blocks, unique bytes) and, when sampled, the 99% interval of the bytes.
    fn estimate(&self) -> (u64, u64, Option<SampleJson>) {
        let (unique_blocks, unique_bytes) = (self.found.blocks, self.found.bytes);
        if self.threshold.is_none() {
            return (unique_blocks, unique_bytes, None);
        }
        let blocks = (unique_blocks as f64 / self.rate).round() as u64;
        let bytes = unique_bytes as f64 / self.rate;
        // Hash-threshold sampling: the kept count is binomial; relative error ~ 1/sqrt(kept).
        let rel = 2.576 / (unique_blocks.max(1) as f64).sqrt();
        let s = SampleJson {
            rate: self.rate,
            kept: unique_blocks,
            confidence: 0.99,
            low: (bytes * (1.0 - rel)).max(0.0).round() as u64,
            high: (bytes * (1.0 + rel)).round() as u64,
        };
        (blocks, bytes.round() as u64, Some(s))
    }

    fn counts(&self) -> DedupCounts {
        let (unique_blocks, unique_bytes, sample) = self.estimate();
        DedupCounts {
            logical_bytes: self.logical_bytes,
            blocks: self.blocks,
            unique_blocks,
            unique_bytes,
            zero_blocks: self.zero_blocks,
            zero_bytes: self.zero_bytes,
            ratio: ratio(self.logical_bytes, unique_bytes),
            references: self.references(),
            sample,
        }
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn ref_bucket(c: u64) -> usize {
    ((64 - (c.max(1) - 1).leading_zeros()) as usize).min(12)
}

/// How many distinct blocks are referenced 1, 2, 3-4, 5-8, ... times (4,095+ saturates).
fn histogram(counts: &[u64; 13]) -> Vec<RefBucket> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(b, n)| {
            let (lo, hi) = if b == 0 {
                (1, 1)
            } else {
                ((1u64 << (b - 1)) + 1, 1u64 << b)
            };
            RefBucket {
                refs: if lo == hi {
                    lo.to_string()
                } else if b == 12 {
                    format!("{lo}+")
                } else {
                    format!("{lo}-{hi}")
                },
                blocks: *n,
            }
        })
        .collect()
}

/// Appends (key, length, file) of each non-zero block to the key log (made on first use).
fn log_keys(
    log: &mut Option<spill::Spill>,
    cfg: &ReduceConfig,
    file: u32,
    keys: &[u128],
    lens: &[u32],
    zero: &[bool],
) -> std::io::Result<()> {
    if log.is_none() {
        let dir = cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        *log = Some(spill::Spill::new(
            &dir,
            1,
            if cfg.exact_keys { 16 } else { 8 },
        )?);
    }
    let w = log.as_mut().expect("just made");
    for i in 0..keys.len() {
        if !zero[i] {
            w.write(keys[i], lens[i], &[file])?;
        }
    }
    Ok(())
}

/// Per file: (duplicate bytes, share of the saving).
type Shares = Vec<(u64, f64)>;

/// Attributes one partition of the key log against the final counts of its keys.
fn attribute_partition(
    reader: &spill::SpillReader,
    q: usize,
    counts: &Index,
    per: &mut Shares,
) -> std::io::Result<()> {
    reader.read(q, &mut |records| {
        for r in records {
            let c = counts.count(r.key);
            if c >= 2 {
                let f = &mut per[r.extra[0] as usize];
                f.0 += r.len as u64;
                f.1 += r.len as f64 * (c - 1) as f64 / c as f64;
            }
        }
    })
}

/// Folds files into the global figures. Rules:
/// - Blocks are cut from the start of each file; a file's last block is as long as what is left
///   and is fingerprinted as it is (so it only matches an equally short block of equal bytes).
/// - A block of any size is a zero block if all its bytes are zero; zero blocks are counted in
///   `zero_blocks`/`zero_bytes` and are neither unique nor indexed.
/// - `unique_blocks`/`unique_bytes`: distinct non-zero blocks and their bytes; `ratio` =
///   `logical_bytes / unique_bytes`.
/// - Compression: each unit (cut like blocks) is compressed alone; `allocated` = the compressed
///   size, or the unit's size if compression saves less than `threshold`, rounded up to `sector`.
///   `ratio` = logical / allocated. Combined: the allocated bytes of distinct non-zero units only
///   (dedup at the unit size, then compression); `combined_ratio` = logical / that.
pub struct Accumulator {
    cfg: Arc<ReduceConfig>,
    sizes: Vec<(usize, Dedup)>,
    unit_index: usize,
    cdc: Option<(Dedup, [u64; 64])>,
    compressed: Vec<u64>,
    allocated: Vec<u64>,
    units: u64,
    /// Units compressed (all of them unless sampling) and their logical bytes.
    sampled_units: u64,
    sampled_logical: u64,
    zero_logical: u64,
    zero_compressed: Vec<u64>,
    zero_allocated: Vec<u64>,
    spilled: bool,
    error: Option<std::io::Error>,
    /// Registered files (see [`Accumulator::register`]).
    files: Vec<String>,
    /// Per non-zero block at the smallest size: key, length and file, for the attribution at
    /// the end, in partition files like a spill's (16 or 24 bytes per block, sequential writes,
    /// each partition read back once against that partition's final counts).
    keylog: Option<spill::Spill>,
    top: Option<Vec<TopFile>>,
}

impl Accumulator {
    pub fn new(cfg: Arc<ReduceConfig>) -> Accumulator {
        let threshold = cfg.sample_threshold();
        let rate = if threshold.is_some() {
            cfg.sample.unwrap_or(1.0)
        } else {
            1.0
        };
        let mut sizes: Vec<(usize, Dedup)> = cfg
            .dedup_sizes
            .iter()
            .map(|&s| (s, Dedup::new(s as u32, 0, threshold, rate, cfg.exact_keys)))
            .collect();
        let n = cfg.codecs.len();
        // The combined figure needs dedup at the unit size; measure it even if not asked for
        // (but not without codecs: then there is no combined figure, and the index would only
        // cost memory; `usize::MAX` matches no size).
        let unit_index = match sizes.iter().position(|(s, _)| *s == cfg.unit) {
            Some(i) => i,
            None if cfg.codecs.is_empty() && !sizes.is_empty() => usize::MAX,
            None => {
                sizes.push((cfg.unit, Dedup::default()));
                sizes.len() - 1
            }
        };
        if let Some((s, d)) = sizes.get_mut(unit_index) {
            // The unit size carries each unit's allocated sizes, summed over unique units.
            *d = Dedup::new(*s as u32, n, threshold, rate, cfg.exact_keys);
        }
        Accumulator {
            cdc: cfg.cdc_avg.map(|_| {
                (
                    Dedup::new(0, 0, threshold, rate, cfg.exact_keys),
                    [0u64; 64],
                )
            }),
            sampled_units: 0,
            sampled_logical: 0,
            zero_logical: 0,
            zero_compressed: vec![0; cfg.codecs.len()],
            zero_allocated: vec![0; cfg.codecs.len()],
            spilled: false,
            error: None,
            cfg,
            sizes,
            unit_index,
            compressed: vec![0; n],
            allocated: vec![0; n],
            units: 0,
            files: Vec::new(),
            keylog: None,
            top: None,
        }
    }

    /// Numbers a file for [`FileReducer::with_file`].
    pub fn register(&mut self, path: &std::path::Path) -> u32 {
        self.files.push(path.display().to_string());
        (self.files.len() - 1) as u32
    }

    /// Whether per-file attribution is on: asked for, and exact (not sampled).
    fn attributing(&self) -> bool {
        self.cfg.top_files > 0 && self.cfg.sample_threshold().is_none()
    }

    /// The top files from the per-file shares.
    fn rank(&mut self, per: &Shares) {
        let mut order: Vec<usize> = (0..per.len()).filter(|&i| per[i].0 > 0).collect();
        order.sort_by(|&a, &b| {
            per[b]
                .1
                .total_cmp(&per[a].1)
                .then_with(|| self.files[a].cmp(&self.files[b]))
        });
        let block_size = self.sizes[0].0 as u64;
        self.top = Some(
            order
                .into_iter()
                .take(self.cfg.top_files)
                .map(|i| TopFile {
                    path: self.files[i].clone(),
                    block_size,
                    duplicate_bytes: per[i].0,
                    saved_bytes: per[i].1.round() as u64,
                })
                .collect(),
        );
    }

    /// Folds in part of a large file (whole groups of blocks, see [`ReduceConfig::group`]); an
    /// I/O error is kept and returned by [`Accumulator::finish`].
    pub fn add_part(&mut self, f: &FileReduce) {
        if self.error.is_none()
            && let Err(e) = self.add(f)
        {
            self.error = Some(e);
        }
    }

    pub fn add(&mut self, f: &FileReduce) -> std::io::Result<()> {
        let n = f.fps.len();
        let ncodec = self.cfg.codecs.len();
        let last_len = if (f.size as usize).is_multiple_of(BASE) {
            BASE
        } else {
            f.size as usize % BASE
        };
        let mut keys = Vec::new();
        let mut lens = Vec::new();
        let mut zero = Vec::new();
        let mut buf = Vec::new();
        for (idx, (size, d)) in self.sizes.iter_mut().enumerate() {
            let k = *size / BASE;
            keys.clear();
            lens.clear();
            zero.clear();
            for (g, group) in f.fps.chunks(k).enumerate() {
                keys.push(block_fp(group, &mut buf));
                let first = g * k;
                let len = if first + group.len() == n {
                    (group.len() - 1) * BASE + last_len
                } else {
                    group.len() * BASE
                };
                lens.push(len as u32);
                zero.push(f.zero[first..first + group.len()].iter().all(|z| *z));
            }
            let is_unit = idx == self.unit_index;
            let carry = |u: usize, out: &mut Vec<u32>| {
                if is_unit {
                    out.extend((0..ncodec).map(|c| f.units[u * ncodec + c].1));
                }
            };
            d.add(&keys, &lens, &zero, &carry)?;
            if idx == 0
                && let Some(id) = f.file
                && self.cfg.top_files > 0
                && self.cfg.sample_threshold().is_none()
            {
                // (Borrowing `self` whole here would clash with `self.sizes`; the log is apart.)
                log_keys(&mut self.keylog, &self.cfg, id, &keys, &lens, &zero)?;
            }
            if idx == self.unit_index && ncodec > 0 {
                for u in 0..keys.len() {
                    if f.units[u * ncodec] == (u32::MAX, u32::MAX) {
                        continue; // not in the sample
                    }
                    // Zero units are always measured and kept apart, exactly.
                    let z = zero[u];
                    if z {
                        self.zero_logical += lens[u] as u64;
                    } else {
                        self.sampled_units += 1;
                        self.sampled_logical += lens[u] as u64;
                    }
                    for c in 0..ncodec {
                        let (clen, alloc) = f.units[u * ncodec + c];
                        if z {
                            self.zero_compressed[c] += clen as u64;
                            self.zero_allocated[c] += alloc as u64;
                            continue;
                        }
                        self.compressed[c] += clen as u64;
                        self.allocated[c] += alloc as u64;
                    }
                }
                self.units += keys.len() as u64;
            }
        }
        if let Some((d, sizes)) = &mut self.cdc {
            keys.clear();
            lens.clear();
            zero.clear();
            for (fp, len, z) in &f.chunks {
                keys.push(*fp);
                lens.push(*len);
                zero.push(*z);
                sizes[63 - (*len as u64).max(1).leading_zeros() as usize] += 1;
            }
            d.add(&keys, &lens, &zero, &|_, _| {})?;
        }
        self.maybe_spill()
    }

    /// Past the memory budget, every index from now on spills to partition files.
    fn maybe_spill(&mut self) -> std::io::Result<()> {
        let Some(budget) = self.cfg.memory else {
            return Ok(());
        };
        if self.sizes[0].1.spill.is_some() {
            return Ok(());
        }
        let used: u64 = self
            .sizes
            .iter()
            .map(|(_, d)| d.memory_bytes())
            .chain(self.cdc.iter().map(|(d, _)| d.memory_bytes()))
            .sum();
        if used <= budget {
            return Ok(());
        }
        let dir = self.cfg.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        let ncodec = self.cfg.codecs.len();
        let kb = if self.cfg.exact_keys { 16 } else { 8 };
        for (idx, (_, d)) in self.sizes.iter_mut().enumerate() {
            // What is staged goes into the table first: the spill holds what comes after.
            d.flush();
            let extra = if idx == self.unit_index { ncodec } else { 0 };
            d.spill = Some(spill::Spill::new(&dir, extra, kb)?);
        }
        if let Some((d, _)) = &mut self.cdc {
            d.flush();
            d.spill = Some(spill::Spill::new(&dir, 0, kb)?);
        }
        self.spilled = true;
        Ok(())
    }

    /// Whether the index went past `--memory` and was spilled.
    pub fn spilled(&self) -> bool {
        self.spilled
    }

    /// Counts whatever was spilled (call once, after the last [`Accumulator::add`]).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        // The key log is read partition by partition against each partition's final counts:
        // from the table in RAM, or, after a spill, while the smallest size's partitions are
        // counted.
        let attributing = self.attributing();
        let keylog = self.keylog.take().map(|k| k.into_reader()).transpose()?;
        let mut per: Shares = vec![(0, 0.0); self.files.len()];
        for (idx, (_, d)) in self.sizes.iter_mut().enumerate() {
            let mut hook = |q: usize, t: &Index| -> std::io::Result<()> {
                match (&keylog, idx) {
                    (Some(r), 0) => attribute_partition(r, q, t, &mut per),
                    _ => Ok(()),
                }
            };
            d.settle_spill(&mut hook)?;
        }
        if let Some((d, _)) = &mut self.cdc {
            d.settle_spill(&mut |_, _| Ok(()))?;
        }
        if attributing {
            if let Some(r) = &keylog
                && !self.spilled
            {
                for q in 0..spill::PARTITIONS {
                    attribute_partition(r, q, &self.sizes[0].1.table, &mut per)?;
                }
            }
            self.rank(&per);
        }
        Ok(())
    }

    pub fn report(&self) -> ReductionJson {
        let logical = self.sizes[0].1.logical_bytes;
        let mut dedup: Vec<DedupJson> = self
            .sizes
            .iter()
            .filter(|(s, _)| self.cfg.dedup_sizes.contains(s))
            .map(|(s, d)| DedupJson {
                block_size: *s as u64,
                counts: d.counts(),
            })
            .collect();
        dedup.sort_by_key(|d| d.block_size);
        let cdc = self.cdc.as_ref().map(|(d, sizes)| {
            let (min, avg, max) = self.cfg.cdc_bounds().expect("cdc configured");
            CdcJson {
                avg_size: avg as u64,
                min_size: min as u64,
                max_size: max as u64,
                counts: d.counts(),
                chunk_sizes: sizes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(k, n)| SizeBucket {
                        from: 1 << k,
                        to: (1u64 << (k + 1)) - 1,
                        chunks: *n,
                    })
                    .collect(),
            }
        });
        let sampling = self.cfg.sample_threshold().is_some();
        let rate = self.cfg.sample.unwrap_or(1.0);
        // Scale sampled sums to the whole: by logical bytes for per-unit figures, by the rate for
        // the combined figure (it counts distinct units, sampled by hash threshold).
        let nonzero = logical - self.zero_logical;
        let scale = if sampling && self.sampled_logical > 0 {
            nonzero as f64 / self.sampled_logical as f64
        } else {
            1.0
        };
        let compression = self
            .cfg
            .codecs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let allocated =
                    (self.allocated[i] as f64 * scale).round() as u64 + self.zero_allocated[i];
                // Codecs imply a unit index (see `new`).
                let unique = self.sizes[self.unit_index].1.found.carried[i];
                let combined = if sampling {
                    (unique as f64 / rate).round() as u64
                } else {
                    unique
                };
                let sample = sampling.then(|| {
                    // Hoeffding: the mean allocated fraction of m units, each in [0, r].
                    let r = (self.cfg.unit + self.cfg.sector) as f64 / self.cfg.unit as f64;
                    let m = self.sampled_units.max(1) as f64;
                    let hw = r * ((2.0f64 / 0.01).ln() / (2.0 * m)).sqrt() * nonzero as f64;
                    SampleJson {
                        rate,
                        kept: self.sampled_units,
                        confidence: 0.99,
                        low: (allocated as f64 - hw).max(0.0).round() as u64,
                        high: (allocated as f64 + hw).round() as u64,
                    }
                });
                CompressionJson {
                    codec: c.name().into(),
                    level: c.level(),
                    implementation: c.implementation(),
                    unit: self.cfg.unit as u64,
                    sector: self.cfg.sector as u64,
                    threshold: self.cfg.threshold,
                    units: self.units,
                    logical_bytes: logical,
                    compressed_bytes: (self.compressed[i] as f64 * scale).round() as u64
                        + self.zero_compressed[i],
                    allocated_bytes: allocated,
                    ratio: ratio(logical, allocated),
                    combined_allocated_bytes: combined,
                    combined_ratio: ratio(logical, combined),
                    sample,
                }
            })
            .collect();
        ReductionJson {
            fingerprint: if self.cfg.exact_keys {
                "xxh3-128 per 4 KiB block; larger blocks from their 4 KiB fingerprints; all 128 bits kept"
            } else {
                "xxh3-128 per 4 KiB block; larger blocks from their 4 KiB fingerprints; 56 bits kept (8 implied by the partition + 48 stored)"
            }
            .into(),
            dedup,
            cdc,
            compression,
            top_files: self.top.clone(),
            top_files_note: (self.cfg.top_files > 0 && !self.attributing())
                .then(|| "not computed for a sampled run".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reduce(cfg: &Arc<ReduceConfig>, data: &[u8], pieces: usize) -> FileReduce {
        let mut r = FileReducer::new(cfg.clone());
        for p in data.chunks(pieces.max(1)) {
            r.update(p);
        }
        r.finish()
    }

    fn data(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn chunks_are_those_of_one_fastcdc_pass_over_the_file_whatever_the_read_sizes() {
        let cfg = Arc::new(ReduceConfig {
            cdc_avg: Some(4096),
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let (min, avg, max) = cfg.cdc_bounds().unwrap();
        // Random bytes (cuts by content), zeros (cuts at `min`), a byte that never cuts (every
        // chunk `max` long), and all three one after another.
        let mut mixed = data(100_000, 7);
        mixed.extend(vec![0u8; 50_000]);
        mixed.extend(vec![0x7bu8; 70_003]);
        mixed.extend(data(33_333, 8));
        let files = [
            data(200_001, 9),
            vec![0u8; 100_000],
            vec![0x7bu8; 70_003],
            mixed,
            data(100, 1),
            vec![],
        ];
        for f in &files {
            let want: Vec<(u128, u32, bool)> = fastcdc::v2020::FastCDC::new(f, min, avg, max)
                .map(|c| {
                    let d = &f[c.offset..c.offset + c.length];
                    (xxh3_128(d), c.length as u32, is_zero(d))
                })
                .collect();
            for piece in [1, 7, 1000, 1024, 4096, 16384, 16385, 65536, 1 << 20] {
                assert_eq!(reduce(&cfg, f, piece).chunks, want, "pieces of {piece}");
            }
        }
        let steady = fastcdc::v2020::FastCDC::new(&files[2], min, avg, max);
        assert!(
            steady.take(4).all(|c| c.length == max),
            "a chunk reaches max"
        );
    }

    #[test]
    fn the_same_facts_whatever_the_read_sizes() {
        let cfg = Arc::new(ReduceConfig {
            cdc_avg: Some(8192),
            codecs: vec![Codec::Lz4, Codec::Zstd(1)],
            ..ReduceConfig::default()
        });
        let d = data(300_001, 5);
        let a = reduce(&cfg, &d, 1 << 20);
        for piece in [1, 1000, 4096, 65536] {
            assert_eq!(reduce(&cfg, &d, piece), a, "pieces of {piece}");
        }
        assert_eq!(a.fps.len(), 300_001usize.div_ceil(4096));
        assert_eq!(a.units.len(), 300_001usize.div_ceil(32768) * 2);
        assert_eq!(
            a.chunks.iter().map(|c| c.1 as u64).sum::<u64>(),
            300_001,
            "chunks cover the file"
        );
    }

    #[test]
    fn unique_figures_settled_at_flushes_do_not_depend_on_repeats() {
        // Under test the staging flushes every few hundred keys, so these files cross many
        // flushes, with short last blocks, chunks and units kept aside until each one.
        for exact_keys in [false, true] {
            let cfg = Arc::new(ReduceConfig {
                dedup_sizes: vec![4096, 65536],
                cdc_avg: Some(8192),
                codecs: vec![Codec::Lz4],
                exact_keys,
                ..ReduceConfig::default()
            });
            let a = data(3_000_001, 1);
            let b = data(2_500_003, 2);
            let run = |files: &[&[u8]]| {
                let mut acc = Accumulator::new(cfg.clone());
                for f in files {
                    acc.add(&reduce(&cfg, f, 1 << 16)).unwrap();
                }
                acc.finish().unwrap();
                acc.report()
            };
            let once = run(&[&a, &b]);
            let again = run(&[&a, &b, &b, &a, &b]);
            // Random data: every block, chunk and unit of a and b is unique.
            for d in &once.dedup {
                assert_eq!(d.counts.unique_blocks, d.counts.blocks);
                assert_eq!(d.counts.unique_bytes, 5_500_004);
            }
            let c = &once.compression[0];
            assert_eq!(c.combined_allocated_bytes, c.allocated_bytes);
            // Repeats add logical bytes and nothing unique.
            for (x, y) in once.dedup.iter().zip(&again.dedup) {
                assert_eq!(y.counts.logical_bytes, 2 * 3_000_001 + 3 * 2_500_003);
                assert_eq!(
                    (y.counts.unique_blocks, y.counts.unique_bytes),
                    (x.counts.unique_blocks, x.counts.unique_bytes),
                );
            }
            let (x, y) = (once.cdc.as_ref().unwrap(), again.cdc.as_ref().unwrap());
            assert_eq!(y.counts.unique_bytes, x.counts.unique_bytes);
            assert_eq!(y.counts.unique_blocks, x.counts.unique_blocks);
            assert_eq!(
                again.compression[0].combined_allocated_bytes,
                c.combined_allocated_bytes
            );
        }
    }

    #[test]
    fn without_codecs_no_index_is_kept_for_the_unit_size() {
        let d = data(1_000_000, 3);
        for (codecs, tables) in [(vec![], 1), (vec![Codec::Lz4], 2)] {
            let cfg = Arc::new(ReduceConfig {
                dedup_sizes: vec![4096],
                codecs,
                ..ReduceConfig::default()
            });
            let mut acc = Accumulator::new(cfg.clone());
            acc.add(&reduce(&cfg, &d, 65536)).unwrap();
            acc.finish().unwrap();
            assert_eq!(acc.sizes.len(), tables);
            let r = acc.report();
            assert_eq!(r.dedup.len(), 1);
            assert_eq!(r.dedup[0].counts.unique_blocks, 1_000_000u64.div_ceil(4096));
        }
    }

    #[test]
    fn flushing_a_large_file_in_parts_changes_no_figure() {
        let mk = |flush: usize| {
            Arc::new(ReduceConfig {
                dedup_sizes: vec![4096, 12288, 131072],
                cdc_avg: Some(8192),
                codecs: vec![Codec::Lz4],
                flush_blocks: flush,
                ..ReduceConfig::default()
            })
        };
        let mut d = data(3_000_000, 11);
        d.extend_from_slice(&d.clone()[..1_000_000]);
        d.extend(std::iter::repeat_n(0u8, 300_001));
        let whole = {
            let cfg = mk(usize::MAX);
            let mut acc = Accumulator::new(cfg.clone());
            acc.add(&reduce(&cfg, &d, 100_000)).unwrap();
            acc.finish().unwrap();
            acc.report()
        };
        let cfg = mk(100);
        let acc = Arc::new(std::sync::Mutex::new(Accumulator::new(cfg.clone())));
        let mut r = FileReducer::new(cfg.clone()).with_accumulator(acc.clone());
        for p in d.chunks(100_000) {
            r.update(p);
        }
        let rest = r.finish();
        assert!(rest.fps.len() < 1000, "flushed along the way");
        let mut acc = acc.lock().unwrap();
        acc.add(&rest).unwrap();
        acc.finish().unwrap();
        assert_eq!(acc.report(), whole);
        assert_eq!(cfg.group(), 96);
    }

    #[test]
    fn cdc_finds_shifted_duplicates_that_fixed_blocks_miss() {
        let cfg = Arc::new(ReduceConfig {
            dedup_sizes: vec![4096],
            cdc_avg: Some(4096),
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let d = data(1 << 20, 9);
        let mut shifted = vec![1u8; 1000];
        shifted.extend_from_slice(&d);
        let mut acc = Accumulator::new(cfg.clone());
        acc.add(&reduce(&cfg, &d, 1 << 16)).unwrap();
        acc.add(&reduce(&cfg, &shifted, 1 << 16)).unwrap();
        acc.finish().unwrap();
        let r = acc.report();
        let fixed = &r.dedup[0];
        assert!(fixed.counts.ratio.unwrap() < 1.01, "{fixed:?}");
        let cdc = r.cdc.unwrap();
        assert!(cdc.counts.ratio.unwrap() > 1.8, "{cdc:?}");
    }

    #[test]
    fn derived_fingerprints_match_direct_dedup_counts() {
        // Two files made of the same 8 KiB blocks in other orders: at 8K all dedup, at 16K not.
        let a = data(8192, 1);
        let b = data(8192, 2);
        let f1 = [a.clone(), b.clone(), a.clone(), b.clone()].concat();
        let f2 = [b.clone(), a.clone(), b.clone(), a.clone()].concat();
        let cfg = Arc::new(ReduceConfig {
            dedup_sizes: vec![4096, 8192, 16384],
            codecs: vec![],
            ..ReduceConfig::default()
        });
        let mut acc = Accumulator::new(cfg.clone());
        acc.add(&reduce(&cfg, &f1, 5000)).unwrap();
        acc.add(&reduce(&cfg, &f2, 7000)).unwrap();
        acc.finish().unwrap();
        let r = acc.report();
        assert_eq!(r.dedup[1].counts.unique_blocks, 2);
        assert_eq!(r.dedup[2].counts.unique_blocks, 2, "ab and ba");
        assert_eq!(r.dedup[0].counts.unique_blocks, 4);
    }
}
