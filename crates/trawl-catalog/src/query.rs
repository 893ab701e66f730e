//! Read-only questions to a catalog: a run's summary and events, the state of the collection,
//! one file's history, and the registered files for export. Results stream through callbacks.

use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};

use crate::summary::{RunSummary, run_summary};
use crate::verdict::Verdict;
use crate::{Catalog, Result};

/// One recorded event, with paths made absolute (root joined).
#[derive(Debug, Clone)]
pub struct Event {
    pub run: i64,
    pub started: i64,
    pub verdict: Verdict,
    pub path: PathBuf,
    pub size: Option<u64>,
    pub expected: Option<Vec<u8>>,
    pub actual: Option<Vec<u8>>,
    pub other_path: Option<PathBuf>,
    pub detail: Option<String>,
}

fn join(root: Vec<u8>, rel: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let mut p = root;
    p.push(b'/');
    p.extend_from_slice(&rel);
    PathBuf::from(std::ffi::OsString::from_vec(p))
}

const EVENT_SELECT: &str = "SELECT e.run, ru.started, e.state, r.path, e.path, e.size, e.expected,
        e.actual, o.path, e.other_path, e.detail
    FROM event_paths e JOIN roots r ON r.id = e.root JOIN runs ru ON ru.id = e.run
    LEFT JOIN roots o ON o.id = e.other_root";

fn event_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    let state: String = r.get(2)?;
    let other_root: Option<Vec<u8>> = r.get(8)?;
    let other_rel: Option<Vec<u8>> = r.get(9)?;
    Ok(Event {
        run: r.get(0)?,
        started: r.get(1)?,
        verdict: Verdict::from_name(&state).unwrap_or(Verdict::Unreadable),
        path: join(r.get(3)?, r.get(4)?),
        size: r.get::<_, Option<i64>>(5)?.map(|v| v as u64),
        expected: r.get(6)?,
        actual: r.get(7)?,
        other_path: match (other_root, other_rel) {
            (Some(a), Some(b)) => Some(join(a, b)),
            _ => None,
        },
        detail: r.get(10)?,
    })
}

/// Receives root id, relative path, size and registered digests.
pub type FileVisitor<'a> = dyn FnMut(i64, &[u8], u64, &[u8]) + 'a;

/// The state of the collection as the catalog knows it.
#[derive(Debug, Clone)]
pub struct CollectionReport {
    pub last_run: Option<RunSummary>,
    pub runs: u64,
    pub interrupted: Option<i64>,
    pub by_state: Vec<(String, u64, u64)>,
    pub never_verified: u64,
    pub oldest_verified: Option<(i64, PathBuf)>,
    pub catalog_bytes: u64,
}

/// Sees a registered file: its root's path, its path below it, its size and its state.
pub type StateVisitor<'a> = dyn FnMut(&Path, &[u8], u64, &str) + 'a;

impl Catalog {
    /// One run's figures.
    pub fn run_summary(&self, run: i64) -> Result<RunSummary> {
        run_summary(&self.conn, run).map_err(|e| self.err(e))
    }

    /// The events of one run in path order.
    pub fn for_each_event(&self, run: i64, f: &mut dyn FnMut(Event)) -> Result<()> {
        let sql = format!("{EVENT_SELECT} WHERE e.run = ?1 ORDER BY r.path, e.path");
        let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = st.query([run]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            f(event_row(r).map_err(|e| self.err(e))?);
        }
        Ok(())
    }

