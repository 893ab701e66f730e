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

//!
//! The run's parts, one module each: [`verdict`] (the states), [`walk`] (the walk table),
//! [`plan`] (what to read, in which order), [`record`] (a verdict per file read), [`stored`]
//! (a verdict per file from its store's own checksums, read from nowhere), [`settle`]
//! (missing and moved files), and here the run itself: begin, seal, interrupt.

mod plan;
mod record;
mod settle;
mod stored;
mod walk;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{OptionalExtension, params};
use trawl_digest::Algorithm;

use crate::dirs::DirIds;
use crate::{Catalog, CatalogError, Result, chain, now_secs};

pub use crate::summary::RunSummary;
pub use crate::verdict::{AuditMode, Verdict};
pub(crate) use plan::Planner;
pub use plan::{PlanFilter, Planned};
pub(crate) use stored::Held;

/// One audit run being recorded: the files it walks and reads go into the catalog as they come.
pub struct Audit<'c> {
    cat: &'c mut Catalog,
    /// The run's number in the catalog.
    pub run: i64,
    /// It resumes an interrupted run of the same roots.
    pub resumed: bool,
    mode: AuditMode,
    roots: Vec<(i64, PathBuf)>,
    root_list: String,
    algorithms: Vec<Algorithm>,
    now: i64,
    pending: usize,
    /// Files and bytes read since the last commit.
    read: (u64, u64),
    last_commit: Instant,
    metadata_ok: u64,
    /// Sealed or interrupted: nothing left for `Drop` to do.
    closed: bool,
    forget_missing: bool,
    /// The files' content never changes (an OCFL storage root): see [`Audit::fixed_content`].
    fixed: bool,
    /// Whether each fixed unit (a root's index and a directory below it) had files registered
    /// before this run: asked once per unit, not per file (emptied when it fills).
    units: std::collections::HashMap<(usize, Vec<u8>), bool>,
    dirs: DirIds,
    /// The scratch database (attached as `scratch`) that holds this run's walk; it goes with
    /// the run.
    scratch: tempfile::TempDir,
    /// This run's new files indexed by digest, for pairing moves (built when first needed).
    fresh: bool,
    /// What the user's rules leave out: registered files it matches are left as they are.
    excluding: trawl_walk::Exclusion,
    /// Registered files left as they are because the rules leave them out.
    left_out: u64,
}

/// The scratch tables of one run: the walk (every path found, and what was there), the
/// directories that could not be listed and those the user's rules left out (paths with their
/// trailing `/`; the root itself: empty).
const SCRATCH_DDL: &str = "
PRAGMA journal_mode = WAL;
CREATE TABLE walk(
    dir INTEGER NOT NULL,
    name BLOB NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY(dir, name)
) WITHOUT ROWID;
CREATE INDEX walk_size ON walk(size);
CREATE TABLE failed_dirs(root INTEGER NOT NULL, path BLOB NOT NULL);
CREATE TABLE excluded_dirs(root INTEGER NOT NULL, path BLOB NOT NULL);
";

/// A run as [`Catalog::begin_audit`] looks at the last one: its id, status, `ROOTS/MODE`, and
/// chain digest.
type LastRun = (i64, String, String, Option<Vec<u8>>);

/// Creates the scratch database at `path` (the catalog's connections cannot: an attached file
/// is opened with their flags, which do not create).
fn create_scratch(path: &Path) -> rusqlite::Result<()> {
    rusqlite::Connection::open(path)?.execute_batch(SCRATCH_DDL)
}

/// Attaches the scratch database at `path` to `conn` as `scratch`.
pub(crate) fn attach_scratch(conn: &rusqlite::Connection, path: &Path) -> rusqlite::Result<()> {
    let name = path
        .to_str()
        .ok_or_else(|| rusqlite::Error::InvalidPath(path.to_path_buf()))?;
    conn.execute("ATTACH DATABASE ?1 AS scratch", [name])?;
    // A scratch file lost in a crash costs nothing: the next audit walks again.
    conn.execute_batch("PRAGMA scratch.synchronous = OFF")
}

