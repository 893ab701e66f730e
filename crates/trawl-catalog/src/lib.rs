//! The audit catalog: one SQLite file that registers a collection and records every audit of it.
//!
//! [`Catalog`] opens (or creates) the file, checks its schema version and holds the lock that keeps
//! a second audit out; [`audit`] records one audit run as it streams by; `chain` seals each run
//! into a hash chain and checks it; `query` answers the read-only questions (report, history,
//! export). Nothing here holds the collection in memory: every per-file fact goes straight into
//! the database, in batched transactions.
#![deny(missing_docs)]

mod audit;
mod chain;
mod dirs;
mod lock;
mod migrate;
mod query;
mod report;
mod run;
mod schema;
mod source;
mod summary;
mod verdict;
mod view;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags, OptionalExtension};
use trawl_digest::Algorithm;

pub use audit::{Audit, AuditMode, Planned, Verdict};
pub use lock::Lock;
pub use run::{AuditError, AuditOptions, AuditOutcome, AuditReport, Notice, audit, audit_with};
pub use schema::SCHEMA_VERSION;
pub use source::{Expected, Local, ReadPlan, ReadResult, Source, SourceError};

/// Splits a catalog's concatenated digests (in the catalog's algorithm order) by algorithm.
pub fn split_digests(algs: &[Algorithm], d: &[u8]) -> Vec<(Algorithm, Vec<u8>)> {
    let mut out = Vec::new();
    let mut off = 0;
    for a in algs {
        let n = a.output_len();
        if off + n <= d.len() {
            out.push((*a, d[off..off + n].to_vec()));
        }
        off += n;
    }
    out
}

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
    /// The catalog holds what it cannot (a row naming what does not exist).
    #[error("{}: {msg}", path.display())]
    Invalid {
        /// The path concerned.
        path: PathBuf,
        /// What is wrong.
        msg: String,
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

/// A catalog operation's result.
pub type Result<T> = std::result::Result<T, CatalogError>;

/// How a catalog is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Take the exclusive lock (audits); a catalog is created only where no file exists.
    Write,
    /// As `Write`, and an existing empty file may be made a catalog (an explicit `--init`).
    Init,
    /// Must exist; no lock, no writes (report, history, export, verify).
    Read,
    /// Must exist; as `Write` otherwise (an upgrade of an older catalog).
    Upgrade,
}

/// Refuses to open a catalog beside which SQLite would find a write-ahead log, a rollback
/// journal or a shared-memory index that is not the catalog's own: a link, a file with other
/// names, or a file of another owner than the catalog's. SQLite applies a log it finds on the
/// next open, so whoever can write into the catalog's directory could otherwise change its
/// contents (or its schema) without touching the file.
fn check_sidecars(real: &Path, path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(owner) = std::fs::metadata(real).map(|m| m.uid()) else {
        return Ok(());
    };
    for suffix in ["-wal", "-journal", "-shm"] {
        let mut name = real.as_os_str().to_owned();
        name.push(suffix);
        let side = PathBuf::from(name);
        let m = match std::fs::symlink_metadata(&side) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(CatalogError::Io { path: side, source }),
        };
        let why = if !m.file_type().is_file() {
            "not a regular file (a symbolic link?)".to_string()
        } else if m.uid() != owner {
            format!(
                "owned by uid {}, not by the catalog's owner (uid {owner})",
                m.uid()
            )
        } else if m.nlink() > 1 {
            "a file with other names (hard links)".to_string()
        } else {
            continue;
        };
        return Err(CatalogError::Invalid {
            path: side,
            msg: format!(
                "{why}: SQLite would apply it to {} on opening; not opened. Remove it if it is not the catalog's own",
                path.display()
            ),
        });
    }
    Ok(())
}

/// An open catalog.
pub struct Catalog {
    conn: Connection,
    path: PathBuf,
    /// The schema version this open upgraded the catalog from.
    upgraded_from: Option<i64>,
    _lock: Option<lock::Lock>,
}