    /// The collection as the catalog last saw it: every path's state, and the runs.
    pub fn report(&self) -> Result<CollectionReport> {
        let c = &self.conn;
        let r = (|| -> rusqlite::Result<CollectionReport> {
            let last: Option<i64> = c
                .query_row("SELECT id FROM runs ORDER BY id DESC LIMIT 1", [], |r| {
                    r.get(0)
                })
                .optional()?;
            let interrupted: Option<i64> = c
                .query_row(
                    "SELECT id FROM runs WHERE chain_digest IS NULL ORDER BY id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            let runs: i64 = c.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))?;
            let mut st = c.prepare(
                "SELECT state, count(*), coalesce(sum(size), 0) FROM files GROUP BY state ORDER BY state",
            )?;
            let by_state = st
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, i64>(1)? as u64,
                        r.get::<_, i64>(2)? as u64,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let never: i64 = c.query_row(
                "SELECT count(*) FROM files WHERE present = 1 AND last_verified IS NULL",
                [],
                |r| r.get(0),
            )?;
            let oldest = c
                .query_row(
                    "SELECT f.last_verified, r.path, f.path FROM file_paths f JOIN roots r ON r.id = f.root
                     WHERE f.present = 1 AND f.last_verified IS NOT NULL
                     ORDER BY f.last_verified, f.id LIMIT 1",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, join(r.get(1)?, r.get(2)?))),
                )
                .optional()?;
            let page: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0))?;
            Ok(CollectionReport {
                last_run: last.map(|id| run_summary(c, id)).transpose()?,
                runs: runs as u64,
                interrupted,
                by_state,
                never_verified: never as u64,
                oldest_verified: oldest,
                catalog_bytes: (page * size) as u64,
            })
        })();
        r.map_err(|e| self.err(e))
    }

    /// Finds the (root, relative path) a user's path names: an absolute path (or one relative to
    /// the current directory) under a registered root, or a path relative to a root.
    pub fn locate(&self, path: &Path) -> Result<Vec<(i64, Vec<u8>)>> {
        use std::os::unix::ffi::OsStrExt;
        let roots = self.roots()?;
        let mut out = Vec::new();
        let abs = if path.is_absolute() {
            Some(path.to_path_buf())
        } else {
            std::env::current_dir().ok().map(|d| d.join(path))
        };
        // Canonicalize the parent only: the file itself may be gone.
        let abs = abs.map(|a| match (a.parent(), a.file_name()) {
            (Some(p), Some(n)) => std::fs::canonicalize(p).map(|p| p.join(n)).unwrap_or(a),
            _ => a,
        });
        for (id, root) in &roots {
            if let Some(rel) = abs.as_ref().and_then(|a| a.strip_prefix(root).ok())
                && !rel.as_os_str().is_empty()
            {
                out.push((*id, rel.as_os_str().as_bytes().to_vec()));
            }
        }
        if out.is_empty() && path.is_relative() {
            for (id, _) in &roots {
                out.push((*id, path.as_os_str().as_bytes().to_vec()));
            }
        }
        Ok(out)
    }

    /// Everything that happened to one path, oldest first, following moves back to earlier paths.
    pub fn history(&self, root: i64, rel: &[u8]) -> Result<Vec<Event>> {
        let sql = format!("{EVENT_SELECT} WHERE e.dir = ?1 AND e.name = ?2 ORDER BY e.run");
        let mut out: Vec<Event> = Vec::new();
        let mut cur = (root, rel.to_vec());
        let mut seen = std::collections::HashSet::new();
        // Follow "moved from" links backwards; `seen` stops a cycle (a file moved back and forth).
        while seen.insert(cur.clone()) {
            let (d, name) = crate::dirs::split(&cur.1);
            let Some(dir) = crate::dirs::find(&self.conn, cur.0, d).map_err(|e| self.err(e))?
            else {
                break;
            };
            let mut st = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
            let mut evs: Vec<Event> = st
                .query_map(params![dir, name], event_row)
                .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.err(e))?;
            let prev: Option<(i64, Vec<u8>, i64)> = self
                .conn
                .query_row(
                    "SELECT other_root, other_path, run FROM event_paths
                     WHERE dir = ?1 AND name = ?2 AND state = 'moved' ORDER BY run LIMIT 1",
                    params![dir, name],
                    |r| r.try_into(),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            if let Some((_, _, moved_run)) = &prev {
                // Earlier paths' events up to the move belong to this file's history.
                evs.retain(|e| e.run >= *moved_run);
            }
            evs.append(&mut out);
            out = evs;
            match prev {
                Some((r, p, _)) => cur = (r, p),
                None => break,
            }
        }
        Ok(out)
    }

    /// The registered row of a path: (size, registered digests, state, present, version,
    /// first seen, last verified).
    #[allow(clippy::type_complexity)]
    pub fn file_row(
        &self,
        root: i64,
        rel: &[u8],
    ) -> Result<Option<(u64, Vec<u8>, String, bool, i64, i64, Option<i64>)>> {
        let (d, name) = crate::dirs::split(rel);
        let Some(dir) = crate::dirs::find(&self.conn, root, d).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        self.conn
            .query_row(
                "SELECT size, digests, state, present, version, first_seen, last_verified
                 FROM files WHERE dir = ?1 AND name = ?2",
                params![dir, name],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Every present registered file in (root, path) order: root id, relative path, size,
    /// registered digests (concatenated in [`Catalog::algorithms`] order).
    pub fn for_each_file(&self, f: &mut FileVisitor<'_>) -> Result<()> {
        let mut st = self
            .conn
            .prepare(
                "SELECT f.root, f.path, f.size, f.digests FROM file_paths f JOIN roots r ON r.id = f.root
                 WHERE f.present = 1 ORDER BY r.path, f.path",
            )
            .map_err(|e| self.err(e))?;
        let mut rows = st.query([]).map_err(|e| self.err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let rid: i64 = r.get(0).map_err(|e| self.err(e))?;
            let path = r.get_ref(1).and_then(|v| Ok(v.as_blob()?.to_vec()));
            let path = path.map_err(|e| self.err(e))?;
            let size: i64 = r.get(2).map_err(|e| self.err(e))?;
            let d = r.get_ref(3).and_then(|v| Ok(v.as_blob()?.to_vec()));
            let d = d.map_err(|e| self.err(e))?;
            f(rid, &path, size as u64, &d);
        }
        Ok(())
    }

    /// The registered files in these states (`corrupt`, `missing`, ...), in path order: the
    /// root's path, the file's path below it, its size and its state.
    pub fn files_in_states(&self, states: &[&str], f: &mut StateVisitor<'_>) -> Result<()> {
        let mut st = self
            .conn
            .prepare(
                "SELECT r.path, f.path, f.size, f.state FROM file_paths f JOIN roots r ON r.id = f.root
                 WHERE f.state = ?1 ORDER BY r.path, f.path",
            )
            .map_err(|e| self.err(e))?;
        for state in states {
            let mut rows = st.query([state]).map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                let blob = |i| {
                    r.get_ref(i)
                        .and_then(|v| Ok(v.as_blob()?.to_vec()))
                        .map_err(|e| self.err(e))
                };
                use std::os::unix::ffi::OsStrExt;
                let root = blob(0)?;
                let path = blob(1)?;
                let size: i64 = r.get(2).map_err(|e| self.err(e))?;
                let state: String = r.get(3).map_err(|e| self.err(e))?;
                f(
                    Path::new(std::ffi::OsStr::from_bytes(&root)),
                    &path,
                    size as u64,
                    &state,
                );
            }
        }
        Ok(())
    }

    /// Checks the runs' hash chain.
    pub fn verify_chain(&self) -> Result<crate::chain::ChainReport> {
        crate::chain::verify(&self.conn).map_err(|e| self.err(e))
    }
}

impl Catalog {
    /// Every sealed run's chain digest, oldest first.
    pub fn chain_digests(&self) -> Result<Vec<Vec<u8>>> {
        let mut st = self
            .conn
            .prepare("SELECT chain_digest FROM runs WHERE chain_digest IS NOT NULL ORDER BY id")
            .map_err(|e| self.err(e))?;
        st.query_map([], |r| r.get(0))
            .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(|e| self.err(e))
    }
}