impl Catalog {
    /// Starts an audit of `roots` (absolute, canonical directories), resuming the last run if it
    /// was interrupted with the same roots and mode. `algorithms` is a new catalog's; an
    /// existing catalog keeps its own, and takes those `algorithms` add after them (a list
    /// that begins with its own). The run's walk is kept in a scratch database in a
    /// private directory under `temp_dir` (default: the system's), removed when the run ends.
    pub fn begin_audit(
        &mut self,
        roots: &[PathBuf],
        mode: AuditMode,
        algorithms: &[Algorithm],
        options: &str,
        temp_dir: Option<&Path>,
    ) -> Result<Audit<'_>> {
        let scratch = self.scratch(temp_dir)?;
        let mut algs = self.algorithms()?;
        if algs.is_empty() || (algorithms.len() > algs.len() && algorithms.starts_with(&algs)) {
            self.set_algorithms(algorithms)?;
            algs = algorithms.to_vec();
        }
        let (ids, root_list) = self.root_ids(roots)?;
        let last = self.last_run()?;
        let now = now_secs();
        let want = format!("{root_list}/{}", mode.name());
        let (run, resumed) = self.start_run(last, &want, mode, &root_list, options, now)?;
        self.conn.execute_batch("BEGIN").map_err(|e| self.err(e))?;
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
            read: (0, 0),
            last_commit: Instant::now(),
            metadata_ok: 0,
            closed: false,
            forget_missing: false,
            fixed: false,
            units: Default::default(),
            dirs: DirIds::default(),
            scratch,
            fresh: false,
            excluding: trawl_walk::Exclusion::default(),
            left_out: 0,
        })
    }

    /// A run's scratch database, in a private directory under `temp_dir` (default: the
    /// system's), created and attached to the catalog's connection.
    fn scratch(&self, temp_dir: Option<&Path>) -> Result<tempfile::TempDir> {
        let tmp = temp_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
        let scratch = tempfile::Builder::new()
            .prefix("trawl-audit-")
            .tempdir_in(&tmp)
            .map_err(|source| CatalogError::Io {
                path: tmp.clone(),
                source,
            })?;
        // A scratch left attached by an audit that failed to start on this connection.
        let _ = self.conn.execute_batch("DETACH DATABASE scratch");
        let walk_db = scratch.path().join("walk.db");
        create_scratch(&walk_db)
            .and_then(|()| attach_scratch(&self.conn, &walk_db))
            .map_err(|e| self.err(e))?;
        Ok(scratch)
    }

    /// The last run: its id, status, roots and mode (`ROOTS/MODE`), and chain digest (None:
    /// not sealed).
    fn last_run(&self) -> Result<Option<LastRun>> {
        self.conn
            .query_row(
                "SELECT id, status, roots || '/' || mode, chain_digest FROM runs ORDER BY id DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Each root's id (registered now if new), and the sorted ids as a list for queries.
    fn root_ids(&self, roots: &[PathBuf]) -> Result<(Vec<(i64, PathBuf)>, String)> {
        use std::os::unix::ffi::OsStrExt;
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
        Ok((ids, root_list))
    }

    /// The run this audit records into: the last one resumed (interrupted, same roots and mode,
    /// a full audit), or a new one, an interrupted run not resumed sealed as it stands first.
    fn start_run(
        &self,
        last: Option<LastRun>,
        want: &str,
        mode: AuditMode,
        root_list: &str,
        options: &str,
        now: i64,
    ) -> Result<(i64, bool)> {
        Ok(match last {
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
                    let mode = AuditMode::from_name(&mode);
                    update_counts(&self.conn, id, mode, 0)
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
        })
    }
}

impl Audit<'_> {
    pub(super) fn err(&self, e: rusqlite::Error) -> CatalogError {
        self.cat.err(e)
    }

    /// The catalog's algorithms, in its order.
    pub fn algorithms(&self) -> &[Algorithm] {
        &self.algorithms
    }

    /// Full or metadata-only.
    pub fn mode(&self) -> AuditMode {
        self.mode
    }

    /// Files found missing in this run are reported once more and then dropped from the
    /// collection (state `removed`): later audits no longer report them.
    pub fn forget_missing(&mut self, yes: bool) {
        self.forget_missing = yes;
    }

    /// What the user's rules leave out (`--exclude`): a registered file they match, or one
    /// under a directory they left out, is neither read nor called missing, and keeps its
    /// registration as it was.
    pub fn excluding(&mut self, rules: trawl_walk::Exclusion) {
        self.excluding = rules;
    }

    /// Registered files this run left as they were because the rules leave them out (known
    /// once the run is settled).
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// The files walked are content that never changes (their source says so): a metadata-only
    /// audit calls a changed size or time corrupt, not modified.
    pub fn fixed_content(&mut self, yes: bool) {
        self.fixed = yes;
    }

    /// Commits the batch when it is big or old enough.
    pub(super) fn tick(&mut self) -> Result<()> {
        self.pending += 1;
        if self.pending >= 4096 || self.last_commit.elapsed() > Duration::from_secs(1) {
            self.commit()?;
        }
        Ok(())
    }

    /// Makes everything recorded so far durable (kill -9 after this loses none of it).
    pub fn commit(&mut self) -> Result<()> {
        // The files and bytes read go into the run's record with the verdicts they belong to,
        // so that a run resumed after `kill -9` counts every segment.
        let (files, bytes) = std::mem::take(&mut self.read);
        let conn = &self.cat.conn;
        conn.execute(
            "UPDATE runs SET files_read = files_read + ?2, bytes_read = bytes_read + ?3 WHERE id = ?1",
            params![self.run, files as i64, bytes as i64],
        )
        .and_then(|_| conn.execute_batch("COMMIT; BEGIN"))
        .map_err(|e| self.err(e))?;
        self.pending = 0;
        self.last_commit = Instant::now();
        Ok(())
    }

    pub(super) fn root_index(&self, rid: i64) -> Result<usize> {
        root_index(&self.roots, rid, &self.cat.path)
    }

    /// The directory id (created where missing) and name of a path below root `rid`.
    pub(super) fn place<'p>(&mut self, rid: i64, rel: &'p [u8]) -> Result<(i64, &'p [u8])> {
        let (d, name) = crate::dirs::split(rel);
        let dir = self
            .dirs
            .id(&self.cat.conn, rid, d)
            .map_err(|e| self.cat.err(e))?;
        Ok((dir, name))
    }

    pub(super) fn joined(&self, rid: i64, rel: &[u8]) -> Result<Vec<u8>> {
        use std::os::unix::ffi::OsStrExt;
        let mut p = self.roots[self.root_index(rid)?]
            .1
            .as_os_str()
            .as_bytes()
            .to_vec();
        p.push(b'/');
        p.extend_from_slice(rel);
        Ok(p)
    }

    pub(super) fn concat(&self, digests: &[(Algorithm, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for a in &self.algorithms {
            if let Some((_, d)) = digests.iter().find(|(b, _)| b == a) {
                out.extend_from_slice(d);
            }
        }
        out
    }

    /// Seals the run: counts, status, hash chain; clears the walk. `status` is `complete` or
    /// `partial` (a budget stopped it).
    pub fn seal(mut self, status: &str) -> Result<RunSummary> {
        self.commit()?;
        let run = self.run;
        let conn = &self.cat.conn;
        let r = (|| -> rusqlite::Result<()> {
            update_counts(conn, run, self.mode, self.metadata_ok)?;
            chain::seal(conn, run, status)?;
            conn.execute_batch("COMMIT; DETACH DATABASE scratch")?;
            let _ = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)");
            Ok(())
        })();
        self.closed = true;
        r.map_err(|e| self.err(e))?;
        crate::summary::run_summary(conn, run).map_err(|e| self.err(e))
    }

    /// Stops here (Ctrl-C or an error): keeps what was recorded, marks the run interrupted; the
    /// next audit of the same roots resumes it.
    pub fn interrupt(mut self) -> Result<()> {
        self.closed = true;
        self.interrupt_inner()
    }

    pub(super) fn interrupt_inner(&mut self) -> Result<()> {
        self.commit()?;
        let conn = &self.cat.conn;
        conn.execute_batch("COMMIT")
            .and_then(|_| {
                conn.execute(
                    "UPDATE runs SET status = 'interrupted' WHERE id = ?1",
                    params![self.run],
                )
            })
            .and_then(|_| conn.execute_batch("DETACH DATABASE scratch"))
            .map_err(|e| self.err(e))
    }
}

