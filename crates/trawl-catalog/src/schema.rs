//! The catalog's tables, its schema version and the connection settings (WAL, batching-friendly).

use std::path::Path;

use rusqlite::Connection;

use crate::{CatalogError, Result, sql};

/// The schema this trawl writes and reads (`PRAGMA user_version`). Version 1 (paths stored
/// whole in every row, the primary digest twice, the walk inside the catalog) is upgraded in
/// place by the first write (`migrate.rs`).
pub const SCHEMA_VERSION: i64 = 2;

/// `PRAGMA application_id`: "trwl", so that other SQLite files are told apart from catalogs.
const APPLICATION_ID: i64 = 0x7472_776c;

/// The tables every schema version has, unchanged since version 1.
pub(crate) const DDL_RUNS: &str = "
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
";

/// The per-file tables of version 2. A path below a root is a directory row (its path with a
/// trailing `/`, empty at the root, stored once however many files it holds) plus a name. The
/// primary digest is the first bytes of `digests`. No index on digests or verification times:
/// moves are paired through an index built for the run that needs it (see `audit::settle`),
/// and the oldest verification is found by one pass. The views give back the whole path (and
/// the root), so that what reads paths reads them as version 1 stored them.
pub(crate) const DDL_FILES: &str = "
CREATE TABLE dirs(
    id INTEGER PRIMARY KEY,
    root INTEGER NOT NULL,
    path BLOB NOT NULL,
    UNIQUE(root, path)
);
CREATE TABLE files(
    id INTEGER PRIMARY KEY,
    dir INTEGER NOT NULL,
    name BLOB NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
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
    UNIQUE(dir, name)
);
CREATE TABLE events(
    run INTEGER NOT NULL,
    dir INTEGER NOT NULL,
    name BLOB NOT NULL,
    state TEXT NOT NULL,
    size INTEGER,
    mtime_ns INTEGER,
    expected BLOB,
    actual BLOB,
    other_dir INTEGER,
    other_name BLOB,
    detail TEXT,
    PRIMARY KEY(run, dir, name)
) WITHOUT ROWID;
CREATE INDEX events_path ON events(dir, name);
CREATE VIEW file_paths AS
    SELECT f.id, d.root AS root, CAST(d.path || f.name AS BLOB) AS path, f.dir, f.name, f.size,
           f.mtime_ns, f.dev, f.ino, f.digests, f.state, f.present, f.version, f.first_seen,
           f.last_verified, f.first_run, f.last_run, f.last_verdict, f.missing_since
    FROM files f JOIN dirs d ON d.id = f.dir;
CREATE VIEW event_paths AS
    SELECT e.run, d.root AS root, CAST(d.path || e.name AS BLOB) AS path, e.state, e.size,
           e.mtime_ns, e.expected, e.actual, o.root AS other_root,
           CAST(o.path || e.other_name AS BLOB) AS other_path, e.detail, e.dir, e.name
    FROM events e JOIN dirs d ON d.id = e.dir LEFT JOIN dirs o ON o.id = e.other_dir;
";

/// The objects a schema-1 catalog holds before its upgrade (each `sqlite_autoindex_*` aside).
const V1_OBJECTS: &[(&str, &str)] = &[
    ("table", "meta"),
    ("table", "roots"),
    ("table", "runs"),
    ("table", "files"),
    ("index", "files_digest"),
    ("index", "files_verified"),
    ("table", "events"),
    ("index", "events_path"),
    ("table", "walk"),
    ("index", "walk_size"),
    ("index", "walk_kind"),
];

/// One schema object: type, name, table, and its SQL with runs of white space made one space.
type Object = (String, String, String, Option<String>);

fn objects(conn: &Connection) -> rusqlite::Result<Vec<Object>> {
    let mut st = conn
        .prepare("SELECT type, name, tbl_name, sql FROM main.sqlite_master ORDER BY type, name")?;
    st.query_map([], |r| {
        let sql: Option<String> = r.get(3)?;
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            sql.map(|s| s.split_whitespace().collect::<Vec<_>>().join(" ")),
        ))
    })?
    .collect()
}

