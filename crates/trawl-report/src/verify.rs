//! A verification's report: each manifest entry with its state, and the files the manifest
//! does not list (with `--strict`).

use serde::Serialize;

/// What became of one listed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "detail", rename_all = "snake_case")]
pub enum VerifyState {
    Ok,
    /// Read, and a digest or the size differs (which one is said).
    Failed(String),
    Missing,
    /// Could not be opened or read (why is said).
    Unreadable(String),
}

/// One manifest entry, by its name in the manifest.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyEntry {
    #[serde(serialize_with = "crate::bytes_as_path")]
    pub name: Vec<u8>,
    pub line: usize,
    #[serde(flatten)]
    pub state: VerifyState,
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
