//! How a path below a root is stored: the directory's row (its path, once) and the file's name.
//!
//! A directory's path keeps its trailing `/` (the root's own is empty), so that a whole path is
//! the directory's path followed by the name, and a directory lies under another exactly when
//! its path starts with the other's.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

/// Splits a path below a root into its directory (with the trailing `/`; empty at the root) and
/// its name.
pub(crate) fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..=i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

/// A directory's path as stored: `rel` with a trailing `/` (the root itself: empty).
pub(crate) fn as_dir(rel: &[u8]) -> Vec<u8> {
    let mut d = rel.to_vec();
    if !d.is_empty() && !d.ends_with(b"/") {
        d.push(b'/');
    }
    d
}

/// The id of a stored directory, if it is stored.
pub(crate) fn find(conn: &Connection, root: i64, dir: &[u8]) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM dirs WHERE root = ?1 AND path = ?2")?
        .query_row(params![root, dir], |r| r.get(0))
        .optional()
}

/// Directory ids by root and path, created where missing. Files arrive directory by directory,
/// so a small cache answers nearly every lookup; it is emptied when it fills, which keeps it
/// bounded whatever the number of directories.
#[derive(Default)]
pub(crate) struct DirIds {
    cache: HashMap<(i64, Vec<u8>), i64>,
    last: Option<(i64, Vec<u8>, i64)>,
}

const CACHED_DIRS: usize = 4096;

impl DirIds {
    pub(crate) fn id(&mut self, conn: &Connection, root: i64, dir: &[u8]) -> rusqlite::Result<i64> {
        if let Some((r, d, id)) = &self.last
            && *r == root
            && d == dir
        {
            return Ok(*id);
        }
        let key = (root, dir.to_vec());
        let id = match self.cache.get(&key) {
            Some(id) => *id,
            None => {
                let id = match find(conn, root, dir)? {
                    Some(id) => id,
                    None => {
                        conn.prepare_cached("INSERT INTO dirs(root, path) VALUES (?1, ?2)")?
                            .execute(params![root, dir])?;
                        conn.last_insert_rowid()
                    }
                };
                if self.cache.len() >= CACHED_DIRS {
                    self.cache.clear();
                }
                self.cache.insert(key.clone(), id);
                id
            }
        };
        self.last = Some((key.0, key.1, id));
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_the_slash_with_the_directory() {
        assert_eq!(split(b"a/b/c.txt"), (&b"a/b/"[..], &b"c.txt"[..]));
        assert_eq!(split(b"top"), (&b""[..], &b"top"[..]));
        assert_eq!(split(b""), (&b""[..], &b""[..]));
        assert_eq!(as_dir(b"a/b"), b"a/b/".to_vec());
        assert_eq!(as_dir(b""), b"".to_vec());
    }

    #[test]
    fn ids_are_stable_and_created_once() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::tables::DDL_FILES).unwrap();
        let mut ids = DirIds::default();
        let a = ids.id(&conn, 1, b"a/").unwrap();
        let b = ids.id(&conn, 1, b"b/").unwrap();
        assert_ne!(a, b);
        assert_eq!(ids.id(&conn, 1, b"a/").unwrap(), a);
        assert_ne!(ids.id(&conn, 2, b"a/").unwrap(), a);
        // A fresh cache finds the stored rows rather than adding new ones.
        assert_eq!(DirIds::default().id(&conn, 1, b"b/").unwrap(), b);
        let n: i64 = conn
            .query_row("SELECT count(*) FROM dirs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 3);
    }

    #[test]
    fn the_views_give_back_whole_paths_byte_for_byte() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(crate::tables::DDL_FILES).unwrap();
        let mut ids = DirIds::default();
        for rel in [&b"a/\xff-latin1"[..], b"top", b"deep/er/x y"] {
            let (d, n) = split(rel);
            let dir = ids.id(&conn, 7, d).unwrap();
            conn.execute(
                "INSERT INTO files(dir, name, size, mtime_ns, dev, ino, digests, state, present,
                     version, first_seen, first_run, last_run, last_verdict)
                 VALUES (?1, ?2, 0, 0, 0, 0, x'00', 'ok', 1, 1, 0, 1, 1, 'new')",
                params![dir, n],
            )
            .unwrap();
        }
        let mut st = conn
            .prepare("SELECT root, path FROM file_paths ORDER BY path")
            .unwrap();
        let got: Vec<(i64, Vec<u8>)> = st
            .query_map([], |r| r.try_into())
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let want: Vec<(i64, Vec<u8>)> = vec![
            (7, b"a/\xff-latin1".to_vec()),
            (7, b"deep/er/x y".to_vec()),
            (7, b"top".to_vec()),
        ];
        assert_eq!(got, want);
    }
}
