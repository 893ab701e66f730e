//! An audit from start to end, as one call: the walk into the catalog, the reads in the plan's
//! order through the scan engine within a budget, a verdict recorded per file as it comes,
//! missing and moved files settled, the run sealed. What a caller sees on the way comes as
//! [`Notice`]s; what it gets at the end is an [`AuditOutcome`].
//!
//! Three stop tokens nest: the caller's (a signal), the engine's (also stopped by a catalog
//! error, so that the caller's run does not look interrupted) and the feed's (also stopped when
//! the budget is spent: no file is started after it, and the reads under way finish).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::bounded;
use trawl_digest::Algorithm;
use trawl_report::exclude::{ExcludedJson, ExcludedTally};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::{Reason, Stop};
use trawl_walk::{ExcludedKind, FileEntry, SkipKind, WalkItem};

use crate::audit::PlanFilter;
use crate::source::{Local, ReadPlan, ReadResult, Source, SourceError};
use crate::summary::RunSummary;
use crate::verdict::{AuditMode, Verdict};
use crate::{Catalog, CatalogError};

/// What an audit does, apart from where its catalog is.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The engine settings; `scan.roots` are the audited directories, absolute and canonical.
    pub scan: ScanConfig,
    /// The digests a new catalog records (None: sha256). An existing catalog keeps its own:
    /// a list here that holds them and more adds the others (each file gets them when next
    /// read); a list that leaves one out is an error.
    pub algorithms: Option<Vec<Algorithm>>,
    /// Full or metadata-only.
    pub mode: AuditMode,
    /// Read only registered, unchanged files not verified within this age.
    pub older_than: Option<Duration>,
    /// Start no file after this many bytes were started.
    pub max_bytes: Option<u64>,
    /// Start no file after this long.
    pub max_time: Option<Duration>,
    /// Drop files found missing from the collection after reporting them.
    pub forget_missing: bool,
    /// The command line, recorded with the run.
    pub invocation: String,
    /// Where the run's scratch database goes (None: the system's temporary directory).
    pub temp_dir: Option<PathBuf>,
    /// Files (device, inode) that are not part of the collection: the caller's own outputs,
    /// which may sit inside it (the catalog's own files are always left out).
    pub exclude: Vec<(u64, u64)>,
}

/// What happens on the way, for the caller to show.
#[derive(Debug)]
pub enum Notice<'a> {
    /// The last run of these roots was interrupted; this one resumes it.
    Resumed {
        /// The run resumed.
        run: i64,
    },
    /// The walk met something that is not a regular file (symbolic links are not reported).
    Skipped {
        /// The entry.
        path: &'a Path,
        /// What it is.
        kind: SkipKind,
    },
    /// A directory could not be listed, or a file could not be read (the error names it).
    Failed(&'a (dyn std::error::Error + 'a)),
    /// Same size and mtime as registered, different content; or content that is not what
    /// its source expects.
    Corrupt {
        /// The file.
        path: &'a Path,
        /// How it differs.
        detail: &'a str,
    },
    /// A root given lies inside a registered root: that root is audited instead (its files
    /// are never registered a second time under another root).
    WithinRegistered {
        /// The root given.
        root: &'a Path,
        /// The registered root audited instead.
        registered: &'a Path,
    },
    /// A root given contains a registered root: that root is audited as itself, and the walk
    /// of the given one leaves it out.
    ContainsRegistered {
        /// The root given.
        root: &'a Path,
        /// The registered root inside it.
        registered: &'a Path,
    },
}

