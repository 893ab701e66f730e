//! The catalog's tables as trawl creates them (schema version 4), the objects version 1 had,
//! and what in a catalog's schema trawl did not create.

use rusqlite::Connection;

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

/// The collection's policy (schema 3): one row at most. `every` and `max_time` in seconds,
/// `window` as `HH:MM-HH:MM` local time, `set_at` when it was set (a Unix time).
pub(crate) const DDL_POLICY: &str = "
CREATE TABLE policy(
    id INTEGER PRIMARY KEY CHECK (id = 1),
    every INTEGER NOT NULL,
    max_bytes INTEGER,
    max_time INTEGER,
    window TEXT,
    set_at INTEGER NOT NULL
);
";

/// What schema 4 adds to schema 3: each file's status change time (ctime, nanoseconds) as
/// the read that gave its digests found it, so that `scan --reuse` can tell a file whose
/// content changed under a restored mtime. NULL in a row registered before (never reused).
/// A new catalog is made by the same statement after schema 3's tables, so that its schema
/// reads exactly as an upgraded one's.
pub(crate) const DDL_CTIME: &str = "ALTER TABLE files ADD COLUMN ctime_ns INTEGER;";

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
/// it. Schema version 1 is checked by its objects' names and kinds (no trigger, no view);
/// version 3 is version 4 without the ctime column, version 2 version 3 without the policy table.
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
        if version >= 3 {
            c.execute_batch(DDL_POLICY)?;
        }
        if version >= 4 {
            c.execute_batch(DDL_CTIME)?;
        }
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

/// A catalog that trawl wrote under schema 1 (four sealed runs: see its README).
#[cfg(test)]
pub(crate) const V1_FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/reference/catalog-v1/cat.db"
);

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Connection {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(DDL_RUNS).unwrap();
        c.execute_batch(DDL_FILES).unwrap();
        c.execute_batch(DDL_POLICY).unwrap();
        c.execute_batch(DDL_CTIME).unwrap();
        c
    }

    /// A schema as trawl makes it holds nothing foreign; a planted trigger or table, a view
    /// redefined and an index dropped are each named, with what they are.
    #[test]
    fn what_trawl_did_not_make_or_made_otherwise_is_named() {
        let c = fresh();
        assert_eq!(
            foreign_objects(&c, crate::SCHEMA_VERSION).unwrap(),
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
        let mut found = foreign_objects(&c, crate::SCHEMA_VERSION).unwrap();
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
        assert!(
            foreign_objects(&c, crate::SCHEMA_VERSION)
                .unwrap()
                .is_empty()
        );
        let lying = one_line.replace("f.state,", "'ok' AS state,");
        assert_ne!(lying, one_line);
        c.execute_batch(&format!("DROP VIEW file_paths; {lying}"))
            .unwrap();
        assert_eq!(
            foreign_objects(&c, crate::SCHEMA_VERSION).unwrap(),
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
        std::fs::copy(V1_FIXTURE, &p).unwrap();
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
