//! [`ScanOptions`]: what a scan reads, computes and keeps; its setters imply what an option
//! needs (the records a comparison of directories reads) and refuse what cannot work.

use std::path::PathBuf;

use trawl_digest::Algorithm;
use trawl_reduce::ReduceConfig;
use trawl_scan::ScanConfig;

/// Default bound on the records in RAM.
pub const RECORD_MEMORY: usize = 16 << 20;

/// What a scan reads, computes and keeps: made by [`ScanOptions::new`] (the engine's settings and
/// the digests), then its setters.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    pub(crate) cfg: ScanConfig,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) reduce: Option<ReduceConfig>,
    pub(crate) media: bool,
    pub(crate) exclude: Vec<(u64, u64)>,
    pub(crate) count_links: bool,
    pub(crate) file_records: bool,
    pub(crate) keep_records: bool,
    pub(crate) record_memory: usize,
    pub(crate) temp_dir: Option<PathBuf>,
    pub(crate) media_indexes: bool,
    pub(crate) duplicates: Option<Algorithm>,
    pub(crate) duplicate_directories: bool,
    pub(crate) disk_usage: bool,
    pub(crate) files: Option<Vec<PathBuf>>,
    pub(crate) map_partitions: Option<u32>,
    pub(crate) listing: Option<std::sync::Arc<dyn trawl_scan::Listing>>,
}

/// An option that cannot work with the others.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    /// Duplicates are grouped by a digest the scan computes.
    #[error("duplicates are grouped by {0}, which the scan does not compute")]
    DuplicatesDigest(Algorithm),
    /// A cluster's map folds its reduction into partitions: at least one.
    #[error("a map needs at least one partition")]
    NoPartitions,
    /// A sampled reduction cannot be split across machines (each map's sample would differ).
    #[error("a sampled reduction cannot be mapped")]
    SampledMap,
    /// Digests taken from a catalog read no bytes; the data reduction and the FLV index need
    /// every file's.
    #[error("{0} reads every file, and files whose digests are reused are not read")]
    ReuseReads(&'static str),
}

impl ScanOptions {
    /// Reads the roots of `cfg` once with `algorithms`; no reduction, no media, the records
    /// counted and not kept, [`RECORD_MEMORY`] for them, the system's temporary directory.
    pub fn new(cfg: ScanConfig, algorithms: Vec<Algorithm>) -> ScanOptions {
        ScanOptions {
            cfg,
            algorithms,
            reduce: None,
            media: false,
            exclude: Vec::new(),
            count_links: false,
            file_records: false,
            keep_records: false,
            record_memory: RECORD_MEMORY,
            temp_dir: None,
            media_indexes: false,
            duplicates: None,
            duplicate_directories: false,
            disk_usage: false,
            files: None,
            map_partitions: None,
            listing: None,
        }
    }

    /// Data reduction with these settings (None: none).
    pub fn reduce(mut self, r: Option<ReduceConfig>) -> Self {
        self.reduce = r;
        self
    }

    /// Index FLV files from the scan's buffers.
    pub fn media(mut self, on: bool) -> Self {
        self.media = on;
        self
    }

    /// Keep each FLV file's full keyframe index for [`ScanResult::media_indexes`] (one per FLV
    /// file, in RAM until the end); implies [`ScanOptions::media`].
    ///
    /// [`ScanResult::media_indexes`]: crate::ScanResult::media_indexes
    pub fn media_indexes(mut self, on: bool) -> Self {
        self.media_indexes = on;
        self.media |= on;
        self
    }

    /// Files (device, inode) that are not part of the tree: the caller's own outputs, which may
    /// sit inside it.
    pub fn exclude(mut self, files: Vec<(u64, u64)>) -> Self {
        self.exclude = files;
        self
    }

    /// Count every name of a file with hard links in the reduction (by default an inode's data
    /// is counted once, as `du` does).
    pub fn count_links(mut self, on: bool) -> Self {
        self.count_links = on;
        self
    }

    /// Keep the per-file records (for manifests, a page, ncdu): [`ScanResult::records`].
    ///
    /// [`ScanResult::records`]: crate::ScanResult::records
    pub fn keep_records(mut self, on: bool) -> Self {
        self.keep_records |= on;
        self
    }

    /// Fill the report's `files` (streamed from the records when it is written); implies
    /// [`ScanOptions::keep_records`].
    pub fn list_files(mut self, on: bool) -> Self {
        self.file_records = on;
        self.keep_records |= on;
        self
    }

    /// Find directories of equal content (from the kept records, by the strongest digest);
    /// implies [`ScanOptions::keep_records`].
    pub fn duplicate_directories(mut self, on: bool) -> Self {
        self.duplicate_directories = on;
        self.keep_records |= on;
        self
    }

