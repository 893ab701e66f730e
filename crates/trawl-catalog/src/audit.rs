//! One audit run, recorded as it streams by: the walk goes into the `walk` table, each file read
//! is compared with its registered row and its verdict written at once (batched transactions of
//! thousands of rows), then missing files are settled (and paired with new ones into moves), and
//! the run is sealed into the hash chain. Memory stays flat: nothing per file is kept here.
//!
//! Verdicts (the README's "Audit states" is the user-facing statement of these rules):
//! - **ok**: the content's digests equal the registered ones (size or mtime may have changed;
//!   the row takes the new metadata).
//! - **corrupt**: same size and mtime as registered, different content. The registered digests
//!   are kept as the reference, so every later audit reports it again until it is restored.
//! - **modified**: size or mtime changed and the content differs: a new version is recorded.
//! - **new**: a path not registered (or registered as missing and now back).
//! - **missing**: registered, no longer a regular file at that path.
//! - **moved**: a missing path and a new path of this run with the same size and digests: one
//!   event on the new path naming the old one. With several candidates, each missing file takes
//!   the first unclaimed new path in byte order; the rest stay new or missing.
//! - **unreadable**: the file (or the directory holding it) could not be read; a file under an
//!   unlistable directory is not called missing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rusqlite::{OptionalExtension, params};
use trawl_digest::Algorithm;

use crate::{Catalog, CatalogError, Result, chain, now_secs};

/// Full (read and compare contents) or metadata-only (size and mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditMode {
    Full,
    Metadata,
}

impl AuditMode {
    fn name(self) -> &'static str {
        match self {
            AuditMode::Full => "full",
            AuditMode::Metadata => "metadata",
        }
    }
}

/// The verdict on one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Ok,
    Corrupt,
    Modified,
    Missing,
    New,
    Moved,
    Unreadable,
}

impl Verdict {
    pub const ALL: [Verdict; 7] = [
        Verdict::Ok,
        Verdict::Corrupt,
        Verdict::Modified,
        Verdict::Missing,
        Verdict::New,
        Verdict::Moved,
        Verdict::Unreadable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Corrupt => "corrupt",
            Verdict::Modified => "modified",
            Verdict::Missing => "missing",
            Verdict::New => "new",
            Verdict::Moved => "moved",
            Verdict::Unreadable => "unreadable",
        }
    }

    pub fn from_name(s: &str) -> Option<Verdict> {
        Verdict::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// Where a missing file went: root, path, size, mtime, files row id (0 when not registered).
type MoveTarget = (i64, Vec<u8>, i64, i64, i64);

/// A file the audit should read, in the order it should be read.
#[derive(Debug, Clone)]
pub struct Planned {
    pub root: usize,
    pub path: PathBuf,
    pub size: u64,
    pub dev: u64,
    pub ino: u64,
}

/// Which registered, unchanged files to read.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanFilter {
    /// Only those last verified before this Unix time (new and changed files are always read).
    pub verified_before: Option<i64>,
}

/// The run being recorded.
pub struct Audit<'c> {
    cat: &'c mut Catalog,
    pub run: i64,
    pub resumed: bool,
    mode: AuditMode,
    roots: Vec<(i64, PathBuf)>,
    root_list: String,
    algorithms: Vec<Algorithm>,
    now: i64,
    pending: usize,
    last_commit: Instant,
    metadata_ok: u64,
    /// Sealed or interrupted: nothing left for `Drop` to do.
    closed: bool,
    forget_missing: bool,
}

