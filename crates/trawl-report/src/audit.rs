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
    /// The catalog's algorithms.
    pub algorithms: Vec<String>,
    /// Bytes read by this run.
    pub bytes_read: u64,
    /// The catalog.
    pub catalog: JsonPath,
    /// The run's seal in the catalog's hash chain (hex).
    pub chain_digest: Option<String>,
    /// Paths per verdict in this run.
    pub counts: BTreeMap<String, u64>,
    /// What the user's rules left out (`--exclude`); absent when none was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excluded: Option<crate::exclude::ExcludedJson>,
    /// Files read by this run.
    pub files_read: u64,
    /// `full`, `metadata` or `stored` (the store's checksums, no download).
    pub mode: String,
    /// Registered files this run did not read (verified recently enough, or past the budget).
    pub not_read: u64,
    /// The process's peak resident memory, where known.
    pub peak_rss_bytes: Option<u64>,
    /// What a run of this mode proves ([`audit_mode_proves`]).
    pub proves: String,
    /// The roots audited.
    pub roots: Vec<JsonPath>,
    /// The run's number in the catalog.
    pub run: i64,
    /// The report layout's version ([`crate::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// How long the run took.
    pub seconds: f64,
    /// `complete`, or `partial` when a budget stopped the reads.
    pub status: String,
    /// The trawl that ran it.
    pub trawl_version: String,
}

/// One event of the run.
#[derive(Debug, Clone, Serialize)]
pub struct AuditEvent {
    /// The digests found now.
    pub actual: Option<Digests>,
    /// More on what happened (an error's message).
    pub detail: Option<String>,
    /// The digests registered.
    pub expected: Option<Digests>,
    /// A moved file's registered name.
    pub moved_from: Option<String>,
    /// The exact bytes of `moved_from`, in hex, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_from_hex: Option<String>,
    /// The path.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Its size now.
    pub size: Option<u64>,
    /// The verdict: ok, corrupt, restored, modified, missing, new, moved, unreadable,
    /// uncompared.
    pub state: String,
}

/// The verdicts in the order a person reads them (the JSON's `counts` is sorted by name).
pub const AUDIT_STATES: [&str; 9] = [
    "ok",
    "corrupt",
    "restored",
    "modified",
    "missing",
    "new",
    "moved",
    "unreadable",
    "uncompared",
];

/// What an audit of `mode` (`full`, `metadata`, `stored`) proves of the files it calls ok: the
/// one statement the run's report, the catalog's report and its page make of it.
pub fn audit_mode_proves(mode: &str) -> &'static str {
    match mode {
        "full" => "the bytes read now have the registered digests",
        "metadata" => "size and mtime as registered; nothing of the bytes",
        "stored" => {
            "the store's own checksum of each object still equals the digest registered from a \
             read (no object read: not that its bytes are readable now)"
        }
        _ => "",
    }
}

impl AuditHead {
    /// `counts` in [`AUDIT_STATES`] order, then any other state by name.
    pub fn counts_in_order(&self) -> impl Iterator<Item = (&str, u64)> {
        let known = AUDIT_STATES
            .iter()
            .filter_map(|s| self.counts.get(*s).map(|n| (*s, *n)));
        let other = self
            .counts
            .iter()
            .filter(|(k, _)| !AUDIT_STATES.contains(&k.as_str()))
            .map(|(k, n)| (k.as_str(), *n));
        known.chain(other)
    }
}

/// One audit run, for the history of a collection.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// The run's number.
    pub run: i64,
    /// Seconds since the epoch.
    pub started: i64,
    /// When it ended (None: it did not).
    pub finished: Option<i64>,
    /// `full`, `metadata` or `stored`.
    pub mode: String,
    /// `complete`, `partial`, `running` or `interrupted`.
    pub status: String,
    /// Files read.
    pub files_read: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Paths per verdict, in [`AUDIT_STATES`] order.
    pub counts: Vec<(String, u64)>,
    /// The run's seal (hex), once sealed.
    pub chain_digest: Option<String>,
}

/// Registered files whose last verification is this old.
#[derive(Debug, Clone, Serialize)]
pub struct AgeBucket {
    /// `never`, `< 1 day`, `1-7 days`, ...
    pub label: String,
    /// Files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A registered file in a state that wants attention.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemFile {
    /// Its state.
    pub state: String,
    /// The path.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Its registered size.
    pub size: u64,
}

/// What a catalog shows of its collection over time: the report an auditor hands on.
#[derive(Debug, Clone, Serialize)]
pub struct CatalogView {
    /// The catalog.
    pub catalog: JsonPath,
    /// Its schema version.
    pub schema: u32,
    /// Its algorithms.
    pub algorithms: Vec<String>,
    /// Its registered roots.
    pub roots: Vec<JsonPath>,
    /// Its size on disk.
    pub catalog_bytes: u64,
    /// When the view was made (seconds since the epoch): ages are counted from it.
    pub now: i64,
    /// Every run, oldest first.
    pub runs: Vec<RunRow>,
    /// Registered files per state: (state, files, bytes).
    pub by_state: Vec<(String, u64, u64)>,
    /// Present files by the age of their last verification.
    pub verification_age: Vec<AgeBucket>,
    /// Files corrupt, missing, modified or unreadable, in path order, the first
    /// [`CatalogView::PROBLEMS`] of them.
    pub problems: Vec<ProblemFile>,
    /// How many files want attention in all.
    pub problem_count: u64,
    /// The chain digest of the last sealed run: what `catalog verify --expect` checks.
    pub chain_head: Option<String>,
    /// The collection's policy and what is due under it (None: it has none).
    pub policy: Option<PolicyView>,
}

/// A collection's policy as the report shows it, and the files due under it now.
#[derive(Debug, Clone, Serialize)]
pub struct PolicyView {
    /// Every file is read at least this often (seconds).
    pub every_secs: u64,
    /// One run reads at most this many bytes.
    pub max_bytes: Option<u64>,
    /// One run reads for at most this long (seconds).
    pub max_time_secs: Option<u64>,
    /// When runs may start (`HH:MM-HH:MM`, local time).
    pub window: Option<String>,
    /// The files due now: present, and never verified or last verified a period ago or more.
    pub due_files: u64,
    /// Their bytes.
    pub due_bytes: u64,
    /// The first [`CatalogView::PROBLEMS`] of them, oldest verification first.
    pub due: Vec<DueRow>,
}

/// A file due for verification.
#[derive(Debug, Clone, Serialize)]
pub struct DueRow {
    /// The path.
    #[serde(flatten)]
    pub path: JsonPath,
    /// Its registered size.
    pub size: u64,
    /// When it was last verified (seconds since the epoch; None: never).
    pub last_verified: Option<i64>,
}

impl CatalogView {
    /// Problems listed at most.
    pub const PROBLEMS: usize = 1000;
}
