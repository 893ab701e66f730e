//! The audit catalog: one SQLite file that registers a collection and records every audit of it.
//!
//! [`Catalog`] opens (or creates) the file, checks its schema version and holds the lock that keeps
//! a second audit out; [`audit`] records one audit run as it streams by; `chain` seals each run
//! into a hash chain and checks it; `query` answers the read-only questions (report, history,
//! export); `reuse` offers `scan --reuse` the files whose digests still stand. Nothing an audit
//! does holds the collection in memory: every per-file fact goes straight into the database, in
//! batched transactions.
//!
//! The modules, one job each: `open` (opening, locking, the files beside it), `catalog` (what an
//! open catalog says about itself), `error` (how an operation fails), `tables` and `schema`
//! (the tables, and the version and settings checked on opening), `migrate` (the upgrades from
//! schemas 1, 2 and 3), `policy` (the collection's policy, and what is due against it), `audit`
//! and `run` (one audit, recorded and driven), `source` (where its walk and reads are done),
//! `chain` (the seals), `query`, `report`, `summary` and `view` (the read-only answers),
//! `checks` (the files and checks for a preservation record), `standing` (what monitoring
//! asks), `dirs` (directory rows), `digests` and `clock` (digests split back, times; "now" set
//! by a test).
#![deny(missing_docs)]

mod audit;
mod catalog;
mod chain;
mod checks;
mod clock;
mod digests;
mod dirs;
mod error;
mod lock;
mod migrate;
mod open;
mod policy;
mod query;
mod report;
mod reuse;
mod run;
mod schema;
mod source;
mod standing;
mod summary;
mod tables;
mod verdict;
mod view;

pub use audit::{Audit, AuditMode, Planned, Verdict};
pub use catalog::Catalog;
pub use clock::{ClockError, NOW_VAR, fixed_now, format_time, now_secs};
pub use digests::split_digests;
pub use error::{CatalogError, Result, SidecarFault};
pub use lock::Lock;
pub use open::OpenMode;
pub use policy::{DueFile, DueTotals, LONGEST, Policy, Window, WindowError, local_minute};
pub use reuse::RACY_SECONDS;
pub use run::{AuditError, AuditOptions, AuditOutcome, AuditReport, Notice, audit, audit_with};
pub use schema::SCHEMA_VERSION;
pub use source::{
    Expected, Local, ReadPlan, ReadResult, Source, SourceError, StoredPlan, StoredResult, read_plan,
};
pub use standing::Standing;
pub use summary::RunSummary;

pub(crate) use catalog::sql;
