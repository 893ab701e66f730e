//! What an audit reads and in which order: new and changed files first, then the least
//! recently verified, within the filter's age; or what a no-download audit looks up.

use std::ops::ControlFlow;
use std::path::PathBuf;

use rusqlite::{params, params_from_iter};

use super::Audit;
use crate::Result;

/// A file the audit should read, in the order it should be read.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Which root it is under.
    pub root: usize,
    /// The file.
    pub path: PathBuf,
    /// Its size when walked.
    pub size: u64,
    /// Device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Its modification time when walked, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

/// Which files to read, or to look up.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanFilter {
    /// Only those last verified before this Unix time, or after now (new and changed files are
    /// always read).
    pub verified_before: Option<i64>,
    /// The files whose store's checksums a no-download audit looks up instead: registered,
    /// present, not known corrupt, and found at their registered size and time (the others'
    /// verdicts come from the walk alone).
    pub stored: bool,
}

impl PlanFilter {
    /// The plan's `FROM` and `WHERE`, and its parameters: the run, the age, and now (a
    /// verification after now vouches for nothing: such a file is read as one due).
    fn from(&self, run: i64) -> (&'static str, Vec<Option<i64>>) {
        match self.stored {
            true => (STORED_FROM, vec![Some(run)]),
            false => (
                PLAN_FROM,
                vec![Some(run), self.verified_before, Some(crate::now_secs())],
            ),
        }
    }
}

impl Audit<'_> {
    /// The files and bytes a plan with `filter` will read, and the registered, unchanged files it
    /// leaves for a later run.
    pub fn plan_totals(&mut self, filter: PlanFilter) -> Result<(u64, u64, u64)> {
        self.commit()?;
        let (from, args) = filter.from(self.run);
        let sql = format!("SELECT count(*), coalesce(sum(w.size), 0) {from}");
        let before = filter.verified_before;
        let (n, b): (i64, i64) = self
            .cat
            .conn
            .query_row(&sql, params_from_iter(args), |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.err(e))?;
        let deferred: i64 = if before.is_some() && !filter.stored {
            let all = self
                .cat
                .conn
                .query_row(
                    &format!("SELECT count(*) {}", PLAN_FROM),
                    params![self.run, Option::<i64>::None, crate::now_secs()],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(|e| self.err(e))?;
            all - n
        } else {
            0
        };
        Ok((n as u64, b as u64, deferred as u64))
    }

    /// Streams the plan to `f`, in reading order (new and changed files first, then the least
    /// recently verified), from a second connection so that this one can write meanwhile.
    /// Stops when `f` breaks.
    pub fn planner(&mut self, filter: PlanFilter) -> Result<Planner> {
        self.commit()?;
        let conn = rusqlite::Connection::open_with_flags(
            &self.cat.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.err(e))?;
        super::attach_scratch(&conn, &self.scratch.path().join("walk.db"))
            .map_err(|e| self.err(e))?;
        Ok(Planner {
            conn,
            path: self.cat.path.clone(),
            run: self.run,
            filter,
            roots: self.roots.clone(),
        })
    }
}

const PLAN_FROM: &str = "FROM walk w JOIN dirs d ON d.id = w.dir
     LEFT JOIN files f ON f.dir = w.dir AND f.name = w.name
     WHERE w.kind = 'file'
       AND (f.id IS NULL OR f.last_run IS NOT ?1)
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run = ?1 AND e.dir = w.dir AND e.name = w.name)
       AND (f.id IS NULL OR f.present = 0 OR f.size != w.size OR f.mtime_ns != w.mtime_ns
            OR ?2 IS NULL OR f.last_verified IS NULL OR f.last_verified < ?2
            OR f.last_verified > ?3)";

const STORED_FROM: &str = "FROM walk w JOIN dirs d ON d.id = w.dir
     JOIN files f ON f.dir = w.dir AND f.name = w.name
     WHERE w.kind = 'file' AND f.present = 1 AND f.state != 'corrupt'
       AND f.size = w.size AND f.mtime_ns = w.mtime_ns
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run = ?1 AND e.dir = w.dir AND e.name = w.name)";

/// Streams an audit's plan from its own connection (see [`Audit::planner`]).
pub struct Planner {
    conn: rusqlite::Connection,
    path: PathBuf,
    run: i64,
    filter: PlanFilter,
    roots: Vec<(i64, PathBuf)>,
}

impl Planner {
    /// Hands each planned file to `f`, in reading order, until the plan ends or `f` breaks.
    pub fn run(self, f: &mut dyn FnMut(Planned) -> ControlFlow<()>) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let (from, args) = self.filter.from(self.run);
        // A verification after now (`?3`, a clock gone wrong) counts as none: read first.
        let verified = match self.filter.stored {
            true => "f.last_verified",
            false => "CASE WHEN f.last_verified > ?3 THEN NULL ELSE f.last_verified END",
        };
        let sql = format!(
            "SELECT d.root, CAST(d.path || w.name AS BLOB), w.size, w.dev, w.ino, w.mtime_ns {from}
             ORDER BY (f.id IS NOT NULL AND f.present = 1 AND f.size = w.size AND f.mtime_ns = w.mtime_ns),
                      {verified}, f.last_run, d.root, CAST(d.path || w.name AS BLOB)"
        );
        let e = |err| crate::sql(&self.path, err);
        let mut st = self.conn.prepare(&sql).map_err(e)?;
        let mut rows = st.query(params_from_iter(args)).map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let rid: i64 = r.get(0).map_err(e)?;
            let rel: Vec<u8> = r.get(1).map_err(e)?;
            let root = super::root_index(&self.roots, rid, &self.path)?;
            let path = self.roots[root].1.join(std::ffi::OsStr::from_bytes(&rel));
            let p = Planned {
                root,
                path,
                size: r.get::<_, i64>(2).map_err(e)? as u64,
                dev: r.get::<_, i64>(3).map_err(e)? as u64,
                ino: r.get::<_, i64>(4).map_err(e)? as u64,
                mtime_ns: r.get(5).map_err(e)?,
            };
            if f(p).is_break() {
                break;
            }
        }
        Ok(())
    }
}