    /// Keep each file's inode, names and bytes on disk in its record (for `--ncdu`); implies
    /// [`ScanOptions::keep_records`].
    pub fn disk_usage(mut self, on: bool) -> Self {
        self.disk_usage = on;
        self.keep_records |= on;
        self
    }

    /// Bytes of per-file records held in RAM; past it they wait in sorted runs on disk.
    pub fn record_memory(mut self, bytes: usize) -> Self {
        self.record_memory = bytes;
        self
    }

    /// Where records (and the fingerprint spill) go past their budgets; default the system's.
    pub fn temp_dir(mut self, dir: Option<PathBuf>) -> Self {
        self.temp_dir = dir;
        self
    }

    /// Group the files of equal content by `digest` (see [`crate::comparing_digest`]), which
    /// must be one the scan computes.
    pub fn duplicates(mut self, digest: Option<Algorithm>) -> Result<Self, OptionsError> {
        if let Some(a) = digest
            && !self.algorithms.contains(&a)
        {
            return Err(OptionsError::DuplicatesDigest(a));
        }
        self.duplicates = digest;
        Ok(self)
    }

    /// Read what `listing` lists (objects under prefixes of a store) instead of walking the
    /// roots; the roots stay what names are made relative to.
    pub fn listing(mut self, listing: std::sync::Arc<dyn trawl_scan::Listing>) -> Self {
        self.listing = Some(listing);
        self
    }

    /// Take the digests of the files `known` holds and finds unchanged instead of reading
    /// them (`scan --reuse`). Refused with a reduction or the FLV index, which need the bytes;
    /// the files are read as listed (ordering them by their place on disk would open each).
    pub fn reuse(mut self, known: std::sync::Arc<trawl_scan::Known>) -> Result<Self, OptionsError> {
        if self.reduce.is_some() {
            return Err(OptionsError::ReuseReads("the data reduction"));
        }
        if self.media {
            return Err(OptionsError::ReuseReads("the FLV index"));
        }
        if self.cfg.read_order == trawl_scan::ReadOrder::Auto {
            self.cfg.read_order = trawl_scan::ReadOrder::Walk;
        }
        self.cfg.known = Some(known);
        Ok(self)
    }

    /// Be one map of a cluster's scan: read exactly `files` instead of walking the roots
    /// (symbolic links followed, a missing file a failure; with [`ScanOptions::listing`],
    /// through its source, each name looked up there), and fold the reduction into
    /// `partitions` fingerprint partitions' batches instead of counting it
    /// ([`crate::Scan::take_map`]).
    pub fn shard(mut self, files: Vec<PathBuf>, partitions: u32) -> Result<Self, OptionsError> {
        if partitions == 0 {
            return Err(OptionsError::NoPartitions);
        }
        if self.reduce.as_ref().is_some_and(|r| r.sample.is_some()) {
            return Err(OptionsError::SampledMap);
        }
        self.files = Some(files);
        self.map_partitions = Some(partitions);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ScanOptions {
        ScanOptions::new(ScanConfig::new(vec![]), vec![Algorithm::Sha256])
    }

    #[test]
    fn what_reads_the_records_keeps_them() {
        assert!(!opts().keep_records);
        assert!(opts().list_files(true).keep_records);
        assert!(opts().duplicate_directories(true).keep_records);
        assert!(opts().disk_usage(true).keep_records);
        assert!(opts().media_indexes(true).media);
        // Turning one off leaves what another asked for.
        let o = opts().keep_records(true).list_files(false);
        assert!(o.keep_records && !o.file_records);
    }

    #[test]
    fn options_that_cannot_work_are_refused() {
        assert_eq!(
            opts().duplicates(Some(Algorithm::Md5)).unwrap_err(),
            OptionsError::DuplicatesDigest(Algorithm::Md5)
        );
        assert!(opts().duplicates(Some(Algorithm::Sha256)).is_ok());
        assert_eq!(
            opts().shard(vec![], 0).unwrap_err(),
            OptionsError::NoPartitions
        );
        let sampled = ReduceConfig {
            sample: Some(0.1),
            ..ReduceConfig::default()
        };
        assert_eq!(
            opts().reduce(Some(sampled)).shard(vec![], 4).unwrap_err(),
            OptionsError::SampledMap
        );
        let known = std::sync::Arc::new(trawl_scan::KnownBuilder::new(&[], 1).build(false, false));
        let reducing = opts().reduce(Some(ReduceConfig::default()));
        assert!(matches!(
            reducing.reuse(known.clone()),
            Err(OptionsError::ReuseReads(_))
        ));
        assert!(matches!(
            opts().media(true).reuse(known.clone()),
            Err(OptionsError::ReuseReads(_))
        ));
        let o = opts().reuse(known).unwrap();
        assert_eq!(o.cfg.read_order, trawl_scan::ReadOrder::Walk);
    }
}
