//! An audit run's report: the run's figures, then one event per path that is not plainly ok.
//! Keys are declared in byte order, which is how schema 1 writes them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::JsonPath;

/// Digests by algorithm name, hex.
pub type Digests = BTreeMap<String, String>;

/// Everything but the events (which are streamed from the catalog after it).
#[derive(Debug, Clone, Serialize)]
pub struct AuditHead {
    pub algorithms: Vec<String>,
    pub bytes_read: u64,
    pub catalog: JsonPath,
    pub chain_digest: Option<String>,
    /// Paths per verdict in this run.
    pub counts: BTreeMap<String, u64>,
    pub files_read: u64,
    /// `full` or `metadata`.
    pub mode: String,
    /// Registered files this run did not read (verified recently enough, or past the budget).
    pub not_read: u64,
    pub peak_rss_bytes: Option<u64>,
    pub roots: Vec<JsonPath>,
    pub run: i64,
    pub schema_version: u32,
    pub seconds: f64,
    /// `complete`, or `partial` when a budget stopped the reads.
    pub status: String,
    pub trawl_version: String,
}

/// One event of the run.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    pub actual: Option<Digests>,
    pub detail: Option<String>,
    pub expected: Option<Digests>,
    pub moved_from: Option<String>,
    /// The exact bytes of `moved_from`, in hex, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from_hex: Option<String>,
    #[serde(flatten)]
    pub path: JsonPath,
    pub size: Option<u64>,
    /// The verdict: ok, corrupt, modified, missing, new, moved, unreadable.
    pub state: String,
}

/// The verdicts in the order a person reads them (the JSON's `counts` is sorted by name).
pub const STATES: [&str; 7] = [
    "ok",
    "corrupt",
    "modified",
    "missing",
    "new",
    "moved",
    "unreadable",
];

impl AuditHead {
    /// `counts` in [`STATES`] order, then any other state by name.
    pub fn counts_in_order(&self) -> impl Iterator<Item = (&str, u64)> {
        let known = STATES
            .iter()
            .filter_map(|s| self.counts.get(*s).map(|n| (*s, *n)));
        let other = self
            .counts
            .iter()
            .filter(|(k, _)| !STATES.contains(&k.as_str()))
            .map(|(k, n)| (k.as_str(), *n));
        known.chain(other)
    }
}
