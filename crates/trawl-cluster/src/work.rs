//! [`ScanWork`]: what determines a cluster scan's result, as the `trawl` crate's flags set it.

use std::path::PathBuf;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_reduce::ReduceConfig;
use trawl_s3::ObjectSource;
use trawl_scan::ScanConfig;

/// A cluster scan's settings: the engine's, and which of the results the outputs need.
#[derive(Debug, Clone)]
pub struct ScanWork {
    /// The engine's settings.
    pub cfg: ScanConfig,
    /// Where the roots are `s3://` prefixes: the store's objects under them, connected on this
    /// machine with its own credentials (the listings list them, the maps read them).
    pub objects: Option<Arc<ObjectSource>>,
    /// The digests computed.
    pub algorithms: Vec<Algorithm>,
    /// Data reduction's settings; None: the maps ship no fingerprints.
    pub reduce: Option<ReduceConfig>,
    /// Index FLV files from the scan's buffers.
    pub media: bool,
    /// Count every name of a hard-linked file in the reduction.
    pub count_links: bool,
    /// Bytes of per-file records held in RAM before they wait on disk.
    pub record_memory: usize,
    /// Where records and figures wait on disk (default the system's).
    pub temp_dir: Option<PathBuf>,
    /// Keep every file's record (a report, a manifest or a page is written).
    pub keep_records: bool,
    /// The report lists every file (a JSON report is written).
    pub list_files: bool,
    /// Compare directories by content (a JSON report or a page is written).
    pub duplicate_directories: bool,
}

impl ScanWork {
    /// Where records and figures wait on disk.
    pub(crate) fn spill_dir(&self) -> PathBuf {
        self.temp_dir.clone().unwrap_or_else(std::env::temp_dir)
    }
}
