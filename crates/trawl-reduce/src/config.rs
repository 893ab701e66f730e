//! What a reduction measures ([`ReduceConfig`]), and the cache of compressed unit sizes.

use std::sync::Arc;

use crate::codec::Codec;

/// The fingerprint granule: every fixed block size is a multiple of it.
pub const BASE: usize = 4096;

/// The largest dedup block and compression unit: every codec takes it in one call (LZ4's input
/// is an `i32`), and a block's or unit's length fits the 4 bytes it is counted in.
pub const MAX_BLOCK: usize = 64 << 20;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ReduceConfig {
    /// Fixed block sizes, each a multiple of 4 KiB, ascending.
    pub dedup_sizes: Vec<usize>,
    /// Content-defined chunking at this average size (min = avg/4, max = avg*4).
    pub cdc_avg: Option<usize>,
    /// Codecs each compression unit is compressed with (none: no compression figures).
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
    /// Where spill files and the breakdowns' rows wait (default the system's).
    pub temp_dir: Option<std::path::PathBuf>,
    /// A large file's facts are folded in every this many 4 KiB blocks (see
    /// [`FileReducer::with_counter`](crate::FileReducer::with_counter)).
    pub flush_blocks: usize,
    /// Index all 128 bits of each fingerprint (no false merges in practice; ~40 bytes per
    /// distinct block instead of ~10).
    pub exact_keys: bool,
    /// List this many files that contribute most duplicate bytes (0: none).
    pub top_files: usize,
    /// Break the figures down by directory and by type.
    pub breakdown: Option<BreakdownConfig>,
    /// Readers folding files in at once (0: one per core): a [`Counter`](crate::Counter) keeps
    /// a staging slot for each and as many more.
    pub threads: usize,
    /// Key partitions a [`Counter`](crate::Counter) counts apart, each behind its own lock (a
    /// power of two up to 64; 0: four per reader). No figure depends on it.
    pub partitions: usize,
    /// Where the threads that settle the partitions count their CPU time (the scan's).
    pub stages: Arc<trawl_scan::Stages>,
}

/// How to break the figures down.
#[derive(Debug, Clone)]
pub struct BreakdownConfig {
    /// Directories this many levels below each root.
    pub depth: usize,
    /// The roots as reports spell them (no leading `./`), to count levels from.
    pub roots: Vec<Vec<u8>>,
}

/// Compressed sizes of recently seen units by fingerprint, so that a duplicate unit is not
/// compressed again (the codecs are deterministic: equal bytes give equal sizes). A lossy,
/// direct-mapped cache of 131,072 entries in 64 locked shards (about 6 MiB): a miss only costs a
/// compression, so the results never depend on what it holds.
pub struct SizeCache {
    shards: Vec<std::sync::Mutex<Vec<CacheEntry>>>,
}

/// A unit fingerprint and its (compressed, allocated) sizes per codec.
pub(crate) type CacheEntry = (u128, [(u32, u32); CACHE_CODECS]);

pub(crate) const CACHE_CODECS: usize = 4;
pub(crate) const CACHE_SHARDS: usize = 64;
pub(crate) const CACHE_WAYS: usize = 2048;

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
    pub(crate) fn slot(fp: u128) -> (usize, usize) {
        let h = fp as u64;
        (
            (h % CACHE_SHARDS as u64) as usize,
            ((h >> 6) % CACHE_WAYS as u64) as usize,
        )
    }

    pub(crate) fn get(&self, fp: u128, out: &mut [(u32, u32)]) -> bool {
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

    pub(crate) fn put(&self, fp: u128, sizes: &[(u32, u32)]) {
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
            breakdown: None,
            threads: 0,
            partitions: 0,
            stages: Arc::default(),
        }
    }
}

impl ReduceConfig {
    /// Readers folding files in at once ([`ReduceConfig::threads`], or one per core).
    pub fn readers(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// Whether files are numbered and their share of the duplicates worked out (for the top
    /// files or the breakdowns): only when the counts are exact, not sampled.
    pub fn attributing(&self) -> bool {
        (self.top_files > 0 || self.breakdown.is_some()) && self.sample_threshold().is_none()
    }

    /// Refuses a configuration that cannot be counted, saying why (sizes not multiples of 4 KiB, a unit not among them with codecs, a rate out of range...).
    pub fn check(&self) -> Result<(), String> {
        for &b in &self.dedup_sizes {
            if b == 0 || !b.is_multiple_of(BASE) {
                return Err(format!("dedup block size {b}: must be a multiple of 4K"));
            }
            if b > MAX_BLOCK {
                return Err(format!("dedup block size {b}: at most 64M"));
            }
        }
        if self.unit == 0 || !self.unit.is_multiple_of(BASE) {
            return Err(format!("unit {}: must be a multiple of 4K", self.unit));
        }
        if self.unit > MAX_BLOCK {
            return Err(format!("unit {}: at most 64M", self.unit));
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

    pub(crate) fn cdc_bounds(&self) -> Option<(usize, usize, usize)> {
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
