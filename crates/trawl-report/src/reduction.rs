//! The data-reduction report (`reduction` in a scan's JSON): dedup per block size, CDC,
//! compression per codec, the combined figure, and the files contributing most duplicates.

use serde::{Deserialize, Serialize};

/// Distinct blocks by how many times each is referenced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RefBucket {
    /// Distinct blocks referenced from `from` to `to` times (`to` null: or more).
    pub from: u64,
    /// To (None: or more).
    pub to: Option<u64>,
    /// Distinct blocks referenced that often.
    pub blocks: u64,
    /// References to those blocks: the blocks a file system without dedup would store.
    #[serde(default)]
    pub referenced_blocks: u64,
    /// Bytes of all those references (what storage without dedup holds), and of the blocks
    /// once (what dedup stores): at the smallest block size, when the files holding the
    /// duplicates are worked out (not with `--sample` or `--top-files 0`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub logical_bytes: Option<u64>,
    /// And of the blocks once.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stored_bytes: Option<u64>,
}

/// The figures of one way of cutting the data (fixed blocks of one size, or CDC chunks).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DedupCounts {
    /// Bytes cut (all files).
    pub logical_bytes: u64,
    /// Blocks cut.
    pub blocks: u64,
    /// Distinct non-zero blocks.
    pub unique_blocks: u64,
    /// Their bytes: what dedup stores.
    pub unique_bytes: u64,
    /// Blocks of zeros (thin-provisioned: stored as nothing).
    pub zero_blocks: u64,
    /// Their bytes.
    pub zero_bytes: u64,
    /// `logical_bytes / unique_bytes` (None when nothing is unique).
    pub ratio: Option<f64>,
    /// Distinct blocks by reference count.
    pub references: Vec<RefBucket>,
    /// Present when estimated from a sample (`--sample`): the interval is of `unique_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleJson>,
}

/// Dedup at one fixed block size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DedupJson {
    /// The block size.
    pub block_size: u64,
    /// Its figures.
    #[serde(flatten)]
    pub counts: DedupCounts,
}

/// How an estimate was sampled and its interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleJson {
    /// The fraction of the hash space sampled.
    pub rate: f64,
    /// Distinct blocks (or units) kept in the sample.
    pub kept: u64,
    /// The interval's confidence (0.99).
    pub confidence: f64,
    /// The interval's low end.
    pub low: u64,
    /// Its high end.
    pub high: u64,
}

/// Dedup with content-defined chunks (FastCDC).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CdcJson {
    /// Average chunk size asked for.
    pub avg_size: u64,
    /// Smallest chunk.
    pub min_size: u64,
    /// Largest chunk.
    pub max_size: u64,
    /// Its figures.
    #[serde(flatten)]
    pub counts: DedupCounts,
    /// Chunk lengths: how many chunks fall in [2^k, 2^(k+1)).
    pub chunk_sizes: Vec<SizeBucket>,
}

/// Chunks of `from` to `to` bytes.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SizeBucket {
    /// Smallest length.
    pub from: u64,
    /// Largest length.
    pub to: u64,
    /// How many chunks.
    pub chunks: u64,
}

/// Compression by one codec, unit by unit, and combined with dedup.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompressionJson {
    /// The codec's name.
    pub codec: String,
    /// Null for a codec without levels (lz4).
    pub level: Option<i64>,
    /// The library that compressed.
    pub implementation: String,
    /// The compression unit.
    pub unit: u64,
    /// The allocation granule each stored unit is rounded up to.
    pub sector: u64,
    /// A unit is stored raw unless compression saves at least this fraction.
    pub threshold: f64,
    /// Units cut.
    pub units: u64,
    /// Bytes cut.
    pub logical_bytes: u64,
    /// Compressed bytes, unit by unit.
    pub compressed_bytes: u64,
    /// Allocated bytes (rounded up, threshold applied).
    pub allocated_bytes: u64,
    /// `logical_bytes / allocated_bytes`.
    pub ratio: Option<f64>,
    /// Allocated bytes of the distinct non-zero units only (dedup, then compression).
    pub combined_allocated_bytes: u64,
    /// `logical_bytes / combined_allocated_bytes`.
    pub combined_ratio: Option<f64>,
    /// Present when estimated from a sample: the interval is of `allocated_bytes` (Hoeffding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleJson>,
    /// Present when estimated from a sample: the interval of `combined_allocated_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combined_sample: Option<SampleJson>,
}

/// A ratio `logical / bytes` over an interval of `bytes`: (low, high) of the ratio, the high end
/// unbounded (f64::MAX) when the bytes' low end is 0.
fn ratio_over(logical: u64, s: Option<&SampleJson>) -> Option<(f64, f64)> {
    let s = s?;
    let over = |u: u64| (u > 0).then(|| logical as f64 / u as f64);
    Some((over(s.high)?, over(s.low).unwrap_or(f64::MAX)))
}

impl DedupCounts {
    /// The ratio's interval when estimated from a sample.
    pub fn ratio_interval(&self) -> Option<(f64, f64)> {
        ratio_over(self.logical_bytes, self.sample.as_ref())
    }
}

impl CompressionJson {
    /// The compression ratio's interval when estimated from a sample.
    pub fn ratio_interval(&self) -> Option<(f64, f64)> {
        ratio_over(self.logical_bytes, self.sample.as_ref())
    }

    /// The dedup + compression ratio's interval when estimated from a sample.
    pub fn combined_interval(&self) -> Option<(f64, f64)> {
        ratio_over(self.logical_bytes, self.combined_sample.as_ref())
    }
}

/// The whole reduction report (`reduction` in the scan's JSON).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReductionJson {
    /// How blocks are fingerprinted, in words.
    pub fingerprint: String,
    /// Dedup per block size, smallest first.
    pub dedup: Vec<DedupJson>,
    /// Dedup with content-defined chunks, when asked for.
    pub cdc: Option<CdcJson>,
    /// Compression per codec.
    pub compression: Vec<CompressionJson>,
    /// The files contributing most duplicate bytes at the smallest block size, most first;
    /// `None` when not computed (see `top_files_note`).
    pub top_files: Option<Vec<TopFile>>,
    /// Why `top_files` is absent, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_files_note: Option<String>,
    /// Names of an inode beyond the first met (hard links): their data is counted once, in
    /// no figure above (with `--count-links`, every name counts and this stays 0).
    #[serde(default)]
    pub hardlinks: HardLinks,
}

/// Hard links left out of the reduction: how many names, and their bytes.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct HardLinks {
    /// Names beyond the first.
    pub names: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// One file's part in the duplication, at the smallest dedup block size (zero blocks left out):
/// `duplicate_bytes` are the bytes of its blocks that occur more than once in the scan (in it or
/// elsewhere); `saved_bytes` is its share of what dedup saves, each block stored `c` times
/// saving `(c - 1) x len` shared equally by its `c` occurrences, so that the shares add up to
/// `logical_bytes - zero_bytes - unique_bytes` whatever the order files were read in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopFile {
    /// The file as reports spell it.
    pub path: String,
    /// The block size the figures are at.
    pub block_size: u64,
    /// Bytes of its blocks that occur more than once.
    pub duplicate_bytes: u64,
    /// Its share of what dedup saves.
    pub saved_bytes: u64,
}
