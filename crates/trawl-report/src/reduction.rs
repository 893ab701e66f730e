//! The data-reduction report (`reduction` in a scan's JSON): dedup per block size, CDC,
//! compression per codec, the combined figure, and the files contributing most duplicates.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RefBucket {
    /// Distinct blocks referenced from `from` to `to` times (`to` null: or more).
    pub from: u64,
    pub to: Option<u64>,
    pub blocks: u64,
    /// References to those blocks: the blocks a file system without dedup would store.
    #[serde(default)]
    pub referenced_blocks: u64,
    /// Bytes of all those references (what storage without dedup holds), and of the blocks
    /// once (what dedup stores): at the smallest block size, when the files holding the
    /// duplicates are worked out (not with `--sample` or `--top-files 0`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub logical_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stored_bytes: Option<u64>,
}

/// The figures of one way of cutting the data (fixed blocks of one size, or CDC chunks).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DedupCounts {
    pub logical_bytes: u64,
    pub blocks: u64,
    pub unique_blocks: u64,
    pub unique_bytes: u64,
    pub zero_blocks: u64,
    pub zero_bytes: u64,
    pub ratio: Option<f64>,
    pub references: Vec<RefBucket>,
    /// Present when estimated from a sample (`--sample`): the interval is of `unique_bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<SampleJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DedupJson {
    pub block_size: u64,
    #[serde(flatten)]
    pub counts: DedupCounts,
}

/// How an estimate was sampled and its interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SampleJson {
    pub rate: f64,
    /// Distinct blocks (or units) kept in the sample.
    pub kept: u64,
    pub confidence: f64,
    pub low: u64,
    pub high: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CdcJson {
    pub avg_size: u64,
    pub min_size: u64,
    pub max_size: u64,
    #[serde(flatten)]
    pub counts: DedupCounts,
    /// Chunk lengths: how many chunks fall in [2^k, 2^(k+1)).
    pub chunk_sizes: Vec<SizeBucket>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SizeBucket {
    pub from: u64,
    pub to: u64,
    pub chunks: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompressionJson {
    pub codec: String,
    /// Null for a codec without levels (lz4).
    pub level: Option<i64>,
    pub implementation: String,
    pub unit: u64,
    pub sector: u64,
    pub threshold: f64,
    pub units: u64,
    pub logical_bytes: u64,
    pub compressed_bytes: u64,
    pub allocated_bytes: u64,
    pub ratio: Option<f64>,
    pub combined_allocated_bytes: u64,
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
    pub fingerprint: String,
    pub dedup: Vec<DedupJson>,
    pub cdc: Option<CdcJson>,
    pub compression: Vec<CompressionJson>,
    /// The files contributing most duplicate bytes at the smallest block size, most first;
    /// `None` when not computed (see `top_files_note`).
    pub top_files: Option<Vec<TopFile>>,
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
    pub names: u64,
    pub bytes: u64,
}

/// One file's part in the duplication, at the smallest dedup block size (zero blocks left out):
/// `duplicate_bytes` are the bytes of its blocks that occur more than once in the scan (in it or
/// elsewhere); `saved_bytes` is its share of what dedup saves, each block stored `c` times
/// saving `(c - 1) x len` shared equally by its `c` occurrences, so that the shares add up to
/// `logical_bytes - zero_bytes - unique_bytes` whatever the order files were read in.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopFile {
    pub path: String,
    pub block_size: u64,
    pub duplicate_bytes: u64,
    pub saved_bytes: u64,
}