impl Catalog {
    /// Starts an audit of `roots` (absolute, canonical directories), resuming the last run if it
    /// was interrupted with the same roots and mode. `algorithms` is used only for a new catalog;
    /// an existing catalog keeps its own.
    pub fn begin_audit(
        &mut self,
        roots: &[PathBuf],
        mode: AuditMode,
        algorithms: &[Algorithm],
        options: &str,
    ) -> Result<Audit<'_>> {
        use std::os::unix::ffi::OsStrExt;
        let mut algs = self.algorithms()?;
        if algs.is_empty() {
            self.set_algorithms(algorithms)?;
            algs = algorithms.to_vec();
        }
        let mut ids = Vec::new();
        for r in roots {
            let b = r.as_os_str().as_bytes();
            self.conn
                .execute("INSERT OR IGNORE INTO roots(path) VALUES (?1)", [b])
                .map_err(|e| self.err(e))?;
            let id: i64 = self
                .conn
                .query_row("SELECT id FROM roots WHERE path = ?1", [b], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            ids.push((id, r.clone()));
        }
        let mut sorted: Vec<i64> = ids.iter().map(|(i, _)| *i).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let root_list = sorted
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let last: Option<(i64, String, String, Option<Vec<u8>>)> = self
            .conn
            .query_row(
                "SELECT id, status, roots || '/' || mode, chain_digest FROM runs ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let now = now_secs();
        let want = format!("{root_list}/{}", mode.name());
        let (run, resumed) = match last {
            Some((id, status, key, None))
                if status == "interrupted" && key == want && mode == AuditMode::Full =>
            {
                self.conn
                    .execute(
                        "UPDATE runs SET status = 'running', pid = ?2 WHERE id = ?1",
                        params![id, std::process::id()],
                    )
                    .map_err(|e| self.err(e))?;
                (id, true)
            }
            other => {
                if let Some((id, _, _, None)) = other {
                    // An interrupted run that will not be resumed is sealed as it stands.
                    let mode: String = self
                        .conn
                        .query_row("SELECT mode FROM runs WHERE id = ?1", [id], |r| r.get(0))
                        .map_err(|e| self.err(e))?;
                    let mode = if mode == "metadata" {
                        AuditMode::Metadata
                    } else {
                        AuditMode::Full
                    };
                    update_counts(&self.conn, id, mode, 0, 0, 0)
                        .and_then(|()| chain::seal(&self.conn, id, "interrupted"))
                        .map_err(|e| self.err(e))?;
                }
                self.conn
                    .execute(
                        "INSERT INTO runs(started, status, mode, roots, options, pid)
                         VALUES (?1, 'running', ?2, ?3, ?4, ?5)",
                        params![now, mode.name(), root_list, options, std::process::id()],
                    )
                    .map_err(|e| self.err(e))?;
                (self.conn.last_insert_rowid(), false)
            }
        };
        self.conn
            .execute_batch("DELETE FROM walk; BEGIN")
            .map_err(|e| self.err(e))?;
        Ok(Audit {
            cat: self,
            run,
            resumed,
            mode,
            roots: ids,
            root_list,
            algorithms: algs,
            now,
            pending: 0,
            last_commit: Instant::now(),
            metadata_ok: 0,
            closed: false,
            forget_missing: false,
        })
    }
}

fn kind_detail(kind: &str) -> Option<&'static str> {
    match kind {
        "symlink" => Some("replaced by a symbolic link"),
        "special" => Some("replaced by a special file (FIFO, socket or device)"),
        "gone" => Some("vanished while the audit ran"),
        _ => None,
    }
}

