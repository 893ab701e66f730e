//! Upgrades a catalog of schema version 1 in place, in one transaction (a failure leaves it as
//! it was): paths split into directory rows and names, the duplicate primary-digest column and
//! the digest and verification indexes dropped, the walk table dropped (an audit keeps its walk
//! in a scratch file). Every value is carried over as it was, so the runs sealed under version
//! 1 verify the same afterwards: the chain reads the whole paths back through the views.

use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, params_from_iter};

use crate::dirs::{DirIds, split};
use crate::schema::DDL_FILES;

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