impl Drop for Audit<'_> {
    /// Dropped without seal or interrupt (an error on the way): keep what is committed.
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.interrupt_inner();
        }
    }
}

/// Fills in a run's counts from what its events and files say.
pub(crate) fn update_counts(
    conn: &rusqlite::Connection,
    run: i64,
    mode: AuditMode,
    metadata_ok: u64,
) -> rusqlite::Result<()> {
    let count = |sql: &str| -> rusqlite::Result<i64> { conn.query_row(sql, [run], |r| r.get(0)) };
    let n_ok = match mode {
        AuditMode::Full => {
            count("SELECT count(*) FROM files WHERE last_run = ?1 AND last_verdict = 'ok'")?
        }
        AuditMode::Metadata => metadata_ok as i64,
        // Nothing is registered by a no-download audit: each ok is an event of its own,
        // saying which of the store's checksums agreed.
        AuditMode::Stored => count("SELECT count(*) FROM events WHERE run = ?1 AND state = 'ok'")?,
    };
    let deferred = match mode {
        AuditMode::Full => count(
            "SELECT count(*) FROM walk w WHERE w.kind = 'file'
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.run = ?1 AND e.dir = w.dir AND e.name = w.name)
             AND NOT EXISTS (SELECT 1 FROM files f WHERE f.dir = w.dir AND f.name = w.name AND f.last_run = ?1)",
        )?,
        AuditMode::Metadata | AuditMode::Stored => 0,
    };
    conn.execute(
        "UPDATE runs SET n_ok = ?2, n_deferred = ?3,
             finished = ?4,
             n_corrupt = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'corrupt'),
             n_modified = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'modified'),
             n_missing = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'missing'),
             n_new = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'new'),
             n_moved = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'moved'),
             n_unreadable = (SELECT count(*) FROM events WHERE run = ?1 AND state = 'unreadable')
         WHERE id = ?1",
        params![run, n_ok, deferred, now_secs()],
    )?;
    Ok(())
}

