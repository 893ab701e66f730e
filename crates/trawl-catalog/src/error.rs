//! Every way a catalog operation fails, each error naming the file it concerns.

use std::path::PathBuf;

/// Every way a catalog operation fails; each names the catalog file.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Another audit holds the catalog's lock.
    #[error("{}: catalog is in use by pid {pid} (another audit is running on it)", path.display())]
    InUse {
        /// The path concerned.
        path: PathBuf,
        /// The process that holds it.
        pid: String,
    },
    /// No catalog at that path (a command that reads one).
    #[error("{}: no such catalog", path.display())]
    Missing {
        /// The path concerned.
        path: PathBuf,
    },
    /// The file is not a catalog.
    #[error("{}: not a trawl catalog", path.display())]
    NotCatalog {
        /// The path concerned.
        path: PathBuf,
    },
    /// The path names something other than a regular file (a directory, a FIFO).
    #[error("{}: not a regular file; a catalog is one", path.display())]
    NotRegular {
        /// The path concerned.
        path: PathBuf,
    },
    /// An empty file that was not made a catalog by this open (a writer's open without `Init`).
    #[error(
        "{}: an empty file, not a trawl catalog; a catalog is created only where no file exists (or pass --init to make this empty file one)",
        path.display()
    )]
    Empty {
        /// The path concerned.
        path: PathBuf,
    },
    /// A write-ahead log, rollback journal or shared-memory index beside the catalog that is
    /// not the catalog's own: SQLite would apply it on opening, so the catalog is not opened.
    #[error(
        "{}: {fault}: SQLite would apply it to {} on opening; not opened. Remove it if it is not the catalog's own",
        path.display(), catalog.display()
    )]
    Sidecar {
        /// The file beside the catalog.
        path: PathBuf,
        /// The catalog, as named to the open.
        catalog: PathBuf,
        /// What makes it another's.
        fault: SidecarFault,
    },
    #[error(
        "{}: catalog schema version {found} is older than this trawl's ({supported}); `trawl catalog upgrade -c {}` upgrades it in place (so does the next `trawl audit`)",
        path.display(), path.display()
    )]
    /// The catalog's schema is older than this trawl's (it can be upgraded).
    Old {
        /// The path concerned.
        path: PathBuf,
        /// The catalog's version.
        found: i64,
        /// This trawl's.
        supported: i64,
    },
    #[error(
        "{}: catalog schema version {found} is not one this trawl reads (it reads version {supported}); use the trawl that wrote it",
        path.display()
    )]
    /// The catalog's schema is newer than this trawl's.
    Version {
        /// The path concerned.
        path: PathBuf,
        /// The catalog's version.
        found: i64,
        /// This trawl's.
        supported: i64,
    },
    /// SQLite failed.
    #[error("{}: {source}", path.display())]
    Sqlite {
        /// The path concerned.
        path: PathBuf,
        /// Its error.
        source: rusqlite::Error,
    },
    /// A file of the catalog's could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The catalog's list of algorithms names one this trawl does not know.
    #[error("{}: bad algorithm list in catalog: {source}", path.display())]
    Algorithms {
        /// The path concerned.
        path: PathBuf,
        /// The name not known.
        source: trawl_digest::UnknownAlgorithm,
    },
    /// A row names a root that is not one of the audit's: the catalog is inconsistent.
    #[error("{}: a row names root {root}, which is not one of this audit's roots", path.display())]
    UnknownRoot {
        /// The path concerned.
        path: PathBuf,
        /// The root id the row names.
        root: i64,
    },
    /// `--policy` on a catalog that has none.
    #[error(
        "{}: this catalog has no policy; set one with `trawl catalog policy -c {} --every 90d` (and --max-bytes, --max-time, --window)",
        path.display(), path.display()
    )]
    NoPolicy {
        /// The path concerned.
        path: PathBuf,
    },
    /// The policy stored in the catalog holds a value no policy can have.
    #[error(
        "{}: the catalog's policy is not valid: {what}; set a new one with `trawl catalog policy -c {} --every 90d` (and --max-bytes, --max-time, --window), or remove it with `--clear`",
        path.display(), path.display()
    )]
    BadPolicy {
        /// The path concerned.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// Schema objects trawl did not create (a planted trigger or view, one redefined): the
    /// catalog is not used, since they could change what an audit records or reports.
    #[error(
        "{}: the catalog's schema holds what trawl did not create: {}; not used (it may have been tampered with)",
        path.display(), objects.join(", ")
    )]
    Schema {
        /// The path concerned.
        path: PathBuf,
        /// What it holds that trawl did not create.
        objects: Vec<String>,
    },
}

/// What makes a file beside the catalog (its log, journal or index) another's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SidecarFault {
    /// Not a regular file (a symbolic link, most likely).
    #[error("not a regular file (a symbolic link?)")]
    NotRegular,
    /// Owned by another user than the catalog.
    #[error("owned by uid {uid}, not by the catalog's owner (uid {owner})")]
    Owner {
        /// Its owner.
        uid: u32,
        /// The catalog's.
        owner: u32,
    },
    /// A file with other names (hard links).
    #[error("a file with other names (hard links)")]
    Linked,
}

/// A catalog operation's result.
pub type Result<T> = std::result::Result<T, CatalogError>;