/// The roots to audit: a root inside a registered one is replaced by it; a registered root
/// inside a given one is audited as itself and left out of the given one's walk.
fn place_roots(
    given: &[PathBuf],
    registered: &[PathBuf],
    notice: &mut dyn FnMut(Notice<'_>),
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut exclude: Vec<PathBuf> = Vec::new();
    let add = |r: PathBuf, roots: &mut Vec<PathBuf>| {
        if !roots.contains(&r) {
            roots.push(r);
        }
    };
    for g in given {
        match registered.iter().find(|p| g != *p && g.starts_with(p)) {
            Some(p) => {
                notice(Notice::WithinRegistered {
                    root: g,
                    registered: p,
                });
                add(p.clone(), &mut roots);
            }
            None => add(g.clone(), &mut roots),
        }
    }
    for p in registered {
        if let Some(g) = roots.iter().find(|g| p != *g && p.starts_with(g)).cloned() {
            notice(Notice::ContainsRegistered {
                root: &g,
                registered: p,
            });
            exclude.push(p.clone());
            add(p.clone(), &mut roots);
        }
    }
    (roots, exclude)
}

/// An audit that ran to its end (complete, or partial when a budget stopped it).
#[derive(Debug, Clone)]
pub struct AuditReport {
    /// The run's figures.
    pub summary: RunSummary,
    /// The catalog's algorithms.
    pub algorithms: Vec<Algorithm>,
    /// The roots held no registered file before: this run registered the collection.
    pub registration: bool,
    /// The budget (`max_bytes`/`max_time`) stopped the reads before the plan's end.
    pub budget_spent: bool,
    /// A directory could not be listed or a file could not be read.
    pub trouble: bool,
    /// How long it took.
    pub seconds: f64,
    /// The roots audited: the ones given, with registered roots taking the place of those
    /// inside them (see [`Notice::WithinRegistered`]).
    pub roots: Vec<PathBuf>,
    /// What the user's rules left out, with the registered files left as they were; None
    /// when no rule was given.
    pub excluded: Option<ExcludedJson>,
}

/// How a run ended.
#[derive(Debug)]
pub enum AuditOutcome {
    /// The audit ran to its end (complete, or partial by its budget).
    Finished(Box<AuditReport>),
    /// Stopped by the caller's token; what was recorded is kept and the next audit resumes.
    Stopped(Reason),
}

/// Why an audit could not run or go on.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The catalog failed before the reads.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(
        "{}: this catalog records {recorded}; --digest {asked} leaves out {left_out}: a catalog keeps every algorithm it records (its registered digests are the reference), and adds those named besides them (--digest {recorded},ALG)",
        path.display()
    )]
    /// The algorithms asked for leave out one of the catalog's.
    Algorithms {
        /// The path concerned.
        path: PathBuf,
        /// The catalog's.
        recorded: String,
        /// Those asked for.
        asked: String,
        /// The catalog's that they leave out.
        left_out: String,
    },
    /// The catalog failed while the reads were under way.
    #[error(
        "{source}: the audit stopped; the catalog keeps everything recorded before this, and the next audit resumes"
    )]
    Stopped {
        /// The catalog's error.
        source: CatalogError,
    },
    /// The walk or the reads failed where they ran (e.g. a cluster's task).
    #[error(
        "{0}: the audit stopped; the catalog keeps everything recorded before this, and the next audit resumes"
    )]
    Source(String),
}

fn names(a: &[Algorithm]) -> String {
    a.iter().map(|a| a.name()).collect::<Vec<_>>().join(",")
}

fn rel<'a>(path: &'a Path, root: &Path) -> &'a [u8] {
    path.strip_prefix(root)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
}

fn root_of(roots: &[PathBuf], p: &Path) -> Option<usize> {
    roots.iter().position(|r| p.starts_with(r))
}