/// Which of the audit's roots the catalog's root id `rid` is: a row naming a root this audit
/// does not hold is an inconsistent catalog, said so (never taken for the first root).
pub(super) fn root_index(
    roots: &[(i64, std::path::PathBuf)],
    rid: i64,
    catalog: &std::path::Path,
) -> Result<usize> {
    roots
        .iter()
        .position(|(i, _)| *i == rid)
        .ok_or_else(|| crate::CatalogError::UnknownRoot {
            path: catalog.to_path_buf(),
            root: rid,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A file as an audit finds it: its path below the root, its size and mtime, and the byte
    /// its SHA-256 digest is made of (the same byte, the same content).
    pub(super) type Found<'a> = (&'a str, u64, i64, u8);

    /// The root every [`Harness`] audit walks.
    pub(super) const ROOT: &str = "/collection";

    /// A run's events: each path below the root, its verdict and what the event says.
    pub(super) type Events = BTreeMap<String, (Verdict, Option<String>)>;

    /// Audits recorded in process, of files made up rather than read: a catalog in a
    /// temporary directory, and each run handed what a walk and its reads would find.
    pub(super) struct Harness {
        pub(super) cat: Catalog,
        _dir: tempfile::TempDir,
    }

    impl Harness {
        pub(super) fn new() -> Harness {
            let dir = tempfile::tempdir().unwrap();
            let cat = Catalog::open(&dir.path().join("cat.db"), crate::OpenMode::Write).unwrap();
            Harness { cat, _dir: dir }
        }

        /// A full audit: `found` walked, then read (each file's device 1, its inode its
        /// place in `found`), settled and sealed.
        pub(super) fn full(&mut self, found: &[Found<'_>]) -> Events {
            self.run(AuditMode::Full, found, |_| {})
        }

        /// An audit in `mode` of `found`, `setup` applied to it before the walk.
        pub(super) fn run(
            &mut self,
            mode: AuditMode,
            found: &[Found<'_>],
            setup: impl FnOnce(&mut Audit<'_>),
        ) -> Events {
            let root = PathBuf::from(ROOT);
            let mut a = self
                .cat
                .begin_audit(&[root], mode, &[Algorithm::Sha256], "", None)
                .unwrap();
            setup(&mut a);
            for (i, &(p, size, mtime, _)) in found.iter().enumerate() {
                a.walk_file(0, p.as_bytes(), size, mtime, 1, i as u64 + 1)
                    .unwrap();
            }
            if mode == AuditMode::Full {
                for (i, &(p, size, mtime, content)) in found.iter().enumerate() {
                    let digests = [(Algorithm::Sha256, vec![content; 32])];
                    let meta = (size, mtime, 1, i as u64 + 1, None);
                    a.record_read(0, p.as_bytes(), meta, &digests, None)
                        .unwrap();
                }
            }
            a.settle(true).unwrap();
            let run = a.run;
            a.seal("complete").unwrap();
            let mut out = Events::new();
            self.cat
                .for_each_event(run, &mut |e| {
                    let rel = e.path.strip_prefix(ROOT).unwrap().display().to_string();
                    out.insert(rel, (e.verdict, e.detail));
                })
                .unwrap();
            out
        }

        /// The registered row of `rel`: its size, mtime, digests, state and version.
        pub(super) fn row(&self, rel: &str) -> (i64, i64, Vec<u8>, String, i64) {
            self.cat
                .conn
                .query_row(
                    "SELECT size, mtime_ns, digests, state, version FROM file_paths
                     WHERE path = CAST(?1 AS BLOB)",
                    [rel],
                    |r| r.try_into(),
                )
                .unwrap()
        }
    }

    /// Each run's events as a test writes them.
    pub(super) fn events(list: &[(&str, Verdict, Option<&str>)]) -> Events {
        list.iter()
            .map(|(p, v, d)| (p.to_string(), (*v, d.map(String::from))))
            .collect()
    }

    #[test]
    fn a_row_naming_an_unknown_root_is_an_error_not_the_first_root() {
        let roots = vec![(3, "/a".into()), (7, "/b".into())];
        let cat = std::path::Path::new("cat.db");
        assert_eq!(root_index(&roots, 7, cat).unwrap(), 1);
        let e = root_index(&roots, 5, cat).unwrap_err();
        assert!(
            matches!(&e, CatalogError::UnknownRoot { path, root: 5 } if path == cat),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            "cat.db: a row names root 5, which is not one of this audit's roots"
        );
    }
}
