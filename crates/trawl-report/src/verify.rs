//! A verification's report: each manifest entry with its state, and the files the manifest
//! does not list (with `--strict`).

use serde::Serialize;

/// What became of one listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyState {
    Ok,
    /// Read, and a digest or the size differs (which one is said).
    Failed(String),
    Missing,
    /// Could not be opened or read (why is said).
    Unreadable(String),
}

/// One manifest entry, by its name in the manifest. Written as `{path, [path_hex,] line,
/// state, detail}`, `path` as in every other report.
#[derive(Debug, Clone)]
pub struct VerifyEntry {
    pub name: Vec<u8>,
    pub line: usize,
    pub state: VerifyState,
}

impl Serialize for VerifyEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use std::os::unix::ffi::OsStrExt;
        let p = crate::JsonPath::new(std::path::Path::new(std::ffi::OsStr::from_bytes(
            &self.name,
        )));
        let (state, detail) = match &self.state {
            VerifyState::Ok => ("ok", None),
            VerifyState::Failed(d) => ("failed", Some(d)),
            VerifyState::Missing => ("missing", None),
            VerifyState::Unreadable(d) => ("unreadable", Some(d)),
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("path", &p.path)?;
        if let Some(h) = &p.path_hex {
            m.serialize_entry("path_hex", h)?;
        }
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("state", state)?;
        m.serialize_entry("detail", &detail)?;
        m.end()
    }
}

/// Everything a verification found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub entries: Vec<VerifyEntry>,
    /// Files under the root that the manifest does not list (`--strict` only), sorted.
    #[serde(serialize_with = "crate::bytes_list_as_paths")]
    pub not_listed: Vec<Vec<u8>>,
    pub strict: bool,
    /// Manifest lines that were refused or malformed (each already reported with its line).
    pub manifest_problems: usize,
    /// Listed files that do not exist, left out with `--ignore-missing`.
    pub missing_ignored: u64,
}

/// `verify --json`: the entries and the totals.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyJson<'a> {
    pub schema_version: u32,
    pub trawl_version: &'a str,
    #[serde(serialize_with = "crate::bytes_as_path")]
    pub manifest: Vec<u8>,
    #[serde(serialize_with = "crate::bytes_as_path")]
    pub root: Vec<u8>,
    pub totals: VerifyTotals,
    pub entries: &'a [VerifyEntry],
    #[serde(serialize_with = "crate::bytes_list_as_paths")]
    pub not_listed: &'a [Vec<u8>],
}

/// Counts by state, as `verify --json` writes them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct VerifyTotals {
    pub listed: u64,
    pub ok: u64,
    pub failed: u64,
    pub missing: u64,
    pub unreadable: u64,
    pub not_listed: u64,
    pub missing_ignored: u64,
    pub manifest_problems: u64,
}

impl VerifyReport {
    pub fn totals(&self) -> VerifyTotals {
        let c = self.counts();
        VerifyTotals {
            listed: self.entries.len() as u64,
            ok: c.ok,
            failed: c.failed,
            missing: c.missing,
            unreadable: c.unreadable,
            not_listed: self.not_listed.len() as u64,
            missing_ignored: self.missing_ignored,
            manifest_problems: self.manifest_problems as u64,
        }
    }
}

/// Counts by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    pub ok: u64,
    pub failed: u64,
    pub missing: u64,
    pub unreadable: u64,
}

impl VerifyReport {
    pub fn counts(&self) -> VerifyCounts {
        let mut c = VerifyCounts::default();
        for e in &self.entries {
            match e.state {
                VerifyState::Ok => c.ok += 1,
                VerifyState::Failed(_) => c.failed += 1,
                VerifyState::Missing => c.missing += 1,
                VerifyState::Unreadable(_) => c.unreadable += 1,
            }
        }
        c
    }
}
