//! Upgrades a catalog of an older schema in place, each step in one transaction (a failure
//! leaves it as it was). Version 3 to 4: a `ctime_ns` column, NULL in every row (a row gets
//! one when an audit next reads its file). Version 2 to 3 adds the (empty) policy table.
//! Version 1 to 2: paths split into directory rows and names, the duplicate primary-digest
//! column and the digest and verification indexes dropped, the walk table dropped (an audit
//! keeps its walk in a scratch file). Every value is carried over as it was, so the runs sealed under version
//! 1 verify the same afterwards: the chain reads the whole paths back through the views.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params_from_iter};

use crate::dirs::{DirIds, split};
use crate::tables::{DDL_CTIME, DDL_FILES, DDL_POLICY};

/// Schema 2 to 3: the policy table, empty (no policy set).
pub(crate) fn from_v2(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(DDL_POLICY)?;
    tx.execute_batch("PRAGMA user_version = 3;")?;
    tx.commit()
}

/// Schema 3 to 4: the ctime column, empty, in one transaction.
pub(crate) fn from_v3(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(DDL_CTIME)?;
    tx.pragma_update(None, "user_version", 4)?;
    tx.commit()
}

pub(crate) fn from_v1(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "DROP INDEX files_digest;
         DROP INDEX files_verified;
         DROP INDEX events_path;
         DROP TABLE walk;
         ALTER TABLE files RENAME TO files_v1;
         ALTER TABLE events RENAME TO events_v1;",
    )?;
    tx.execute_batch(DDL_FILES)?;
    let mut dirs = DirIds::default();
    copy(
        &tx,
        &mut dirs,
        "SELECT root, path, id, size, mtime_ns, dev, ino, digests, state, present, version,
                first_seen, last_verified, first_run, last_run, last_verdict, missing_since
         FROM files_v1 ORDER BY id",
        "INSERT INTO files(dir, name, id, size, mtime_ns, dev, ino, digests, state, present,
             version, first_seen, last_verified, first_run, last_run, last_verdict, missing_since)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        false,
    )?;
    copy(
        &tx,
        &mut dirs,
        "SELECT root, path, other_root, other_path, run, state, size, mtime_ns, expected, actual,
                detail
         FROM events_v1",
        "INSERT INTO events(dir, name, other_dir, other_name, run, state, size, mtime_ns,
             expected, actual, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        true,
    )?;
    tx.execute_batch(
        "DROP TABLE files_v1;
         DROP TABLE events_v1;
         PRAGMA user_version = 2;",
    )?;
    tx.commit()
}