/// Runs one audit of `opts.scan.roots` into `cat`, walking and reading on this machine.
pub fn audit(
    cat: &mut Catalog,
    opts: &AuditOptions,
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<AuditOutcome, AuditError> {
    audit_with(cat, opts, &mut Local, progress, stop, notice)
}

/// Runs one audit of `opts.scan.roots` into `cat`, its walk and reads done by `source`: the
/// walk into the catalog's walk table, the reads in the plan's order within the budget, then
/// missing and moved settled and the run sealed.
pub fn audit_with(
    cat: &mut Catalog,
    opts: &AuditOptions,
    source: &mut dyn Source,
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<AuditOutcome, AuditError> {
    let algorithms = choose_algorithms(cat, opts)?;
    // The catalog's files are left out by identity and by name: a walk done on another host
    // may see other device numbers for the same files.
    let mut own = cat.own_files();
    let own_paths = cat.own_paths();
    own.extend(opts.exclude.iter().copied());
    let registered: Vec<PathBuf> = cat.roots()?.into_iter().map(|(_, p)| p).collect();
    let (roots, exclude) = place_roots(&opts.scan.roots, &registered, notice);
    let mut scan = opts.scan.clone();
    scan.roots = roots.clone();
    scan.walk.exclude.extend(exclude);
    let opts = &AuditOptions {
        scan,
        ..opts.clone()
    };
    let start = Instant::now();
    let registration = cat.files_under(&roots)? == 0;
    let mut audit = cat.begin_audit(
        &roots,
        opts.mode,
        &algorithms,
        &opts.invocation,
        opts.temp_dir.as_deref(),
    )?;
    audit.forget_missing(opts.forget_missing);
    audit.fixed_content(source.fixed());
    audit.excluding(opts.scan.walk.excluding.clone());
    if audit.resumed {
        notice(Notice::Resumed { run: audit.run });
    }
    let mut trouble = false;
    let mut excluded = ExcludedTally::default();

    // 1. The walk, into the catalog's walk table.
    let mine = |f: &FileEntry| {
        own.contains(&(f.dev, f.ino))
            || own_paths
                .iter()
                .any(|p| p.as_os_str() == f.path.as_os_str())
    };
    let walked = walk(
        &mut audit,
        source,
        &roots,
        &opts.scan,
        &mine,
        stop,
        notice,
        (&mut trouble, &mut excluded),
    );
    if let Err(e) = walked {
        return Err(e.after(audit));
    }
    if let Some(r) = stop.reason() {
        audit.interrupt()?;
        return Ok(AuditOutcome::Stopped(r));
    }

    // 2. The reads, in the plan's order, within the budget.
    let mut budget_spent = false;
    if opts.mode == AuditMode::Full {
        let reads = Reads {
            opts,
            algorithms: &algorithms,
            roots: &roots,
            start,
        };
        match reads.run(&mut audit, source, progress, stop, notice, &mut trouble) {
            Ok(spent) => budget_spent = spent,
            Err(e) => return Err(e.after(audit)),
        }
        if let Some(r) = stop.reason() {
            audit.interrupt()?;
            return Ok(AuditOutcome::Stopped(r));
        }
    }

    // 3. Missing and moved, then the seal.
    audit.settle(!budget_spent)?;
    let registered_excluded = audit.left_out();
    let status = if budget_spent { "partial" } else { "complete" };
    let summary = audit.seal(status)?;
    let rules = &opts.scan.walk.excluding;
    let excluded = (!rules.is_empty()).then(|| ExcludedJson {
        registered: Some(registered_excluded),
        ..excluded.finish(rules.patterns(), &rules.if_present_bytes())
    });
    Ok(AuditOutcome::Finished(Box::new(AuditReport {
        summary,
        algorithms,
        registration,
        budget_spent,
        trouble,
        seconds: start.elapsed().as_secs_f64(),
        roots,
        excluded,
    })))
}

/// The algorithms of this run: the catalog's, or those asked for a new catalog (SHA-256 by
/// default). Asked for an existing catalog, the list must hold the catalog's; the others are
/// added after them (the catalog's primary stays first, and a row registered before keeps the
/// digests it has, a prefix of what a read computes now).
fn choose_algorithms(cat: &Catalog, opts: &AuditOptions) -> Result<Vec<Algorithm>, AuditError> {
    let existing = cat.algorithms()?;
    Ok(match (&opts.algorithms, existing.is_empty()) {
        (Some(a), true) => a.clone(),
        (None, true) => vec![Algorithm::Sha256],
        (Some(a), false) => {
            let left_out: Vec<Algorithm> = existing
                .iter()
                .filter(|e| !a.contains(e))
                .copied()
                .collect();
            if !left_out.is_empty() {
                return Err(AuditError::Algorithms {
                    path: cat.path().to_path_buf(),
                    recorded: names(&existing),
                    asked: names(a),
                    left_out: names(&left_out),
                });
            }
            let mut all = existing;
            for x in a {
                if !all.contains(x) {
                    all.push(*x);
                }
            }
            all
        }
        (None, false) => existing,
    })
}

/// The walk, into the catalog's walk table; files `mine` says are the catalog's own are left
/// out. A listing that failed is recorded and makes `trouble`; what the user's rules left out
/// is recorded (so that none of it is called missing) and counted in `excluded`.
#[allow(clippy::too_many_arguments)]
fn walk(
    audit: &mut crate::audit::Audit<'_>,
    source: &mut dyn Source,
    roots: &[PathBuf],
    scan: &ScanConfig,
    mine: &dyn Fn(&FileEntry) -> bool,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
    (trouble, excluded): (&mut bool, &mut ExcludedTally),
) -> Result<(), Step> {
    let walked = source.walk(roots, &scan.walk, stop, &mut |item| {
        match item {
            WalkItem::File(f) => {
                if mine(&f) {
                    return Ok(());
                }
                let r = rel(&f.path, &roots[f.root]);
                audit.walk_file(f.root, r, f.size, f.mtime_ns, f.dev, f.ino)?;
            }
            WalkItem::Skipped { path, kind } => {
                let Some(root) = root_of(roots, &path) else {
                    return Ok(());
                };
                if kind != SkipKind::Symlink {
                    notice(Notice::Skipped { path: &path, kind });
                }
                let k = if kind == SkipKind::Symlink {
                    "symlink"
                } else {
                    "special"
                };
                audit.walk_other(root, rel(&path, &roots[root]), k)?;
            }
            WalkItem::Error(e) => {
                *trouble = true;
                notice(Notice::Failed(&e));
                if let Some(p) = e.path()
                    && let Some(root) = root_of(roots, p)
                {
                    let r = rel(p, &roots[root]);
                    audit.walk_other(root, r, "dirfail")?;
                    audit.record_unreadable(root, r, &e.to_string())?;
                }
            }
            WalkItem::Excluded(x) => {
                let root = x.root;
                if root >= roots.len() {
                    return Ok(());
                }
                let directory = x.kind == ExcludedKind::Directory;
                audit.walk_excluded(root, rel(&x.path, &roots[root]), directory)?;
                excluded.add(
                    &x.path,
                    x.kind.name(),
                    x.size,
                    x.why.pattern(),
                    x.why.holds(),
                );
            }
        }
        Ok(())
    });
    match walked {
        Ok(()) => {}
        Err(SourceError::Catalog(e)) => return Err(Step::Fail(e.into())),
        Err(SourceError::Failed(why)) => return Err(Step::Interrupt(AuditError::Source(why))),
    }
    Ok(())
}

/// Why a step of an audit ended it: the run marked interrupted first, or not.
enum Step {
    Interrupt(AuditError),
    Fail(AuditError),
}

impl From<CatalogError> for Step {
    fn from(e: CatalogError) -> Step {
        Step::Fail(e.into())
    }
}

impl Step {
    /// The error, once the run is marked interrupted where it is to be.
    fn after(self, audit: crate::audit::Audit<'_>) -> AuditError {
        match self {
            Step::Interrupt(e) => {
                let _ = audit.interrupt();
                e
            }
            Step::Fail(e) => e,
        }
    }
}

/// The reads of an audit: what they are of.
struct Reads<'a> {
    opts: &'a AuditOptions,
    algorithms: &'a [Algorithm],
    roots: &'a [PathBuf],
    start: Instant,
}

impl Reads<'_> {
    /// Reads the plan's files, in its order, within the budget (`--max-bytes`, `--max-time`),
    /// recording each; whether the budget ended them.
    ///
    /// Long on purpose: the planner's feeder thread and the reads share one scope, one bounded
    /// channel and two stop tokens, whose order of release is the point (see the comments).
    fn run(
        &self,
        audit: &mut crate::audit::Audit<'_>,
        source: &mut dyn Source,
        progress: &dyn Progress,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
        trouble: &mut bool,
    ) -> Result<bool, Step> {
        let (opts, algorithms, roots, start) = (self.opts, self.algorithms, self.roots, self.start);
        let filter = PlanFilter {
            verified_before: opts
                .older_than
                // An age past any time there is: nothing registered is older.
                .map(|d| {
                    crate::now_secs().saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
                }),
        };
        let (n, bytes, _deferred) = audit.plan_totals(filter)?;
        let bytes = opts.max_bytes.map_or(bytes, |m| bytes.min(m));
        progress.found(n, bytes);
        progress.walk_done();
        let planner = audit.planner(filter)?;
        let engine = stop.child();
        let feed = engine.child();
        let (ftx, frx) = bounded::<FileEntry>(1024);
        let mut db_error: Option<CatalogError> = None;
        let mut source_error: Option<String> = None;
        std::thread::scope(|s| {
            let feed = &feed;
            let (max_bytes, max_time) = (opts.max_bytes, opts.max_time);
            let feeder = s.spawn(move || {
                let mut sent = 0u64;
                let r = planner.run(&mut |p| {
                    if feed.is_stopping() {
                        return false;
                    }
                    if max_bytes.is_some_and(|m| sent >= m)
                        || max_time.is_some_and(|t| start.elapsed() >= t)
                    {
                        feed.request(Reason::Budget);
                        return false;
                    }
                    sent += p.size;
                    let entry = FileEntry {
                        dir: None,
                        path: p.path,
                        root: p.root,
                        size: p.size,
                        dev: p.dev,
                        ino: p.ino,
                        mtime_ns: 0,
                        open: None,
                    };
                    ftx.send(entry).is_ok()
                });
                drop(ftx);
                r
            });
            let plan = ReadPlan {
                cfg: &opts.scan,
                algorithms,
                feed: frx,
                roots,
                files: n,
                bytes,
            };
            let read = source.read(plan, progress, &engine, &mut |found| {
                if db_error.is_some() {
                    return;
                }
                let r = match found {
                    ReadResult::Read {
                        root,
                        path,
                        size,
                        mtime_ns,
                        dev,
                        ino,
                        digests,
                        expected,
                    } => audit
                        .record_read(
                            root,
                            rel(path, &roots[root]),
                            (size, mtime_ns, dev, ino),
                            digests,
                            expected,
                        )
                        .map(|(v, detail)| {
                            if v == Verdict::Corrupt {
                                notice(Notice::Corrupt {
                                    path,
                                    detail: detail.as_deref().unwrap_or_default(),
                                });
                            }
                        }),
                    ReadResult::Gone { path } => match root_of(roots, path) {
                        Some(i) => audit.record_gone(i, rel(path, &roots[i])),
                        None => Ok(()),
                    },
                    ReadResult::Failed { path, error } => {
                        *trouble = true;
                        notice(Notice::Failed(error));
                        match path.and_then(|p| root_of(roots, p).map(|i| (p, i))) {
                            Some((p, i)) => {
                                audit.record_unreadable(i, rel(p, &roots[i]), &error.to_string())
                            }
                            None => Ok(()),
                        }
                    }
                };
                if let Err(e) = r {
                    db_error = Some(e);
                    engine.request(Reason::Failed);
                }
            });
            match read {
                Ok(()) => {}
                Err(SourceError::Catalog(e)) => db_error = db_error.take().or(Some(e)),
                Err(SourceError::Failed(why)) => source_error = Some(why),
            }
            // The reads have stopped: release a feeder blocked on a full channel.
            feed.request(Reason::Failed);
            match feeder.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) if db_error.is_none() => db_error = Some(e),
                Ok(Err(_)) => {}
                Err(p) => std::panic::resume_unwind(p),
            }
        });
        let budget_spent = feed.own_reason() == Some(Reason::Budget);
        if let Some(e) = db_error {
            return Err(Step::Interrupt(AuditError::Stopped { source: e }));
        }
        if let Some(why) = source_error {
            return Err(Step::Interrupt(AuditError::Source(why)));
        }
        Ok(budget_spent)
    }
}
