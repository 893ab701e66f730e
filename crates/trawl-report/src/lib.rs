//! The typed report model: what every run of trawl finds, as plain data that serializes to the
//! documented JSON (schema version [`SCHEMA_VERSION`]). Computing fills these types; the
//! renderers (JSON, human text, and later HTML) only read them.
//!
//! One private module per domain, its names shown here through `pub use`: a scan's files,
//! totals and failures ([`ScanReport`]), what the user's rules left out ([`ExcludedJson`]),
//! data reduction ([`ReductionJson`]), where the bytes are ([`Breakdown`]), duplicate files
//! ([`DuplicateSummary`]), the FLV summary a scan carries ([`MediaReport`]), where its CPU went
//! ([`StagesJson`]), an audit run and
//! its events ([`AuditHead`], [`AuditEvent`]), a verification's manifest entries
//! ([`VerifyReport`]), a bag validation's findings ([`BagReport`]), an OCFL validation's
//! objects and findings ([`OcflSummary`]), a catalog's fixity record ([`FixityCheck`]) and an
//! audit's figures for monitoring ([`AuditMetrics`]).
//! Paths are bytes on Unix: [`JsonPath`] holds the name as UTF-8, with U+FFFD for bytes that are
//! not UTF-8, and then `path_hex` with the exact bytes in hex, so that nothing is lost.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod audit;
mod bag;
mod breakdown;
mod duplicates;
mod exclude;
mod fixity;
mod media;
mod metrics;
mod ocfl;
mod reduction;
mod scan;
mod stages;
mod verify;

// A scan: its files, totals and failures.
pub use scan::{
    ErrorJson, FileJson, FileList, FileSizeBucket, FileSource, ReuseJson, ScanReport,
    SizeHistogram, Totals,
};
// What the user's rules left out.
pub use exclude::{EXCLUDED_LISTED, ExcludedEntry, ExcludedJson, ExcludedTally};
pub use stages::{StageRow, StagesJson};
// Data reduction: dedup, CDC, compression, the files holding most duplicates.
pub use reduction::{
    CdcJson, CompressionJson, DedupCounts, DedupJson, HardLinks, ReductionJson, RefBucket,
    SampleJson, SizeBucket, TopFile,
};
// Where the bytes are: by directory, by file type, directories whose content repeats.
pub use breakdown::{Breakdown, DirectoryRow, DuplicateDirectories, Figures, TypeRow};
// Duplicate files as groups.
pub use duplicates::{DuplicateGroup, DuplicateSummary, FileGroup};
// The FLV summary a scan carries, and the media index file.
pub use media::{
    FlvRow, FlvSummary, IndexFile, IntervalBucket, KEYFRAME_INTERVAL_EDGES, Keyframe, MediaReport,
    MediaTotals, TagCounts,
};
// An audit run, its events, and the catalog's view of its runs.
pub use audit::{
    AUDIT_STATES, AgeBucket, AuditEvent, AuditHead, CatalogView, Digests, DueRow, PolicyView,
    ProblemFile, RunRow, audit_mode_proves,
};
// A verification: manifest entries and their states.
pub use verify::{
    EntrySource, VerifyCounts, VerifyEntries, VerifyEntry, VerifyJson, VerifyReport, VerifyState,
    VerifyTotals,
};
// A catalog's files and checks as a preservation record; an audit's figures for monitoring.
pub use fixity::{FixityCheck, FixityObject};
pub use metrics::{AuditMetrics, VerdictFigures};
// A bag validation's findings.
pub use bag::{BagFinding, BagReport, ToFetch};
// An OCFL validation's objects and findings.
pub use ocfl::{ObjectReport, OcflFinding, OcflSummary, Severity};