impl Catalog {
    /// Opens the catalog at `path`. A symbolic link is resolved first, so that SQLite's
    /// write-ahead log and lock files sit beside the real file whatever name reached it. An
    /// existing file is never started over: it must be a trawl catalog (an empty file is
    /// refused unless the mode is `Init`).
    pub fn open(path: &Path, mode: OpenMode) -> Result<Catalog> {
        use std::os::unix::fs::OpenOptionsExt;
        let io = |source| CatalogError::Io {
            path: path.into(),
            source,
        };
        let real = match path.canonicalize() {
            Ok(p) => p,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if matches!(mode, OpenMode::Read | OpenMode::Upgrade) {
                    return Err(CatalogError::Missing { path: path.into() });
                }
                path.to_path_buf()
            }
            Err(e) => return Err(io(e)),
        };
        check_sidecars(&real, path)?;
        let write = mode != OpenMode::Read;
        let (lock, created) = if write {
            // Create only where nothing exists (O_EXCL), so that "new" is known, not guessed.
            let created = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_CLOEXEC)
                .mode(0o666)
                .open(&real);
            let created = match created {
                Ok(_) => true,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(io(e)),
            };
            // Opened without following a link (`real` has none left) and without blocking.
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(&real)
                .map_err(io)?;
            let md = file.metadata().map_err(io)?;
            if !md.is_file() {
                return Err(CatalogError::Invalid {
                    path: path.into(),
                    msg: "not a regular file; a catalog is one".into(),
                });
            }
            let lock = lock::Lock::acquire(path, file)?;
            if !created && md.len() == 0 && mode != OpenMode::Init {
                return Err(CatalogError::Invalid {
                    path: path.into(),
                    msg: "an empty file, not a trawl catalog; a catalog is created only where \
                          no file exists (or pass --init to make this empty file one)"
                        .into(),
                });
            }
            (Some(lock), created || md.len() == 0)
        } else {
            (None, false)
        };
        let flags = if write {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&real, flags).map_err(|e| sql(path, e))?;
        let mut cat = Catalog {
            conn,
            path: path.into(),
            upgraded_from: None,
            _lock: lock,
        };
        cat.conn
            .busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| sql(path, e))?;
        match schema::prepare(&mut cat.conn, path, write, created) {
            Ok(from) => cat.upgraded_from = from,
            Err(e) => {
                if created {
                    // Leave nothing behind for a catalog that never came to be.
                    drop(cat);
                    let _ = std::fs::remove_file(&real);
                }
                return Err(e);
            }
        }
        if write {
            // We hold the lock: a run still marked running belongs to a process that is gone.
            cat.conn
                .execute(
                    "UPDATE runs SET status = 'interrupted' WHERE status = 'running'",
                    [],
                )
                .map_err(|e| cat.err(e))?;
        }
        Ok(cat)
    }

    /// The catalog's path as opened.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version this open upgraded the catalog from (None: it was current).
    pub fn upgraded_from(&self) -> Option<i64> {
        self.upgraded_from
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> CatalogError {
        sql(&self.path, e)
    }

    /// The algorithms this catalog records, primary first; empty before the first audit.
    pub fn algorithms(&self) -> Result<Vec<Algorithm>> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'algorithms'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        match v {
            None => Ok(Vec::new()),
            Some(s) => trawl_digest::parse_list(&s).map_err(|e| CatalogError::Invalid {
                path: self.path.clone(),
                msg: format!("bad algorithm list in catalog: {e}"),
            }),
        }
    }

    /// Fixes the algorithms of a new catalog.
    pub fn set_algorithms(&mut self, algs: &[Algorithm]) -> Result<()> {
        let s = algs.iter().map(|a| a.name()).collect::<Vec<_>>().join(",");
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('algorithms', ?1)",
                [s],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The (dev, ino) of the catalog's own files, so that an audit of a tree holding the catalog
    /// leaves them out.
    pub fn own_files(&self) -> Vec<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        self.own_paths()
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|md| (md.dev(), md.ino()))
            .collect()
    }

    /// The canonical names of the catalog's own files (the database and its journals), whether
    /// they exist yet or not.
    pub fn own_paths(&self) -> Vec<PathBuf> {
        let real = self
            .path
            .canonicalize()
            .unwrap_or_else(|_| self.path.clone());
        ["", "-wal", "-shm", "-journal"]
            .iter()
            .map(|suffix| {
                let mut p = real.clone().into_os_string();
                p.push(suffix);
                PathBuf::from(p)
            })
            .collect()
    }

    /// The registered roots, by id.
    pub fn roots(&self) -> Result<Vec<(i64, PathBuf)>> {
        use std::os::unix::ffi::OsStringExt;
        let mut st = self
            .conn
            .prepare("SELECT id, path FROM roots ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    PathBuf::from(std::ffi::OsString::from_vec(r.get::<_, Vec<u8>>(1)?)),
                ))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// How many files are registered under these roots (exactly these root paths).
    pub fn files_under(&self, roots: &[PathBuf]) -> Result<i64> {
        let mut n = 0;
        for (id, path) in self.roots()? {
            if roots.contains(&path) {
                n += self
                    .conn
                    .query_row(
                        "SELECT count(*) FROM files f JOIN dirs d ON d.id = f.dir WHERE d.root = ?1",
                        [id],
                        |r| r.get::<_, i64>(0),
                    )
                    .map_err(|e| self.err(e))?;
            }
        }
        Ok(n)
    }

    /// The SQLite connection (read-only questions beyond this crate's).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