/// Copies rows whose first two columns are a root and a path (and, with `other`, the next two
/// as well), each pair stored as a directory id and a name; the other columns as they are.
fn copy(
    conn: &Connection,
    dirs: &mut DirIds,
    select: &str,
    insert: &str,
    other: bool,
) -> rusqlite::Result<()> {
    let mut sel = conn.prepare(select)?;
    let n = sel.column_count();
    let mut ins = conn.prepare(insert)?;
    let mut rows = sel.query([])?;
    let pairs = if other { 2 } else { 1 };
    while let Some(r) = rows.next()? {
        let mut vals: Vec<Value> = Vec::with_capacity(n);
        for p in 0..pairs {
            let root: Option<i64> = r.get(2 * p)?;
            let path = match r.get_ref(2 * p + 1)? {
                ValueRef::Blob(b) | ValueRef::Text(b) => Some(b.to_vec()),
                _ => None,
            };
            match (root, path) {
                (Some(root), Some(path)) => {
                    let (d, name) = split(&path);
                    vals.push(Value::Integer(dirs.id(conn, root, d)?));
                    vals.push(Value::Blob(name.to_vec()));
                }
                _ => vals.extend([Value::Null, Value::Null]),
            }
        }
        for i in 2 * pairs..n {
            vals.push(r.get::<_, Value>(i)?);
        }
        ins.execute(params_from_iter(vals))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tables::V1_FIXTURE;

    /// The chain head `trawl catalog verify` printed for the fixture under schema 1.
    const V1_HEAD: &str = "3f79f2776ea13cb30e4675bd4b6626835f3f62eef171bca5c88a67425bbef8af";

    type Rows = Vec<Vec<Value>>;

    fn rows(conn: &Connection, sql: &str) -> Rows {
        let mut st = conn.prepare(sql).unwrap();
        let n = st.column_count();
        st.query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    fn v1_copy() -> (tempfile::TempDir, Connection) {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("cat.db");
        std::fs::copy(V1_FIXTURE, &p).unwrap();
        let c = Connection::open(&p).unwrap();
        (t, c)
    }

    const FILES: &str = "size, mtime_ns, dev, ino, digests, state, present, version, first_seen,
        last_verified, first_run, last_run, last_verdict, missing_since";
    const EVENTS: &str = "run, state, size, mtime_ns, expected, actual, detail";

    /// Every file row and event comes across with the same whole paths and values (read back
    /// through the views), the schema is then exactly a new catalog's, and the runs sealed
    /// under schema 1 verify to the head that trawl printed for them.
    #[test]
    fn an_upgrade_carries_every_path_and_value_over() {
        let (_t, mut c) = v1_copy();
        let v1_files = rows(
            &c,
            &format!("SELECT root, CAST(path AS BLOB), {FILES} FROM files ORDER BY root, path"),
        );
        let v1_events = rows(
            &c,
            &format!(
                "SELECT root, CAST(path AS BLOB), other_root, CAST(other_path AS BLOB), {EVENTS}
                 FROM events ORDER BY run, root, path"
            ),
        );
        assert_eq!(v1_files.len(), 11);
        assert_eq!(v1_events.len(), 20);
        from_v1(&mut c).unwrap();
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 2);
        assert!(
            crate::tables::foreign_objects(&c, 2).unwrap().is_empty(),
            "{:?}",
            crate::tables::foreign_objects(&c, 2)
        );
        assert_eq!(
            rows(
                &c,
                &format!("SELECT root, path, {FILES} FROM file_paths ORDER BY root, path")
            ),
            v1_files
        );
        assert_eq!(
            rows(
                &c,
                &format!(
                    "SELECT root, path, other_root, other_path, {EVENTS}
                     FROM event_paths ORDER BY run, root, path"
                )
            ),
            v1_events
        );
        let chain = crate::chain::verify(&c).unwrap();
        assert_eq!((chain.runs_ok, &chain.broken), (4, &None));
        let (run, head) = chain.head.unwrap();
        assert_eq!((run, hex::encode(head)), (4, V1_HEAD.to_string()));
    }

    /// Schema 2 to 3 adds the policy table, empty, and changes nothing else: the schema is
    /// then a new catalog's, and the runs sealed before verify to the head they had.
    #[test]
    fn an_upgrade_from_2_adds_the_policy_table_alone() {
        let (_t, mut c) = v1_copy();
        from_v1(&mut c).unwrap();
        let schema =
            "SELECT type, name, sql FROM sqlite_master WHERE name != 'policy' ORDER BY name";
        let before = rows(&c, schema);
        from_v2(&mut c).unwrap();
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 3);
        assert!(crate::tables::foreign_objects(&c, 3).unwrap().is_empty());
        assert_eq!(rows(&c, schema), before);
        assert_eq!(rows(&c, "SELECT * FROM policy"), Rows::new());
        let (_, head) = crate::chain::verify(&c).unwrap().head.unwrap();
        assert_eq!(hex::encode(head), V1_HEAD);
    }

    /// Schema 3 to 4 adds the ctime column, empty: the schema is then exactly a new catalog's,
    /// every row is as it was, and the runs sealed before verify to the same head.
    #[test]
    fn an_upgrade_to_4_adds_an_empty_ctime_and_keeps_the_chain() {
        let (_t, mut c) = v1_copy();
        from_v1(&mut c).unwrap();
        from_v2(&mut c).unwrap();
        let before = rows(
            &c,
            &format!("SELECT path, {FILES} FROM file_paths ORDER BY path"),
        );
        from_v3(&mut c).unwrap();
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 4);
        assert!(crate::tables::foreign_objects(&c, 4).unwrap().is_empty());
        let after = rows(
            &c,
            &format!("SELECT path, {FILES} FROM file_paths ORDER BY path"),
        );
        assert_eq!(after, before);
        let set: i64 = c
            .query_row(
                "SELECT count(*) FROM files WHERE ctime_ns IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(set, 0);
        let (run, head) = crate::chain::verify(&c).unwrap().head.unwrap();
        assert_eq!((run, hex::encode(head)), (4, V1_HEAD.to_string()));
    }

    /// An upgrade that fails part way (here: the walk table it drops is not there) leaves the
    /// catalog as it was, schema 1 and every row.
    #[test]
    fn a_failed_upgrade_leaves_the_catalog_as_it_was() {
        let (_t, mut c) = v1_copy();
        c.execute_batch("DROP TABLE walk").unwrap();
        let before = rows(
            &c,
            "SELECT type, name, sql FROM sqlite_master ORDER BY name",
        );
        let files = rows(&c, "SELECT * FROM files ORDER BY id");
        assert!(from_v1(&mut c).is_err());
        let version: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 1);
        assert_eq!(
            rows(
                &c,
                "SELECT type, name, sql FROM sqlite_master ORDER BY name"
            ),
            before
        );
        assert_eq!(rows(&c, "SELECT * FROM files ORDER BY id"), files);
    }
}