use serde::{Deserialize, Serialize, Serializer};

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Version of the JSON report layout; bumped on any incompatible change (fields are only ever
/// added within a version). docs/json.md lists what changed from version 1 to 2.
pub const SCHEMA_VERSION: u32 = 2;

/// A path as reports give it: as text, and its exact bytes in hex when they are not UTF-8.
#[derive(Debug, Serialize, Deserialize, Clone, Default, PartialEq, Eq)]
pub struct JsonPath {
    /// The path (lossily, when it is not UTF-8).
    pub path: String,
    /// Its bytes in hex, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
}

impl JsonPath {
    /// A path as reports spell it: as given or walked, without a leading `./` (as manifests
    /// write it).
    pub fn shown(p: &Path) -> JsonPath {
        let mut b = p.as_os_str().as_bytes();
        while let Some(rest) = b.strip_prefix(b"./") {
            b = rest;
        }
        if b.is_empty() {
            b = b".";
        }
        JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b)))
    }

    /// The path as it is.
    pub fn new(p: &Path) -> JsonPath {
        JsonPath::from_bytes(p.as_os_str().as_bytes())
    }

    /// A path given as its bytes.
    pub fn from_bytes(bytes: &[u8]) -> JsonPath {
        match std::str::from_utf8(bytes) {
            Ok(s) => JsonPath {
                path: s.to_string(),
                path_hex: None,
            },
            Err(_) => JsonPath {
                path: String::from_utf8_lossy(bytes).into_owned(),
                path_hex: Some(hex::encode(bytes)),
            },
        }
    }

    /// The path for a page a person reads: as it is when it is UTF-8; else its UTF-8 parts as
    /// they are, every other byte as `\xNN`, and ` (not UTF-8)` after, so that names equal
    /// after lossy decoding (`a` then byte ff, `a` then byte fe, `a\u{fffd}`) stay apart.
    pub fn readable(&self) -> String {
        let Some(bytes) = self.path_hex.as_deref().and_then(|h| hex::decode(h).ok()) else {
            return self.path.clone();
        };
        let mut s = String::with_capacity(bytes.len() + 16);
        for chunk in bytes.utf8_chunks() {
            s.push_str(chunk.valid());
            for b in chunk.invalid() {
                s.push_str(&format!("\\x{b:02x}"));
            }
        }
        s + " (not UTF-8)"
    }
}

impl From<&str> for JsonPath {
    fn from(s: &str) -> JsonPath {
        JsonPath {
            path: s.to_string(),
            path_hex: None,
        }
    }
}

/// For people: the text, and when the bytes are not UTF-8, the bytes too (two names that differ
/// only in bytes that are not UTF-8 read alike as text).
impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path)?;
        if let Some(h) = &self.path_hex {
            write!(f, " [bytes {h}]")?;
        }
        Ok(())
    }
}

/// Serializes a value with its object keys in byte order, at every depth: how schema 1 writes
/// the `reduction` object and a file's `flv` summary.
pub fn sorted_keys<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(v)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Serializes path bytes as a [`JsonPath`] (flattened: `path`, and `path_hex` when needed).
pub fn bytes_as_path<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b))).serialize(s)
}

/// As [`bytes_as_path`], for a list.
pub fn bytes_list_as_paths<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    let paths: Vec<JsonPath> = v
        .iter()
        .map(|b| JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b))))
        .collect();
    paths.serialize(s)
}

/// As [`sorted_keys`], for an optional value.
pub fn sorted_keys_opt<T: Serialize, S: Serializer>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => sorted_keys(v, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn invalid_utf8_keeps_its_bytes() {
        let p = Path::new(OsStr::from_bytes(b"a\xffb"));
        let j = JsonPath::new(p);
        assert_eq!(j.path, "a\u{fffd}b");
        assert_eq!(j.path_hex.as_deref(), Some("61ff62"));
        assert!(JsonPath::new(Path::new("ok")).path_hex.is_none());
    }

    #[test]
    fn names_equal_after_lossy_decoding_read_apart() {
        let read = |b: &[u8]| JsonPath::from_bytes(b).readable();
        let names = [
            read(b"d/a\xff"),
            read(b"d/a\xfe"),
            read("d/a\u{fffd}".as_bytes()),
        ];
        assert_eq!(names[0], r"d/a\xff (not UTF-8)");
        assert_eq!(names[1], r"d/a\xfe (not UTF-8)");
        assert_eq!(names[2], "d/a\u{fffd}");
        assert_eq!(read("café/\u{e9}".as_bytes()), "café/é");
        assert_eq!(read(b"\xc3x\xe9"), r"\xc3x\xe9 (not UTF-8)");
    }
}