impl Audit<'_> {
    fn err(&self, e: rusqlite::Error) -> CatalogError {
        self.cat.err(e)
    }

    pub fn algorithms(&self) -> &[Algorithm] {
        &self.algorithms
    }

    pub fn mode(&self) -> AuditMode {
        self.mode
    }

    /// Files found missing in this run are reported once more and then dropped from the
    /// collection (state `removed`): later audits no longer report them.
    pub fn forget_missing(&mut self, yes: bool) {
        self.forget_missing = yes;
    }

    /// Commits the batch when it is big or old enough.
    fn tick(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= 4096 || self.last_commit.elapsed() > Duration::from_secs(1) {
            self.commit()?;
        }
        Ok(())
    }

    /// Makes everything recorded so far durable (kill -9 after this loses none of it).
    pub fn commit(&mut self) -> Result<()> {
        self.cat
            .conn
            .execute_batch("COMMIT; BEGIN")
            .map_err(|e| self.err(e))?;
        self.pending = 0;
        self.last_commit = Instant::now();
        Ok(())
    }

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

    #[allow(clippy::too_many_arguments)]
    fn walk_row(
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
        self.cat
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO walk(root, path, size, mtime_ns, dev, ino, kind)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    rid,
                    rel,
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

    /// The files and bytes a plan with `filter` will read, and the registered, unchanged files it
    /// leaves for a later run.
    pub fn plan_totals(&mut self, filter: PlanFilter) -> Result<(u64, u64, u64)> {
        self.commit()?;
        let sql = format!("SELECT count(*), coalesce(sum(w.size), 0) {}", PLAN_FROM);
        let before = filter.verified_before;
        let (n, b): (i64, i64) = self
            .cat
            .conn
            .query_row(&sql, params![self.run, before], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(|e| self.err(e))?;
        let deferred: i64 = if before.is_some() {
            let all = self
                .cat
                .conn
                .query_row(
                    &format!("SELECT count(*) {}", PLAN_FROM),
                    params![self.run, Option::<i64>::None],
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
    /// Stops when `f` returns false.
    pub fn planner(&mut self, filter: PlanFilter) -> Result<Planner> {
        self.commit()?;
        let conn = rusqlite::Connection::open_with_flags(
            &self.cat.path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| self.err(e))?;
        Ok(Planner {
            conn,
            path: self.cat.path.clone(),
            run: self.run,
            filter,
            roots: self.roots.clone(),
        })
    }

    fn root_index(&self, rid: i64) -> usize {
        self.roots.iter().position(|(i, _)| *i == rid).unwrap_or(0)
    }

    fn joined(&self, rid: i64, rel: &[u8]) -> Vec<u8> {
        use std::os::unix::ffi::OsStrExt;
        let mut p = self.roots[self.root_index(rid)]
            .1
            .as_os_str()
            .as_bytes()
            .to_vec();
        p.push(b'/');
        p.extend_from_slice(rel);
        p
    }

    fn concat(&self, digests: &[(Algorithm, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for a in &self.algorithms {
            if let Some((_, d)) = digests.iter().find(|(b, _)| b == a) {
                out.extend_from_slice(d);
            }
        }
        out
    }

    /// A file read in full: compares it with its registered row and records the verdict.
    #[allow(clippy::too_many_arguments)]
    pub fn record_read(
        &mut self,
        root: usize,
        rel: &[u8],
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
        digests: &[(Algorithm, Vec<u8>)],
    ) -> Result<(Verdict, Option<String>)> {
        let rid = self.roots[root].0;
        let all = self.concat(digests);
        let primary = all[..self.algorithms[0].output_len()].to_vec();
        let now = self.now;
        let run = self.run;
        type Row = (i64, i64, i64, Vec<u8>, bool, i64);
        let row: Option<Row> = self
            .cat
            .conn
            .prepare_cached(
                "SELECT id, size, mtime_ns, digests, present, first_run FROM files WHERE root = ?1 AND path = ?2",
            )
            .and_then(|mut st| {
                st.query_row(params![rid, rel], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })
                .optional()
            })
            .map_err(|e| self.err(e))?;
        let conn = &self.cat.conn;
        let (verdict, detail, expected) = match row {
            None => {
                conn.prepare_cached(
                    "INSERT INTO files(root, path, size, mtime_ns, dev, ino, digest, digests, state,
                         present, version, first_seen, last_verified, first_run, last_run, last_verdict)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'ok', 1, 1, ?9, ?9, ?10, ?10, 'new')",
                )
                .and_then(|mut st| {
                    st.execute(params![
                        rid,
                        rel,
                        size as i64,
                        mtime_ns,
                        dev as i64,
                        ino as i64,
                        primary,
                        all,
                        now,
                        run
                    ])
                })
                .map_err(|e| self.err(e))?;
                (Verdict::New, None, None)
            }
            Some((id, old_size, old_mtime, old_digests, present, first_run)) => {
                let same_meta = old_size == size as i64 && old_mtime == mtime_ns;
                let (verdict, detail) = if !present {
                    let d = if old_digests == all {
                        "back after being missing, with its registered content"
                    } else {
                        "back after being missing, with different content (recorded as a new version)"
                    };
                    (Verdict::New, Some(d.to_string()))
                } else if old_digests == all {
                    (Verdict::Ok, None)
                } else if same_meta {
                    (
                        Verdict::Corrupt,
                        Some("content changed but size and mtime did not".to_string()),
                    )
                } else {
                    let mut d = Vec::new();
                    if old_size != size as i64 {
                        d.push(format!("size {old_size} -> {size}"));
                    }
                    if old_mtime != mtime_ns {
                        d.push("mtime changed".to_string());
                    }
                    (Verdict::Modified, Some(d.join(", ")))
                };
                if verdict == Verdict::Corrupt {
                    // Keep the registered digests and metadata: they are the reference.
                    conn.prepare_cached(
                        "UPDATE files SET state = 'corrupt', last_run = ?2, last_verdict = 'corrupt' WHERE id = ?1",
                    )
                    .and_then(|mut st| st.execute(params![id, run]))
                    .map_err(|e| self.err(e))?;
                } else {
                    let bump = i64::from(old_digests != all);
                    conn.prepare_cached(
                        "UPDATE files SET size = ?2, mtime_ns = ?3, dev = ?4, ino = ?5, digest = ?6,
                             digests = ?7, state = 'ok', present = 1, version = version + ?8,
                             last_verified = ?9, last_run = ?10, last_verdict = ?11,
                             first_run = ?12, missing_since = NULL
                         WHERE id = ?1",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            id,
                            size as i64,
                            mtime_ns,
                            dev as i64,
                            ino as i64,
                            primary,
                            all,
                            bump,
                            now,
                            run,
                            verdict.name(),
                            if present { first_run } else { run }
                        ])
                    })
                    .map_err(|e| self.err(e))?;
                }
                (verdict, detail, Some(old_digests))
            }
        };
        if verdict != Verdict::Ok {
            self.event(
                rid,
                rel,
                verdict,
                Some((size, mtime_ns)),
                expected.as_deref(),
                Some(&all),
                None,
                detail.as_deref(),
            )?;
        }
        self.tick()?;
        Ok((verdict, detail))
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        rid: i64,
        rel: &[u8],
        verdict: Verdict,
        meta: Option<(u64, i64)>,
        expected: Option<&[u8]>,
        actual: Option<&[u8]>,
        other: Option<(i64, &[u8])>,
        detail: Option<&str>,
    ) -> Result<()> {
        self.cat
            .conn
            .prepare_cached(
                "INSERT OR REPLACE INTO events(run, root, path, state, size, mtime_ns, expected,
                     actual, other_root, other_path, detail)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut st| {
                st.execute(params![
                    self.run,
                    rid,
                    rel,
                    verdict.name(),
                    meta.map(|m| m.0 as i64),
                    meta.map(|m| m.1),
                    expected,
                    actual,
                    other.map(|o| o.0),
                    other.map(|o| o.1),
                    detail
                ])
            })
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A file that could not be read (it stays registered as it was).
    pub fn record_unreadable(&mut self, root: usize, rel: &[u8], reason: &str) -> Result<()> {
        let rid = self.roots[root].0;
        self.event(
            rid,
            rel,
            Verdict::Unreadable,
            None,
            None,
            None,
            None,
            Some(reason),
        )?;
        self.tick()
    }

    /// A file the walk found that was gone when it came to be read.
    pub fn record_gone(&mut self, root: usize, rel: &[u8]) -> Result<()> {
        let rid = self.roots[root].0;
        self.cat
            .conn
            .prepare_cached("UPDATE walk SET kind = 'gone' WHERE root = ?1 AND path = ?2")
            .and_then(|mut st| st.execute(params![rid, rel]))
            .map_err(|e| self.err(e))?;
        self.tick()
    }

    /// After the reads: decides missing files and pairs them with new ones into moves. With
    /// `complete` false (a budget stopped the reads), a missing file that might have moved to a
    /// file not yet read is left undecided.
    pub fn settle(&mut self, complete: bool) -> Result<()> {
        if self.mode == AuditMode::Metadata {
            self.settle_metadata()?;
        }
        let mut after = 0i64;
        loop {
            type Row = (
                i64,
                i64,
                Vec<u8>,
                i64,
                i64,
                u64,
                u64,
                Vec<u8>,
                Vec<u8>,
                Option<String>,
            );
            let rows: Vec<Row> = {
                let mut st = self
                    .cat
                    .conn
                    .prepare_cached(
                        "SELECT f.id, f.root, f.path, f.size, f.mtime_ns, f.dev, f.ino, f.digest, f.digests, w.kind
                         FROM files f LEFT JOIN walk w ON w.root = f.root AND w.path = f.path
                         WHERE f.id > ?1 AND (f.present = 1 OR f.state = 'missing')
                           AND instr(',' || ?2 || ',', ',' || f.root || ',') > 0
                           AND (w.kind IS NULL OR w.kind NOT IN ('file', 'dirfail'))
                           AND NOT EXISTS (SELECT 1 FROM walk d INDEXED BY walk_kind WHERE d.kind = 'dirfail' AND d.root = f.root
                               AND substr(f.path, 1, length(d.path)) = d.path
                               AND substr(f.path, length(d.path) + 1, 1) = x'2f')
                         ORDER BY f.id LIMIT 1000",
                    )
                    .map_err(|e| self.err(e))?;
                st.query_map(params![after, self.root_list], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get::<_, i64>(5)? as u64,
                        r.get::<_, i64>(6)? as u64,
                        r.get(7)?,
                        r.get(8)?,
                        r.get(9)?,
                    ))
                })
                .and_then(|it| it.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| self.err(e))?
            };
            let Some(last) = rows.last() else { break };
            after = last.0;
            for (id, rid, path, size, mtime, dev, ino, digest, digests, kind) in rows {
                if !complete && self.unread_new_of_size(size)? {
                    continue;
                }
                let target = match self.mode {
                    AuditMode::Full => self.move_target_full(size, &digest, &digests)?,
                    AuditMode::Metadata => self.move_target_inode(size, mtime, dev, ino)?,
                };
                match target {
                    Some((trid, tpath, tsize, tmtime, tid)) => {
                        if self.mode == AuditMode::Full {
                            // The file keeps its identity (id, first seen, version) under its new path.
                            let conn = &self.cat.conn;
                            let r = conn
                                .execute("DELETE FROM files WHERE id = ?1", [tid])
                                .and_then(|_| {
                                    conn.execute(
                                        "UPDATE files SET root = ?2, path = ?3, size = ?4, mtime_ns = ?5,
                                             state = 'ok', present = 1, last_verified = ?6, last_run = ?7,
                                             last_verdict = 'moved', missing_since = NULL
                                         WHERE id = ?1",
                                        params![id, trid, tpath, tsize, tmtime, self.now, self.run],
                                    )
                                });
                            r.map_err(|e| self.err(e))?;
                        }
                        let detail = format!(
                            "moved from {}",
                            String::from_utf8_lossy(&self.joined(rid, &path))
                        );
                        self.event(
                            trid,
                            &tpath,
                            Verdict::Moved,
                            Some((tsize as u64, tmtime)),
                            Some(&digests),
                            Some(&digests),
                            Some((rid, &path)),
                            Some(&detail),
                        )?;
                    }
                    None => {
                        let since: Option<i64> = self
                            .cat
                            .conn
                            .query_row("SELECT missing_since FROM files WHERE id = ?1", [id], |r| {
                                r.get(0)
                            })
                            .map_err(|e| self.err(e))?;
                        if self.mode == AuditMode::Full {
                            self.cat
                                .conn
                                .execute(
                                    "UPDATE files SET present = 0, state = ?3, last_run = ?2,
                                         last_verdict = 'missing',
                                         missing_since = coalesce(missing_since, ?2)
                                     WHERE id = ?1",
                                    params![
                                        id,
                                        self.run,
                                        if self.forget_missing {
                                            "removed"
                                        } else {
                                            "missing"
                                        }
                                    ],
                                )
                                .map_err(|e| self.err(e))?;
                        }
                        let mut parts: Vec<String> = Vec::new();
                        if let Some(d) = kind.as_deref().and_then(kind_detail) {
                            parts.push(d.into());
                        }
                        if let Some(r) = since {
                            parts.push(format!("missing since run {r}"));
                        }
                        if self.forget_missing {
                            parts.push("forgotten (--forget-missing): not reported again".into());
                        }
                        let joined = parts.join("; ");
                        let detail = (!parts.is_empty()).then_some(joined.as_str());
                        self.event(
                            rid,
                            &path,
                            Verdict::Missing,
                            Some((size as u64, mtime)),
                            Some(&digests),
                            None,
                            None,
                            detail,
                        )?;
                    }
                }
                self.tick()?;
            }
        }
        self.commit()
    }

    fn unread_new_of_size(&self, size: i64) -> Result<bool> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT EXISTS(SELECT 1 FROM walk w WHERE w.size = ?1 AND w.kind = 'file'
                     AND NOT EXISTS (SELECT 1 FROM files f WHERE f.root = w.root AND f.path = w.path AND f.present = 1))",
            )
            .and_then(|mut st| st.query_row([size], |r| r.get(0)))
            .map_err(|e| self.err(e))
    }

    /// A file registered by this run as new with the same size and digests, not yet claimed.
    fn move_target_full(
        &self,
        size: i64,
        digest: &[u8],
        digests: &[u8],
    ) -> Result<Option<MoveTarget>> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT root, path, size, mtime_ns, id FROM files
                 WHERE digest = ?1 AND size = ?2 AND digests = ?3 AND first_run = ?4
                   AND last_run = ?4 AND last_verdict = 'new' AND present = 1
                 ORDER BY root, path LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![digest, size, digests, self.run], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Metadata-only moves: a new path with the same device, inode, size and mtime.
    fn move_target_inode(
        &self,
        size: i64,
        mtime: i64,
        dev: u64,
        ino: u64,
    ) -> Result<Option<MoveTarget>> {
        self.cat
            .conn
            .prepare_cached(
                "SELECT w.root, w.path, w.size, w.mtime_ns, 0 FROM walk w
                 JOIN events e ON e.run = ?5 AND e.root = w.root AND e.path = w.path AND e.state = 'new'
                 WHERE w.kind = 'file' AND w.size = ?1 AND w.mtime_ns = ?2 AND w.dev = ?3 AND w.ino = ?4
                 ORDER BY w.root, w.path LIMIT 1",
            )
            .and_then(|mut st| {
                st.query_row(params![size, mtime, dev as i64, ino as i64, self.run], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Metadata-only: new and changed paths by size and mtime, as set operations.
    fn settle_metadata(&mut self) -> Result<()> {
        let conn = &self.cat.conn;
        let r = conn
            .execute(
                "INSERT OR REPLACE INTO events(run, root, path, state, size, mtime_ns, detail)
                 SELECT ?1, w.root, w.path, 'new', w.size, w.mtime_ns,
                        'not registered yet (a metadata-only audit reads nothing; the next full audit registers it)'
                 FROM walk w LEFT JOIN files f ON f.root = w.root AND f.path = w.path
                 WHERE w.kind = 'file' AND (f.id IS NULL OR f.present = 0)",
                [self.run],
            )
            .and_then(|_| {
                conn.execute(
                    "INSERT OR REPLACE INTO events(run, root, path, state, size, mtime_ns, expected, detail)
                     SELECT ?1, w.root, w.path, 'modified', w.size, w.mtime_ns, f.digests,
                            'size or mtime changed (metadata-only audit: content not compared)'
                     FROM walk w JOIN files f ON f.root = w.root AND f.path = w.path
                     WHERE w.kind = 'file' AND f.present = 1
                       AND (f.size != w.size OR f.mtime_ns != w.mtime_ns)",
                    [self.run],
                )
            })
            .and_then(|_| {
                conn.query_row(
                    "SELECT count(*) FROM walk w JOIN files f ON f.root = w.root AND f.path = w.path
                     WHERE w.kind = 'file' AND f.present = 1 AND f.size = w.size AND f.mtime_ns = w.mtime_ns",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            });
        self.metadata_ok = r.map_err(|e| self.err(e))? as u64;
        Ok(())
    }

    /// Seals the run: counts, status, hash chain; clears the walk. `status` is `complete` or
    /// `partial` (a budget stopped it).
    pub fn seal(mut self, status: &str, files_read: u64, bytes_read: u64) -> Result<RunSummary> {
        self.commit()?;
        let run = self.run;
        let conn = &self.cat.conn;
        let r = (|| -> rusqlite::Result<()> {
            update_counts(
                conn,
                run,
                self.mode,
                self.metadata_ok,
                files_read,
                bytes_read,
            )?;
            chain::seal(conn, run, status)?;
            conn.execute_batch("DELETE FROM walk; COMMIT")?;
            let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
            Ok(())
        })();
        self.closed = true;
        r.map_err(|e| self.err(e))?;
        crate::query::run_summary(conn, run).map_err(|e| self.err(e))
    }

    /// Stops here (Ctrl-C or an error): keeps what was recorded, marks the run interrupted; the
    /// next audit of the same roots resumes it.
    pub fn interrupt(mut self, files_read: u64, bytes_read: u64) -> Result<()> {
        self.closed = true;
        self.interrupt_inner(files_read, bytes_read)
    }

    fn interrupt_inner(&mut self, files_read: u64, bytes_read: u64) -> Result<()> {
        let conn = &self.cat.conn;
        conn.execute_batch("COMMIT")
            .and_then(|_| {
                conn.execute(
                    "UPDATE runs SET status = 'interrupted', files_read = files_read + ?2,
                         bytes_read = bytes_read + ?3 WHERE id = ?1",
                    params![self.run, files_read as i64, bytes_read as i64],
                )
            })
            .map(|_| ())
            .map_err(|e| self.err(e))
    }
}

impl Drop for Audit<'_> {
    /// Dropped without seal or interrupt (an error on the way): keep what is committed.
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.interrupt_inner(0, 0);
        }
    }
}

/// Fills in a run's counts from what its events and files say.
pub(crate) fn update_counts(
    conn: &rusqlite::Connection,
    run: i64,
    mode: AuditMode,
    metadata_ok: u64,
    files_read: u64,
    bytes_read: u64,
) -> rusqlite::Result<()> {
    let count = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [run], |r| r.get(0)) };
    let n_ok = match mode {
        AuditMode::Full => {
            count("SELECT count(*) FROM files WHERE last_run = ?1 AND last_verdict = 'ok'")?
        }
        AuditMode::Metadata => metadata_ok as i64,
    };
    let deferred = match mode {
        AuditMode::Full => count(
            "SELECT count(*) FROM walk w WHERE w.kind = 'file'
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run = ?1 AND e.root = w.root AND e.path = w.path)
             AND NOT EXISTS (SELECT 1 FROM files f WHERE f.root = w.root AND f.path = w.path AND f.last_run = ?1)",
        )?,
        AuditMode::Metadata => 0,
    };
    conn.execute(
        "UPDATE runs SET n_ok = ?2, n_deferred = ?3,
             files_read = files_read + ?4, bytes_read = bytes_read + ?5, finished = ?6,
             n_corrupt = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'corrupt'),
             n_modified = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'modified'),
             n_missing = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'missing'),
             n_new = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'new'),
             n_moved = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'moved'),
             n_unreadable = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'unreadable')
         WHERE id = ?1",
        params![
            run,
            n_ok,
            deferred,
            files_read as i64,
            bytes_read as i64,
            now_secs()
        ],
    )?;
    Ok(())
}

