//! The catalog's tables, its schema version and the connection settings (WAL, batching-friendly).

use std::path::Path;

use rusqlite::Connection;

use crate::{CatalogError, Result, sql};

/// The schema this trawl writes and reads (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 1;

/// `PRAGMA application_id`: "trwl", so that other SQLite files are told apart from catalogs.
const APPLICATION_ID: i64 = 0x7472_776c;

const DDL: &str = "
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE roots(id INTEGER PRIMARY KEY, path BLOB NOT NULL UNIQUE);
CREATE TABLE runs(
    id INTEGER PRIMARY KEY,
    started INTEGER NOT NULL,
    finished INTEGER,
    status TEXT NOT NULL,
    mode TEXT NOT NULL,
    roots TEXT NOT NULL,
    options TEXT NOT NULL,
    pid INTEGER,
    files_read INTEGER NOT NULL DEFAULT 0,
    bytes_read INTEGER NOT NULL DEFAULT 0,
    n_ok INTEGER NOT NULL DEFAULT 0,
    n_corrupt INTEGER NOT NULL DEFAULT 0,
    n_modified INTEGER NOT NULL DEFAULT 0,
    n_missing INTEGER NOT NULL DEFAULT 0,
    n_new INTEGER NOT NULL DEFAULT 0,
    n_moved INTEGER NOT NULL DEFAULT 0,
    n_unreadable INTEGER NOT NULL DEFAULT 0,
    n_deferred INTEGER NOT NULL DEFAULT 0,
    events_digest BLOB,
    state_digest BLOB,
    prev_digest BLOB,
    chain_digest BLOB
);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    root INTEGER NOT NULL,
    path BLOB NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    digest BLOB NOT NULL,
    digests BLOB NOT NULL,
    state TEXT NOT NULL,
    present INTEGER NOT NULL,
    version INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_verified INTEGER,
    first_run INTEGER NOT NULL,
    last_run INTEGER NOT NULL,
    last_verdict TEXT NOT NULL,
    missing_since INTEGER,
    UNIQUE(root, path)
);
CREATE INDEX files_digest ON files(digest);
CREATE INDEX files_verified ON files(last_verified);
CREATE TABLE events(
    run INTEGER NOT NULL,
    root INTEGER NOT NULL,
    path BLOB NOT NULL,
    state TEXT NOT NULL,
    size INTEGER,
    mtime_ns INTEGER,
    expected BLOB,
    actual BLOB,
    other_root INTEGER,
    other_path BLOB,
    detail TEXT,
    PRIMARY KEY(run, root, path)
) WITHOUT ROWID;
CREATE INDEX events_path ON events(root, path);
CREATE TABLE walk(
    root INTEGER NOT NULL,
    path BLOB NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY(root, path)
) WITHOUT ROWID;
CREATE INDEX walk_size ON walk(size);
CREATE INDEX walk_kind ON walk(kind, root);
";

/// Sets the connection up and creates (only where `create`: a file this process made, or an
/// empty one the user asked to initialize) or checks the schema.
pub(crate) fn prepare(conn: &mut Connection, path: &Path, write: bool, create: bool) -> Result<()> {
    let e = |err| sql(path, err);
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|err| match err {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                CatalogError::NotCatalog { path: path.into() }
            }
            other => sql(path, other),
        })?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(e)?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(e)?;
    if tables == 0 && app == 0 {
        if !write || !create {
            return Err(CatalogError::NotCatalog { path: path.into() });
        }
        conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        let tx = conn.transaction().map_err(e)?;
        tx.execute_batch(DDL).map_err(e)?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(e)?;
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(e)?;
        tx.execute(
            "INSERT INTO meta(key, value) VALUES ('created_by', ?1)",
            [concat!("trawl ", env!("CARGO_PKG_VERSION"))],
        )
        .map_err(e)?;
        tx.commit().map_err(e)?;
    } else if app != APPLICATION_ID {
        return Err(CatalogError::NotCatalog { path: path.into() });
    } else if version != SCHEMA_VERSION {
        return Err(CatalogError::Version {
            path: path.into(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if write {
        conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        // WAL with synchronous=NORMAL: a crash of the process loses nothing committed; a power
        // loss may lose the last batches but never leaves the file inconsistent.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(e)?;
    }
    conn.pragma_update(None, "cache_size", -16_000).map_err(e)?;
    Ok(())
}
