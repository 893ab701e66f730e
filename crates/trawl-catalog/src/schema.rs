//! The catalog's schema version and connection settings (WAL, batching-friendly): a new
//! catalog's tables created, an existing one's version and objects checked, on opening.

use std::path::Path;

use rusqlite::Connection;

use crate::tables::{DDL_CTIME, DDL_FILES, DDL_POLICY, DDL_RUNS, foreign_objects};
use crate::{CatalogError, Result, sql};

/// The schema this trawl writes and reads (`PRAGMA user_version`). Versions 1 (paths stored
/// whole in every row, the primary digest twice, the walk inside the catalog), 2 (no policy
/// table) and 3 (no ctime) are upgraded in place by the first write
/// (`migrate.rs`); a version-2 or -3 catalog is read as it is (it has no policy, or no ctime:
/// nothing in it is offered to `scan --reuse`).
pub const SCHEMA_VERSION: i64 = 4;

/// `PRAGMA application_id`: "trwl", so that other SQLite files are told apart from catalogs.
const APPLICATION_ID: i64 = 0x7472_776c;

/// Refuses a catalog whose schema holds what trawl did not create.
fn check_objects(conn: &Connection, path: &Path, version: i64) -> Result<()> {
    let foreign = foreign_objects(conn, version).map_err(|e| sql(path, e))?;
    if foreign.is_empty() {
        return Ok(());
    }
    Err(CatalogError::Schema {
        path: path.into(),
        objects: foreign,
    })
}

/// Sets the connection up and creates (only where `create`: a file this process made, or an
/// empty one the user asked to initialize) or checks the schema.
/// Returns the version a catalog was upgraded from, if it was.
pub(crate) fn prepare(
    conn: &mut Connection,
    path: &Path,
    write: bool,
    create: bool,
) -> Result<Option<i64>> {
    let e = |err| sql(path, err);
    let mut migrated = false;
    let (app, version, tables) = header(conn, path)?;
    if tables == 0 && app == 0 {
        if !write || !create {
            return Err(CatalogError::NotCatalog { path: path.into() });
        }
        create_tables(conn).map_err(e)?;
    } else if app != APPLICATION_ID {
        return Err(CatalogError::NotCatalog { path: path.into() });
    } else if (1..SCHEMA_VERSION).contains(&version) && write {
        // Checked before the upgrade writes a row: a planted trigger would fire on it.
        check_objects(conn, path, version)?;
        if version == 1 {
            crate::migrate::from_v1(conn).map_err(e)?;
        }
        if version <= 2 {
            crate::migrate::from_v2(conn).map_err(e)?;
        }
        crate::migrate::from_v3(conn).map_err(e)?;
        migrated = true;
    } else if version == 2 || version == 3 {
        // Read as it is: version 3 without a ctime (and version 2 without a policy as well).
        check_objects(conn, path, version)?;
        return tune(conn, write).map(|()| None).map_err(e);
    } else if version < SCHEMA_VERSION {
        return Err(CatalogError::Old {
            path: path.into(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    } else if version != SCHEMA_VERSION {
        return Err(CatalogError::Version {
            path: path.into(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    check_objects(conn, path, SCHEMA_VERSION)?;
    tune(conn, write).map_err(e)?;
    if migrated && version == 1 {
        // Give the space the old layout took back to the file system: the upgrade is committed,
        // and a VACUUM that fails (a full disk) leaves it as it is, only larger.
        let _ = conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)");
    }
    Ok(migrated.then_some(version))
}

/// The file's application id, schema version and count of schema objects; a file that is no
/// SQLite database is no catalog.
fn header(conn: &Connection, path: &Path) -> Result<(i64, i64, i64)> {
    let not_sqlite = |err| match err {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            CatalogError::NotCatalog { path: path.into() }
        }
        other => sql(path, other),
    };
    // Nothing in the file's schema runs with trawl's rights: a function a view or trigger names
    // is called only if SQLite deems it harmless (and the schema is checked after).
    conn.pragma_update(None, "trusted_schema", "OFF")
        .map_err(not_sqlite)?;
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(not_sqlite)?;
    let e = |err| sql(path, err);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(e)?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(e)?;
    Ok((app, version, tables))
}

/// Makes an empty file a catalog: its tables, application id and version, in one transaction.
fn create_tables(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let tx = conn.transaction()?;
    tx.execute_batch(DDL_RUNS)?;
    tx.execute_batch(DDL_FILES)?;
    tx.execute_batch(DDL_POLICY)?;
    tx.execute_batch(DDL_CTIME)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('created_by', ?1)",
        [concat!("trawl ", env!("CARGO_PKG_VERSION"))],
    )?;
    tx.commit()
}

/// The connection's settings: a writer's journal and durability, and the cache.
fn tune(conn: &Connection, write: bool) -> rusqlite::Result<()> {
    if write {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // WAL with synchronous=NORMAL: a crash of the process loses nothing committed; a power
        // loss may lose the last batches but never leaves the file inconsistent.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    conn.pragma_update(None, "cache_size", -16_000)
}
