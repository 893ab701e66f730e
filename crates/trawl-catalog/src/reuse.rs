//! What `scan --reuse` takes from a catalog: every file registered under the scan's roots whose
//! row says what the file was when an audit of this machine last read it whole (size, times,
//! device, inode, ctime) and the digests that read gave, as a [`Known`] table.
//!
//! A row is offered only where its digests are the content's as read: its state is `ok` (a
//! corrupt file keeps its registered digests as the reference, an unreadable one was not read),
//! it is present, it has a ctime (a row of an older trawl, a cluster's audit or an OCFL logical
//! path has none), it holds every digest asked for, and it is not racy: a file changed less
//! than [`RACY_SECONDS`] before the audit that read it began could have changed again within
//! the same tick of its clocks after it was looked at, leaving its times as they were.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rusqlite::params;
use rusqlite::types::ValueRef;
use trawl_digest::Algorithm;
use trawl_scan::{Identity, Known, KnownBuilder};

use crate::{Catalog, Result};

/// How long before the audit that read a file the file's last change must be for its row to
/// be taken: file systems that keep times to the second (or two, FAT's) and a kernel's clock
/// that lags the wall clock by a tick are covered.
pub const RACY_SECONDS: i64 = 2;

/// The columns [`Catalog::each_row`] selects, by index (for what an error names).
const ROW_COLUMNS: [&str; 9] = [
    "path",
    "name",
    "size",
    "mtime_ns",
    "ctime_ns",
    "dev",
    "ino",
    "digests",
    "last_verified",
];

/// One row as loaded: its directory's path below the catalog root, its name, its identity,
/// its digests (all the catalog's) and when it was last verified.
struct Row<'a> {
    dir: &'a [u8],
    name: &'a [u8],
    id: Identity,
    digests: &'a [u8],
    verified: Option<i64>,
}

impl Catalog {
    /// The files this catalog can vouch for under `roots` (the scan's roots, as given: each is
    /// matched by its canonical path), with their digests by `algorithms` (every one of them,
    /// in that order). Empty when the catalog records one of `algorithms` not at all. Read in
    /// one transaction (a consistent view while an audit writes).
    pub fn known(
        &self,
        roots: &[PathBuf],
        algorithms: &[Algorithm],
        ignore_inode: bool,
        ignore_ctime: bool,
    ) -> Result<Known> {
        let mut b = KnownBuilder::new(algorithms, roots.len());
        let ours = self.algorithms()?;
        // Where each asked algorithm's digest lies in a row's concatenated digests.
        let spans: Option<Vec<(usize, usize)>> = algorithms
            .iter()
            .map(|a| {
                let i = ours.iter().position(|o| o == a)?;
                let at: usize = ours[..i].iter().map(|o| o.output_len()).sum();
                Some((at, at + a.output_len()))
            })
            .collect();
        let (Some(spans), false) = (spans, algorithms.is_empty()) else {
            return Ok(b.build(ignore_inode, ignore_ctime));
        };
        let scan_roots: Vec<Option<Vec<u8>>> = roots
            .iter()
            .map(|r| {
                std::fs::canonicalize(r)
                    .ok()
                    .map(|c| c.as_os_str().as_bytes().to_vec())
            })
            .collect();
        let tx = self.conn.unchecked_transaction().map_err(|e| self.err(e))?;
        let (mut digests, mut whole) = (Vec::with_capacity(b.width()), Vec::new());
        for (_, root) in self.roots()? {
            let root = root.as_os_str().as_bytes();
            let wanted: Vec<(usize, &[u8])> = scan_roots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.as_deref().map(|s| (i, s)))
                .filter(|(_, s)| beneath(s, root).is_some() || beneath(root, s).is_some())
                .collect();
            if wanted.is_empty() {
                continue;
            }
            self.each_row(root, &mut |row| {
                if racy(&row.id, row.verified, ignore_ctime) {
                    return;
                }
                digests.clear();
                for &(from, to) in &spans {
                    match row.digests.get(from..to) {
                        Some(d) => digests.extend_from_slice(d),
                        None => return,
                    }
                }
                whole.clear();
                joined(&mut whole, root, row.dir, row.name);
                for &(i, s) in &wanted {
                    if let Some(rel) = beneath(&whole, s) {
                        b.push(i, rel, row.id, &digests);
                    }
                }
            })?;
        }
        tx.finish().map_err(|e| self.err(e))?;
        Ok(b.build(ignore_inode, ignore_ctime))
    }

    /// Calls `each` with every row of the catalog root `root` that can be offered: present,
    /// `ok`, with a ctime. None in a catalog of schema 2 or 3 opened to be read (it has no
    /// ctime column).
    fn each_row(&self, root: &[u8], each: &mut dyn FnMut(Row<'_>)) -> Result<()> {
        if self.schema_version()? < crate::SCHEMA_VERSION {
            return Ok(());
        }
        let mut st = self
            .conn
            .prepare(
                "SELECT d.path, f.name, f.size, f.mtime_ns, f.ctime_ns, f.dev, f.ino, f.digests,
                        f.last_verified
                 FROM roots r JOIN dirs d ON d.root = r.id JOIN files f ON f.dir = d.id
                 WHERE r.path = ?1 AND f.present = 1 AND f.state = 'ok'
                   AND f.ctime_ns IS NOT NULL",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = st.query(params![root]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            // Paths, names and digests are blobs as an audit writes them (and reads them: it
            // stops at a digest stored as text); the bytes of a text taken as a digest would
            // be written as one.
            let bytes = |i| -> rusqlite::Result<&[u8]> {
                match r.get_ref(i)? {
                    ValueRef::Blob(b) => Ok(b),
                    v => Err(rusqlite::Error::InvalidColumnType(
                        i,
                        ROW_COLUMNS[i].into(),
                        v.data_type(),
                    )),
                }
            };
            let row = (|| -> rusqlite::Result<Row<'_>> {
                let id = Identity {
                    size: r.get::<_, i64>(2)? as u64,
                    mtime_ns: r.get(3)?,
                    ctime_ns: r.get(4)?,
                    dev: r.get::<_, i64>(5)? as u64,
                    ino: r.get::<_, i64>(6)? as u64,
                };
                Ok(Row {
                    dir: bytes(0)?,
                    name: bytes(1)?,
                    id,
                    digests: bytes(7)?,
                    verified: r.get(8)?,
                })
            })()
            .map_err(|e| self.err(e))?;
            each(row);
        }
        Ok(())
    }
}

