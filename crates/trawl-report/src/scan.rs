//! A scan's report: per file, totals, what was skipped or failed.

use serde::Serialize;

use crate::JsonPath;
use crate::media::{FlvSummary, MediaTotals};
use crate::reduction::ReductionJson;

/// One file, as a JSON Lines record and as an element of the report's `files`.
#[derive(Debug, Serialize, Clone)]
pub struct FileJson {
    #[serde(flatten)]
    pub path: JsonPath,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Modification time, seconds since the epoch (fractional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<f64>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub digests: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorJson>,
    /// For an FLV file: a summary of its keyframe index (the full index goes to
    /// `--media-index`).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::sorted_keys_opt"
    )]
    pub flv: Option<FlvSummary>,
}

#[derive(Debug, Serialize, Clone)]
pub struct ErrorJson {
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct Totals {
    pub files: u64,
    pub bytes: u64,
    pub skipped: u64,
    pub failed: u64,
    pub seconds: f64,
    pub bytes_per_second: f64,
    pub peak_rss_bytes: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct ScanReport {
    pub schema_version: u32,
    pub trawl_version: String,
    pub roots: Vec<JsonPath>,
    pub algorithms: Vec<String>,
    /// For each of `algorithms`, the library that computed it (`"openssl (OpenSSL 3.0.19 ...)"`,
    /// `"RustCrypto sha2"`, ...).
    pub digest_implementations: std::collections::BTreeMap<String, String>,
    pub io: String,
    pub threads: usize,
    pub totals: Totals,
    /// Data reduction figures (see the README's "Data reduction"); absent with --no-reduce.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::sorted_keys_opt"
    )]
    pub reduction: Option<ReductionJson>,
    pub cancelled: bool,
    /// Every file read, sorted by path, then every skipped or failed entry.
    pub files: Vec<FileJson>,
    /// The FLV files indexed, in sum (not written in the JSON).
    #[serde(skip)]
    pub media: MediaTotals,
    pub skipped: Vec<FileJson>,
    pub failed: Vec<FileJson>,
}