const PLAN_FROM: &str = "FROM walk w LEFT JOIN files f ON f.root = w.root AND f.path = w.path
     WHERE w.kind = 'file'
       AND (f.id IS NULL OR f.last_run IS NOT ?1)
       AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run = ?1 AND e.root = w.root AND e.path = w.path)
       AND (f.id IS NULL OR f.present = 0 OR f.size != w.size OR f.mtime_ns != w.mtime_ns
            OR ?2 IS NULL OR f.last_verified IS NULL OR f.last_verified < ?2)";

/// Streams an audit's plan from its own connection (see [`Audit::planner`]).
pub struct Planner {
    conn: rusqlite::Connection,
    path: PathBuf,
    run: i64,
    filter: PlanFilter,
    roots: Vec<(i64, PathBuf)>,
}

impl Planner {
    pub fn run(self, f: &mut dyn FnMut(Planned) -> bool) -> Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let sql = format!(
            "SELECT w.root, w.path, w.size, w.dev, w.ino {PLAN_FROM}
             ORDER BY (f.id IS NOT NULL AND f.present = 1 AND f.size = w.size AND f.mtime_ns = w.mtime_ns),
                      f.last_verified, f.last_run, w.root, w.path"
        );
        let e = |err| crate::sql(&self.path, err);
        let mut st = self.conn.prepare(&sql).map_err(e)?;
        let mut rows = st
            .query(params![self.run, self.filter.verified_before])
            .map_err(e)?;
        while let Some(r) = rows.next().map_err(e)? {
            let rid: i64 = r.get(0).map_err(e)?;
            let rel: Vec<u8> = r.get(1).map_err(e)?;
            let root = self.roots.iter().position(|(i, _)| *i == rid).unwrap_or(0);
            let path = self.roots[root].1.join(std::ffi::OsStr::from_bytes(&rel));
            let p = Planned {
                root,
                path,
                size: r.get::<_, i64>(2).map_err(e)? as u64,
                dev: r.get::<_, i64>(3).map_err(e)? as u64,
                ino: r.get::<_, i64>(4).map_err(e)? as u64,
            };
            if !f(p) {
                break;
            }
        }
        Ok(())
    }
}

/// One run as recorded.
#[derive(Debug, Clone)]
pub struct RunSummary {
    pub id: i64,
    pub started: i64,
    pub finished: Option<i64>,
    pub status: String,
    pub mode: String,
    pub files_read: u64,
    pub bytes_read: u64,
    pub counts: Vec<(Verdict, u64)>,
    pub deferred: u64,
    pub chain_digest: Option<Vec<u8>>,
}

impl RunSummary {
    pub fn count(&self, v: Verdict) -> u64 {
        self.counts
            .iter()
            .find(|(w, _)| *w == v)
            .map_or(0, |(_, n)| *n)
    }
}