/// `root/dir name` into `out`: a row's whole path (its directory's path below the root ends in
/// `/` where it is not empty). A root of `/` takes no second slash: `//a/b` matched no file.
fn joined(out: &mut Vec<u8>, root: &[u8], dir: &[u8], name: &[u8]) {
    out.extend_from_slice(root);
    if !root.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(dir);
    out.extend_from_slice(name);
}

/// The path `p` names below `dir` (empty: `dir` itself), if it is at or below it.
fn beneath<'a>(p: &'a [u8], dir: &[u8]) -> Option<&'a [u8]> {
    let rest = p.strip_prefix(dir)?;
    if rest.is_empty() {
        return Some(rest);
    }
    if dir.ends_with(b"/") {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

/// Whether a row's file changed too close to the start of the audit that read it (`verified`,
/// in seconds) for its times to vouch for what was read: by its mtime, and its ctime unless
/// the rule leaves the ctime out.
fn racy(id: &Identity, verified: Option<i64>, ignore_ctime: bool) -> bool {
    let Some(v) = verified else {
        return true;
    };
    let changed = match ignore_ctime {
        true => id.mtime_ns,
        false => id.mtime_ns.max(id.ctime_ns),
    };
    changed >= v.saturating_sub(RACY_SECONDS).saturating_mul(1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_path_is_its_root_joined_with_one_slash() {
        let mut out = Vec::new();
        joined(&mut out, b"/data", b"a/", b"f");
        assert_eq!(out, b"/data/a/f");
        out.clear();
        joined(&mut out, b"/", b"a/", b"f");
        assert_eq!(out, b"/a/f", "a catalog of / took no file");
        out.clear();
        joined(&mut out, b"/data", b"", b"f");
        assert_eq!(out, b"/data/f");
    }

    #[test]
    fn a_path_is_beneath_a_directory_at_a_slash_only() {
        assert_eq!(beneath(b"/a/b/c", b"/a"), Some(&b"b/c"[..]));
        assert_eq!(beneath(b"/a/b", b"/a/b"), Some(&b""[..]));
        assert_eq!(beneath(b"/ab/c", b"/a"), None);
        assert_eq!(beneath(b"/x/c", b"/"), Some(&b"x/c"[..]));
        assert_eq!(beneath(b"/a", b"/a/b"), None);
    }

    /// A file whose mtime or ctime is less than two seconds before the audit's start (or
    /// after it) is racy; the ctime does not count when the rule leaves it out.
    #[test]
    fn a_change_close_to_the_read_makes_a_row_racy() {
        let s = 1_000_000_000;
        let id = |m: i64, c: i64| Identity {
            size: 1,
            mtime_ns: m * s,
            ctime_ns: c * s,
            dev: 1,
            ino: 1,
        };
        assert!(!racy(&id(90, 97), Some(100), false));
        assert!(racy(&id(90, 98), Some(100), false));
        assert!(!racy(&id(90, 98), Some(100), true));
        assert!(racy(&id(99, 90), Some(100), true));
        assert!(racy(&id(200, 200), Some(100), false));
        assert!(racy(&id(1, 1), None, false));
    }
}
