//! The walk table: every path the walk found, and what kind of thing was there.

use rusqlite::params;

use super::Audit;
use crate::Result;

pub(super) fn kind_detail(kind: &str) -> Option<&'static str> {
    match kind {
        "symlink" => Some("replaced by a symbolic link"),
        "special" => Some("replaced by a special file (FIFO, socket or device)"),
        "gone" => Some("vanished while the audit ran"),
        _ => None,
    }
}

impl Audit<'_> {
    /// A regular file found by the walk.
    pub fn walk_file(
        &mut self,
        root: usize,
        rel: &[u8],
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
    ) -> Result<()> {
        self.walk_row(root, rel, size, mtime_ns, dev, ino, "file")
    }

    /// Something else at a path: `symlink`, `special`, or `dirfail` (a directory that could
    /// not be listed: registered files under it are not called missing).
    pub fn walk_other(&mut self, root: usize, rel: &[u8], kind: &'static str) -> Result<()> {
        self.walk_row(root, rel, 0, 0, 0, 0, kind)
    }

    /// An entry the user's rules left out: a directory (unlisted: the registered files under
    /// it are left as they are; `rel` empty for the root itself) or anything else.
    pub fn walk_excluded(&mut self, root: usize, rel: &[u8], directory: bool) -> Result<()> {
        if directory {
            let rid = self.roots[root].0;
            self.cat
                .conn
                .prepare_cached("INSERT INTO excluded_dirs(root, path) VALUES (?1, ?2)")
                .and_then(|mut st| st.execute(params![rid, crate::dirs::as_dir(rel)]))
                .map_err(|e| self.err(e))?;
            if rel.is_empty() {
                return self.tick();
            }
        }
        self.walk_row(root, rel, 0, 0, 0, 0, "excluded")
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk_row(
        &mut self,
        root: usize,
        rel: &[u8],
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
        kind: &str,
    ) -> Result<()> {
        let rid = self.roots[root].0;
        let (dir, name) = self.place(rid, rel)?;
        if kind == "dirfail" {
            self.cat
                .conn
                .prepare_cached("INSERT INTO failed_dirs(root, path) VALUES (?1, ?2)")
                .and_then(|mut st| st.execute(params![rid, crate::dirs::as_dir(rel)]))
                .map_err(|e| self.err(e))?;
        }
        self.cat
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO walk(dir, name, size, mtime_ns, dev, ino, kind)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    dir,
                    name,
                    size as i64,
                    mtime_ns,
                    dev as i64,
                    ino as i64,
                    kind
                ])
            })
            .map_err(|e| self.err(e))?;
        self.tick()
    }
}
