//! An audit from start to end, as one call: the walk into the catalog, the reads in the plan's
//! order through the scan engine within a budget, a verdict recorded per file as it comes,
//! missing and moved files settled, the run sealed. What a caller sees on the way comes as
//! [`Notice`]s; what it gets at the end is an [`AuditOutcome`].
//!
//! The run's parts, one module each: [`walk`] (the walk into the catalog), [`reads`] (the
//! reads within the budget, under the caller's stop token: a signal) and [`lookups`] (a
//! no-download audit's: what the store holds of each file); here the run itself.

mod lookups;
mod reads;
mod walk;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trawl_digest::Algorithm;
use trawl_report::{ExcludedJson, ExcludedTally};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::{Reason, Stop};
use trawl_walk::SkipKind;

use crate::audit::Audit;
use crate::source::{Local, Source};
use crate::summary::RunSummary;
use crate::verdict::AuditMode;
use crate::{Catalog, CatalogError};
use reads::Reads;
use walk::{Own, Walk};

/// What an audit does, apart from where its catalog is.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The engine settings; `scan.roots` are the audited directories, absolute and canonical.
    pub scan: ScanConfig,
    /// The digests a new catalog records (None: sha256). An existing catalog keeps its own:
    /// a list here that holds them and more adds the others (each file gets them when next
    /// read); a list that leaves one out is an error.
    pub algorithms: Option<Vec<Algorithm>>,
    /// Full, metadata-only, or stored (the store's checksums; `source` must keep them).
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
    let own = Own::of(cat, &opts.exclude);
    let (roots, opts) = place(cat, opts, notice)?;
    let opts = &opts;
    let start = Instant::now();
    // A no-download audit registers nothing, whatever the catalog holds.
    let registration = opts.mode != AuditMode::Stored && cat.files_under(&roots)? == 0;
    let mut audit = begin(cat, opts, &roots, &algorithms, source.fixed())?;
    if audit.resumed {
        notice(Notice::Resumed { run: audit.run });
    }

    // 1. The walk, into the catalog's walk table.
    let walk = Walk::new(&mut audit, &roots, &own, &mut *notice);
    let (mut trouble, excluded) = match walk.run(source, &opts.scan, stop) {
        Ok(walked) => walked,
        Err(e) => return Err(e.after(audit)),
    };
    if let Some(r) = stop.reason() {
        audit.interrupt()?;
        return Ok(AuditOutcome::Stopped(r));
    }

    // 2. The reads (or a no-download audit's lookups), in the plan's order, within the budget.
    let reads = Reads::new(opts, &algorithms, &roots, start);
    let looked = reads.contents(&mut audit, source, progress, stop, notice, &mut trouble);
    let budget_spent = match looked {
        Ok(spent) => spent,
        Err(e) => return Err(e.after(audit)),
    };
    if let Some(r) = stop.reason() {
        audit.interrupt()?;
        return Ok(AuditOutcome::Stopped(r));
    }

    // 3. Missing and moved, then the seal.
    let (summary, excluded) = settle(audit, opts, excluded, budget_spent)?;
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

impl Reads<'_> {
    /// Step 2 of a run, the files' contents: read in the plan's order within the budget
    /// (whether the budget ended the reads), or what the store holds of each looked up,
    /// reading nothing.
    fn contents(
        self,
        audit: &mut Audit<'_>,
        source: &mut dyn Source,
        progress: &dyn Progress,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
        trouble: &mut bool,
    ) -> Result<bool, Step> {
        match self.mode() {
            AuditMode::Full => self.run(audit, source, progress, stop, notice, trouble),
            AuditMode::Stored => {
                let roots = self.roots();
                lookups::run(audit, source, roots, progress, stop, notice, trouble).map(|()| false)
            }
            AuditMode::Metadata => Ok(false),
        }
    }
}

/// The roots to audit (see [`place_roots`]), and the options with them placed: registered
/// roots inside them, audited as themselves, left out of their walks.
fn place(
    cat: &Catalog,
    opts: &AuditOptions,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<(Vec<PathBuf>, AuditOptions), CatalogError> {
    let registered: Vec<PathBuf> = cat.roots()?.into_iter().map(|(_, p)| p).collect();
    let (roots, exclude) = place_roots(&opts.scan.roots, &registered, notice);
    let mut scan = opts.scan.clone();
    scan.roots = roots.clone();
    scan.walk.exclude.extend(exclude);
    let opts = AuditOptions {
        scan,
        ..opts.clone()
    };
    Ok((roots, opts))
}

/// Starts (or resumes) the run of `roots` in `cat`, set up as `opts` says; `fixed`: the
/// source's content never changes.
fn begin<'c>(
    cat: &'c mut Catalog,
    opts: &AuditOptions,
    roots: &[PathBuf],
    algorithms: &[Algorithm],
    fixed: bool,
) -> Result<Audit<'c>, CatalogError> {
    let mut audit = cat.begin_audit(
        roots,
        opts.mode,
        algorithms,
        &opts.invocation,
        opts.temp_dir.as_deref(),
    )?;
    audit.forget_missing(opts.forget_missing);
    audit.fixed_content(fixed);
    audit.excluding(opts.scan.walk.excluding.clone());
    Ok(audit)
}

/// Settles missing and moved files (all of them unless the budget cut the reads short) and
/// seals the run: its figures, and what the user's rules left out (None: no rule was given).
fn settle(
    mut audit: Audit<'_>,
    opts: &AuditOptions,
    excluded: ExcludedTally,
    budget_spent: bool,
) -> Result<(RunSummary, Option<ExcludedJson>), CatalogError> {
    audit.settle(!budget_spent)?;
    let registered_excluded = audit.left_out();
    let status = if budget_spent { "partial" } else { "complete" };
    let summary = audit.seal(status)?;
    let rules = &opts.scan.walk.excluding;
    let excluded = (!rules.is_empty()).then(|| ExcludedJson {
        registered: Some(registered_excluded),
        ..excluded.finish(rules.patterns(), &rules.if_present_bytes())
    });
    Ok((summary, excluded))
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
