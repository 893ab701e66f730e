//! A scan's report: per file, totals, what was skipped or failed.

use std::sync::Mutex;

use serde::ser::{Error as _, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};

use crate::JsonPath;
use crate::breakdown::Breakdown;
use crate::duplicates::DuplicateSummary;
use crate::media::{FlvSummary, MediaReport, MediaTotals};
use crate::reduction::ReductionJson;

/// One file, as a JSON Lines record and as an element of the report's `files`.
#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct FileJson {
    /// The file as reports spell it.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Bytes read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Modification time, seconds since the epoch (fractional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<f64>,
    /// Digests by algorithm name (hex).
    #[serde(skip_serializing_if = "serde_json::Map::is_empty", default)]
    pub digests: serde_json::Map<String, serde_json::Value>,
    /// Why it was not read (a skip kind's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Why it could not be read.
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

impl FileJson {
    /// Puts `list` (the report's `skipped` or `failed`) in path order: the order a report gives
    /// them in whatever order the readers or the workers met them, so that the same tree gives
    /// the same report every run.
    pub fn in_path_order(list: &mut [FileJson]) {
        list.sort_by(|a, b| {
            (&a.path.path, &a.path.path_hex).cmp(&(&b.path.path, &b.path.path_hex))
        });
    }

    /// Says of every failure in `list` that `worker` met it (a cluster's listing or shard).
    pub fn met_by(list: &mut [FileJson], worker: Option<&str>) {
        for f in list {
            if let Some(e) = &mut f.error {
                e.worker = worker.map(str::to_string);
            }
        }
    }
}

/// A failure in a record: its kind and its message.
#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct ErrorJson {
    /// `walk`, `symlink-loop`, `open`, `read`, ...: where it failed.
    pub kind: String,
    /// The message, naming the path.
    pub message: String,
    /// On a cluster: the worker that met it (its name and address), as workers may differ in
    /// what they can read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub worker: Option<String>,
}

/// The run's figures.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Files read.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Entries not read (not regular files).
    pub skipped: u64,
    /// Files and directories that failed.
    pub failed: u64,
    /// How long the scan took.
    pub seconds: f64,
    /// Bytes read per second.
    pub bytes_per_second: f64,
    /// The process's peak resident memory, where known: what it holds and the pages of the
    /// files it maps to read them.
    pub peak_rss_bytes: Option<u64>,
    /// The peak of the memory the process holds itself (anonymous pages: what `--memory`
    /// bounds), where known.
    #[serde(default)]
    pub peak_anon_bytes: Option<u64>,
}

/// Files whose size is in `[from, to)`, and their bytes (`from` 0, `to` 1: empty files).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FileSizeBucket {
    /// Smallest size in it.
    pub from: u64,
    /// Past the largest.
    pub to: u64,
    /// Files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// Files counted by size in power-of-two buckets: 0, 1, 2-3, 4-7, ...
#[derive(Debug, Clone)]
pub struct SizeHistogram([(u64, u64); 65]);

impl Default for SizeHistogram {
    fn default() -> SizeHistogram {
        SizeHistogram([(0, 0); 65])
    }
}

impl SizeHistogram {
    /// Counts a file of `size` bytes.
    pub fn add(&mut self, size: u64) {
        let b = (64 - size.leading_zeros()) as usize;
        self.0[b].0 += 1;
        self.0[b].1 += size;
    }

    /// Adds a bucket of another histogram (a cluster's shard).
    pub fn add_bucket(&mut self, b: &FileSizeBucket) {
        let i = if b.from == 0 {
            0
        } else {
            (64 - b.from.leading_zeros()) as usize
        };
        self.0[i].0 += b.files;
        self.0[i].1 += b.bytes;
    }

    /// The buckets from the first to the last with a file, empty ones between them kept.
    pub fn buckets(&self) -> Vec<FileSizeBucket> {
        let used = |b: &usize| self.0[*b].0 > 0;
        let (Some(lo), Some(hi)) = ((0..65).find(used), (0..65).rev().find(used)) else {
            return Vec::new();
        };
        (lo..=hi)
            .map(|b| FileSizeBucket {
                from: if b == 0 { 0 } else { 1 << (b - 1) },
                to: if b == 64 { u64::MAX } else { 1 << b },
                files: self.0[b].0,
                bytes: self.0[b].1,
            })
            .collect()
    }
}