/// What in the catalog's schema trawl did not create, each said in a few words: a trigger, a
/// view or table of another name, or one of trawl's objects redefined (a view that lies to the
/// readers, a trigger that rewrites what an audit records). Empty for a catalog as trawl made
/// it. Schema version 1 is checked by its objects' names and kinds (no trigger, no view).
pub(crate) fn foreign_objects(conn: &Connection, version: i64) -> rusqlite::Result<Vec<String>> {
    let found = objects(conn)?;
    let describe = |(ty, name, table, _): &Object| {
        if ty == "trigger" || ty == "index" {
            format!("{ty} '{name}' on '{table}'")
        } else {
            format!("{ty} '{name}'")
        }
    };
    let mut out = Vec::new();
    if version == 1 {
        for o in &found {
            let known = V1_OBJECTS.iter().any(|(t, n)| *t == o.0 && *n == o.1)
                || (o.0 == "index" && o.1.starts_with("sqlite_autoindex_"));
            if !known {
                out.push(format!("{} (not created by trawl)", describe(o)));
            }
        }
        return Ok(out);
    }
    let want = {
        let c = Connection::open_in_memory()?;
        c.execute_batch(DDL_RUNS)?;
        c.execute_batch(DDL_FILES)?;
        objects(&c)?
    };
    for o in &found {
        match want.iter().find(|w| w.0 == o.0 && w.1 == o.1) {
            None => out.push(format!("{} (not created by trawl)", describe(o))),
            Some(w) if w != o => out.push(format!("{} (redefined)", describe(o))),
            Some(_) => {}
        }
    }
    for w in &want {
        if !found.iter().any(|o| o.0 == w.0 && o.1 == w.1) {
            out.push(format!("{} (missing)", describe(w)));
        }
    }
    Ok(out)
}

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
    // Nothing in the file's schema runs with trawl's rights: a function a view or trigger names
    // is called only if SQLite deems it harmless (and the schema is checked below).
    conn.pragma_update(None, "trusted_schema", "OFF")
        .map_err(|err| match err {
            rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
                CatalogError::NotCatalog { path: path.into() }
            }
            other => sql(path, other),
        })?;
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
        tx.execute_batch(DDL_RUNS).map_err(e)?;
        tx.execute_batch(DDL_FILES).map_err(e)?;
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
    } else if version == 1 && write {
        // Checked before the upgrade writes a row: a planted trigger would fire on it.
        check_objects(conn, path, 1)?;
        crate::migrate::from_v1(conn).map_err(e)?;
        migrated = true;
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
    if write {
        conn.pragma_update(None, "journal_mode", "WAL").map_err(e)?;
        // WAL with synchronous=NORMAL: a crash of the process loses nothing committed; a power
        // loss may lose the last batches but never leaves the file inconsistent.
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(e)?;
    }
    conn.pragma_update(None, "cache_size", -16_000).map_err(e)?;
    if migrated {
        // Give the space the old layout took back to the file system: the upgrade is committed,
        // and a VACUUM that fails (a full disk) leaves it as it is, only larger.
        let _ = conn.execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE)");
    }
    Ok(migrated.then_some(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(DDL_RUNS).unwrap();
        c.execute_batch(DDL_FILES).unwrap();
        c
    }

    /// A schema as trawl makes it holds nothing foreign; a planted trigger or table, a view
    /// redefined and an index dropped are each named, with what they are.
    #[test]
    fn what_trawl_did_not_make_or_made_otherwise_is_named() {
        let c = fresh();
        assert_eq!(
            foreign_objects(&c, SCHEMA_VERSION).unwrap(),
            Vec::<String>::new()
        );
        c.execute_batch(
            "CREATE TRIGGER hide AFTER INSERT ON events BEGIN SELECT 1; END;
             DROP VIEW event_paths;
             CREATE VIEW event_paths AS SELECT 1 AS run;
             DROP INDEX events_path;
             CREATE TABLE extra(x);",
        )
        .unwrap();
        let mut found = foreign_objects(&c, SCHEMA_VERSION).unwrap();
        found.sort();
        assert_eq!(
            found,
            [
                "index 'events_path' on 'events' (missing)",
                "table 'extra' (not created by trawl)",
                "trigger 'hide' on 'events' (not created by trawl)",
                "view 'event_paths' (redefined)",
            ]
        );
    }

    /// SQLite keeps a definition's text as written: the same view written on one line is the
    /// same definition, and one word changed in it is another.
    #[test]
    fn a_definition_is_compared_without_its_layout() {
        let c = fresh();
        let sql: String = c
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'file_paths'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let one_line = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_ne!(one_line, sql);
        c.execute_batch(&format!("DROP VIEW file_paths; {one_line}"))
            .unwrap();
        assert!(foreign_objects(&c, SCHEMA_VERSION).unwrap().is_empty());
        let lying = one_line.replace("f.state,", "'ok' AS state,");
        assert_ne!(lying, one_line);
        c.execute_batch(&format!("DROP VIEW file_paths; {lying}"))
            .unwrap();
        assert_eq!(
            foreign_objects(&c, SCHEMA_VERSION).unwrap(),
            ["view 'file_paths' (redefined)"]
        );
    }

    /// A catalog of schema 1 (one that trawl wrote, in tests/reference) is held to its objects'
    /// names and kinds: as written it holds nothing foreign; a view or trigger planted in it is
    /// named.
    #[test]
    fn a_schema_1_catalog_is_held_to_the_objects_it_had() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        std::fs::copy(crate::migrate::tests::V1_FIXTURE, &p).unwrap();
        let c = Connection::open(&p).unwrap();
        assert!(foreign_objects(&c, 1).unwrap().is_empty());
        c.execute_batch(
            "CREATE VIEW everything_ok AS SELECT path, 'ok' AS state FROM files;
             CREATE TRIGGER t AFTER INSERT ON events BEGIN SELECT 1; END;",
        )
        .unwrap();
        let mut found = foreign_objects(&c, 1).unwrap();
        found.sort();
        assert_eq!(
            found,
            [
                "trigger 't' on 'events' (not created by trawl)",
                "view 'everything_ok' (not created by trawl)",
            ]
        );
    }
}