pub(crate) fn sql(path: &Path, e: rusqlite::Error) -> CatalogError {
    CatalogError::Sqlite {
        path: path.into(),
        source: e,
    }
}

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A Unix time as `2026-11-22T12:00:00Z`.
pub fn format_time(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(r: Result<Catalog>) -> CatalogError {
        match r {
            Ok(_) => panic!("opened"),
            Err(e) => e,
        }
    }

    fn pragma(path: &Path, name: &str) -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    }

    /// Concatenated digests are cut at each algorithm's length, in the catalog's order; a row
    /// registered before an algorithm was added holds only the ones before it, and a digest
    /// cut short is none.
    #[test]
    fn digests_split_at_each_algorithms_length() {
        let algs = [Algorithm::Sha256, Algorithm::Md5];
        let d: Vec<u8> = (0..48).collect();
        assert_eq!(
            split_digests(&algs, &d),
            [
                (Algorithm::Sha256, d[..32].to_vec()),
                (Algorithm::Md5, d[32..].to_vec())
            ]
        );
        assert_eq!(
            split_digests(&algs, &d[..32]),
            [(Algorithm::Sha256, d[..32].to_vec())]
        );
        assert_eq!(split_digests(&algs, &d[..47]).len(), 1);
        assert!(split_digests(&algs, &d[..31]).is_empty());
    }

    /// Times as `date -u -d @SECONDS +%FT%TZ` prints them; a time before the epoch is the epoch.
    #[test]
    fn times_are_rfc_3339_in_utc() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_time(1_000_000_000), "2001-09-09T01:46:40Z");
        assert_eq!(format_time(1_709_208_000), "2024-02-29T12:00:00Z");
        assert_eq!(format_time(-5), "1970-01-01T00:00:00Z");
    }

    /// A catalog is made only where no file is (or an empty one, asked with `Init`); a reader
    /// needs one there; a file that is not SQLite, or SQLite of another program, is refused and
    /// left as it was.
    #[test]
    fn a_catalog_is_made_only_where_nothing_is_and_other_files_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        for mode in [OpenMode::Read, OpenMode::Upgrade] {
            let e = refused(Catalog::open(&p, mode));
            assert!(matches!(e, CatalogError::Missing { .. }), "{e}");
        }
        assert!(!p.exists());
        drop(Catalog::open(&p, OpenMode::Write).unwrap());
        assert_eq!(pragma(&p, "application_id"), 0x7472_776c);
        assert_eq!(pragma(&p, "user_version"), SCHEMA_VERSION);
        Catalog::open(&p, OpenMode::Read).unwrap();

        let empty = t.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        let e = refused(Catalog::open(&empty, OpenMode::Write));
        assert!(
            e.to_string().contains("an empty file, not a trawl catalog"),
            "{e}"
        );
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
        drop(Catalog::open(&empty, OpenMode::Init).unwrap());
        assert_eq!(pragma(&empty, "application_id"), 0x7472_776c);

        let text = t.path().join("notes.db");
        let words =
            b"a text file of notes, long enough to hold a page header, and no database".repeat(9);
        std::fs::write(&text, &words).unwrap();
        let other = t.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
            .unwrap();
        let before = std::fs::read(&other).unwrap();
        for mode in [OpenMode::Read, OpenMode::Write, OpenMode::Init] {
            for f in [&text, &other] {
                let e = refused(Catalog::open(f, mode));
                assert!(
                    matches!(e, CatalogError::NotCatalog { .. }),
                    "{mode:?}: {e}"
                );
            }
        }
        assert_eq!(std::fs::read(&text).unwrap(), words);
        assert_eq!(std::fs::read(&other).unwrap(), before);
    }

    /// A catalog of a schema this trawl does not write is named with both versions: an older
    /// one with the command that upgrades it, a newer one as not readable here.
    #[test]
    fn a_schema_version_other_than_this_trawls_is_named() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        drop(Catalog::open(&p, OpenMode::Write).unwrap());
        let set = |v: i64| {
            Connection::open(&p)
                .unwrap()
                .pragma_update(None, "user_version", v)
                .unwrap()
        };
        set(SCHEMA_VERSION + 1);
        for mode in [OpenMode::Read, OpenMode::Write] {
            match refused(Catalog::open(&p, mode)) {
                CatalogError::Version {
                    found, supported, ..
                } => {
                    assert_eq!((found, supported), (SCHEMA_VERSION + 1, SCHEMA_VERSION))
                }
                e => panic!("{mode:?}: {e}"),
            }
        }
        set(1);
        let e = refused(Catalog::open(&p, OpenMode::Read));
        assert!(matches!(e, CatalogError::Old { found: 1, .. }), "{e}");
        assert!(e.to_string().contains("`trawl catalog upgrade -c "), "{e}");
        assert_eq!(pragma(&p, "user_version"), 1, "a reader upgrades nothing");
    }

    /// A write-ahead log (or journal, or shared-memory index) beside the catalog that is a
    /// link, or a file with other names, is not the catalog's own: the catalog is not opened,
    /// the file named.
    #[test]
    fn a_sidecar_that_is_a_link_or_has_other_names_stops_the_open() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        drop(Catalog::open(&p, OpenMode::Write).unwrap());
        let planted = t.path().join("planted");
        std::fs::write(&planted, b"a log from elsewhere").unwrap();
        for (suffix, how) in [
            ("-wal", "link"),
            ("-journal", "hard link"),
            ("-shm", "link"),
        ] {
            let side = t.path().join(format!("cat.db{suffix}"));
            match how {
                "link" => std::os::unix::fs::symlink(&planted, &side).unwrap(),
                _ => std::fs::hard_link(&planted, &side).unwrap(),
            }
            for mode in [OpenMode::Read, OpenMode::Write] {
                match refused(Catalog::open(&p, mode)) {
                    CatalogError::Invalid { path, msg } => {
                        assert_eq!(path, side);
                        let why = if how == "link" {
                            "not a regular file (a symbolic link?)"
                        } else {
                            "a file with other names (hard links)"
                        };
                        assert!(msg.starts_with(why), "{msg}");
                    }
                    e => panic!("{suffix}: {e}"),
                }
            }
            std::fs::remove_file(&side).unwrap();
        }
        Catalog::open(&p, OpenMode::Write).unwrap();
        assert_eq!(std::fs::read(&planted).unwrap(), b"a log from elsewhere");
    }
}