/// The report of a scan (`--json`), as docs/json.md describes it.
#[derive(Debug, Serialize, Deserialize)]
pub struct ScanReport {
    /// The layout's version ([`crate::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The trawl that wrote it.
    pub trawl_version: String,
    /// The roots as given.
    pub roots: Vec<JsonPath>,
    /// Digest algorithms computed.
    pub algorithms: Vec<String>,
    /// For each of `algorithms`, the library that computed it (`"openssl (OpenSSL 3.0.19 ...)"`,
    /// `"RustCrypto sha2"`, ...).
    pub digest_implementations: std::collections::BTreeMap<String, String>,
    /// How bytes came in (`--io`).
    pub io: String,
    /// Compute threads.
    pub threads: usize,
    /// The run's figures.
    pub totals: Totals,
    /// Data reduction figures (see the README's "Data reduction"); absent with --no-reduce.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::sorted_keys_opt"
    )]
    pub reduction: Option<ReductionJson>,
    /// Always false: an interrupted scan writes no report.
    pub cancelled: bool,
    /// Files by size, in power-of-two buckets.
    #[serde(default)]
    pub file_sizes: Vec<FileSizeBucket>,
    /// Every file read, sorted by path (streamed from wherever the records wait); not read
    /// back from a saved report.
    #[serde(skip_deserializing)]
    pub files: FileList,
    /// The FLV files indexed, in sum (not written in the JSON).
    #[serde(skip)]
    pub media: MediaTotals,
    /// The FLV files: durations, keyframes, keyframe intervals, problems (when there are any).
    #[serde(rename = "media", skip_serializing_if = "Option::is_none", default)]
    pub flv: Option<MediaReport>,
    /// By directory, by type, and equal directories (with the data reduction).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub breakdown: Option<Breakdown>,
    /// Files of equal content (with `--duplicates`): totals and the largest groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates: Option<DuplicateSummary>,
    /// What the user's rules left out (`--exclude`); absent when none was given.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub excluded: Option<crate::exclude::ExcludedJson>,
    /// With `--reuse`: the files whose digests were taken from a catalog, and those read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reuse: Option<ReuseJson>,
    /// Where the CPU went, by stage (with `--stats`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stages: Option<crate::stages::StagesJson>,
    /// Entries not read, in path order.
    pub skipped: Vec<FileJson>,
    /// Entries that failed, in path order.
    pub failed: Vec<FileJson>,
}

/// The report's `reuse` (`scan --reuse CATALOG`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReuseJson {
    /// The catalog the digests came from, as given.
    pub catalog: String,
    /// What must be as the catalog recorded it for a file's digests to be taken: `size`,
    /// `mtime`, `ctime`, `inode` (its device and inode numbers).
    pub rule: Vec<String>,
    /// Files whose digests were taken from the catalog: not read.
    pub taken: u64,
    /// Files read (those of `totals.files` not taken).
    pub read: u64,
    /// Of those read, files the catalog held that were no longer as it recorded them.
    pub changed: u64,
}

/// A source of the records of `files`, in order; an error ends it.
pub type FileSource = Box<dyn FnMut() -> std::io::Result<Option<FileJson>> + Send>;

/// The report's `files`: either a list in RAM or records read back as they are written, so
/// that a report of 10^8 files is written without ever holding them. A streamed list is
/// written once; writing it again gives an error.
pub struct FileList(Mutex<Files>);

enum Files {
    InRam(Vec<FileJson>),
    Stream(FileSource),
    Written,
}

impl FileList {
    /// A list held in RAM.
    pub fn new(files: Vec<FileJson>) -> FileList {
        FileList(Mutex::new(Files::InRam(files)))
    }

    /// Records made by `next` as the list is written.
    pub fn stream(next: FileSource) -> FileList {
        FileList(Mutex::new(Files::Stream(next)))
    }

    /// The list, if it is in RAM.
    pub fn in_ram(&self) -> Option<Vec<FileJson>> {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Files::InRam(v) => Some(v.clone()),
            _ => None,
        }
    }
}

impl Default for FileList {
    fn default() -> FileList {
        FileList::new(Vec::new())
    }
}

impl std::fmt::Debug for FileList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            Files::InRam(v) => f.debug_list().entries(v).finish(),
            Files::Stream(_) => f.write_str("FileList(stream)"),
            Files::Written => f.write_str("FileList(written)"),
        }
    }
}

impl Serialize for FileList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *g {
            Files::InRam(v) => v.serialize(s),
            Files::Written => Err(S::Error::custom(
                "the streamed file list was written already",
            )),
            Files::Stream(next) => {
                let mut seq = s.serialize_seq(None)?;
                while let Some(f) = next().map_err(S::Error::custom)? {
                    seq.serialize_element(&f)?;
                }
                *g = Files::Written;
                seq.end()
            }
        }
    }
}
