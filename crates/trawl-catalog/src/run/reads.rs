//! An audit's reads: the plan fed to the source by a feeder thread within the budget, and a
//! verdict recorded for each file as its read comes back.
//!
//! Two stop tokens nest under the caller's: the engine's (also stopped by a catalog error, so
//! that the caller's run does not look interrupted) and the feed's (also stopped when the
//! budget is spent: no file is started after it, and the reads under way finish).

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, bounded};
use trawl_digest::Algorithm;
use trawl_scan::Progress;
use trawl_stop::{Reason, Stop};
use trawl_walk::FileEntry;

use super::{AuditError, AuditOptions, Notice, Step, rel, root_of};
use crate::CatalogError;
use crate::audit::{Audit, PlanFilter, Planner};
use crate::source::{ReadPlan, ReadResult, Source, SourceError};
use crate::verdict::Verdict;

/// The reads of an audit: what they are of.
pub(super) struct Reads<'a> {
    opts: &'a AuditOptions,
    algorithms: &'a [Algorithm],
    roots: &'a [PathBuf],
    start: Instant,
}

/// The budget the feeder keeps: no file is started after this many bytes, or this long after
/// the audit's start.
#[derive(Clone, Copy)]
pub(super) struct Budget {
    max_bytes: Option<u64>,
    max_time: Option<Duration>,
    start: Instant,
}

impl Budget {
    /// No budget: the whole plan.
    pub(super) fn unlimited() -> Budget {
        Budget {
            max_bytes: None,
            max_time: None,
            start: Instant::now(),
        }
    }

    /// Whether it is spent, `sent` bytes having been started.
    fn spent(&self, sent: u64) -> bool {
        self.max_bytes.is_some_and(|m| sent >= m)
            || self.max_time.is_some_and(|t| self.start.elapsed() >= t)
    }
}

/// Streams the plan into the reads' channel until it ends, `feed` is stopped, the reads hang
/// up, or the budget is spent (`feed` then stopped for the budget).
pub(super) fn feed(
    planner: Planner,
    budget: Budget,
    feed: &Stop,
    ftx: Sender<FileEntry>,
) -> Result<(), CatalogError> {
    let mut sent = 0u64;
    planner.run(&mut |p| {
        if feed.is_stopping() {
            return ControlFlow::Break(());
        }
        if budget.spent(sent) {
            feed.request(Reason::Budget);
            return ControlFlow::Break(());
        }
        sent += p.size;
        let entry = FileEntry {
            dir: None,
            path: p.path,
            root: p.root,
            size: p.size,
            dev: p.dev,
            ino: p.ino,
            mtime_ns: p.mtime_ns,
            open: None,
        };
        match ftx.send(entry) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    })
}

/// How the reads ended: the first catalog error, and the source's own failure.
#[derive(Default)]
pub(super) struct Ends {
    pub(super) db: Option<CatalogError>,
    source: Option<String>,
}

impl Ends {
    /// What the source's reads returned.
    pub(super) fn read(&mut self, read: Result<(), SourceError>) {
        match read {
            Ok(()) => {}
            Err(SourceError::Catalog(e)) => self.db = self.db.take().or(Some(e)),
            Err(SourceError::Failed(why)) => self.source = Some(why),
        }
    }

    /// What the feeder thread returned (its panic goes on).
    pub(super) fn feeder(&mut self, joined: std::thread::Result<Result<(), CatalogError>>) {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) if self.db.is_none() => self.db = Some(e),
            Ok(Err(_)) => {}
            Err(p) => std::panic::resume_unwind(p),
        }
    }

    /// The error that ends the audit, the run marked interrupted: a catalog error first.
    pub(super) fn step(self) -> Result<(), Step> {
        if let Some(e) = self.db {
            return Err(Step::Interrupt(AuditError::Stopped { source: e }));
        }
        if let Some(why) = self.source {
            return Err(Step::Interrupt(AuditError::Source(why)));
        }
        Ok(())
    }
}

impl<'a> Reads<'a> {
    /// The reads of an audit as `opts` says, of `roots` with `algorithms`, its budget's time
    /// counted from `start`.
    pub(super) fn new(
        opts: &'a AuditOptions,
        algorithms: &'a [Algorithm],
        roots: &'a [PathBuf],
        start: Instant,
    ) -> Self {
        Reads {
            opts,
            algorithms,
            roots,
            start,
        }
    }

    /// Full or metadata-only or stored.
    pub(super) fn mode(&self) -> crate::AuditMode {
        self.opts.mode
    }

    /// The roots read.
    pub(super) fn roots(&self) -> &'a [PathBuf] {
        self.roots
    }

    /// Reads the plan's files, in its order, within the budget (`--max-bytes`, `--max-time`),
    /// recording each; whether the budget ended them.
    ///
    /// The planner's feeder thread and the reads share one scope, one bounded channel and two
    /// stop tokens, whose order of release is the point (see the comments).
    pub(super) fn run(
        &self,
        audit: &mut Audit<'_>,
        source: &mut dyn Source,
        progress: &dyn Progress,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
        trouble: &mut bool,
    ) -> Result<bool, Step> {
        let filter = self.filter();
        let (n, bytes, _deferred) = audit.plan_totals(filter)?;
        let bytes = self.opts.max_bytes.map_or(bytes, |m| bytes.min(m));
        progress.found(n, bytes);
        progress.walk_done();
        let planner = audit.planner(filter)?;
        let engine = stop.child();
        let feed_stop = engine.child();
        let (ftx, frx) = bounded::<FileEntry>(1024);
        let mut ends = Ends::default();
        std::thread::scope(|s| {
            let budget = self.budget();
            let feed_stop = &feed_stop;
            let feeder = s.spawn(move || feed(planner, budget, feed_stop, ftx));
            let plan = ReadPlan {
                cfg: &self.opts.scan,
                algorithms: self.algorithms,
                feed: frx,
                roots: self.roots,
                files: n,
                bytes,
            };
            let read = source.read(plan, progress, &engine, &mut |found| {
                if ends.db.is_some() {
                    return;
                }
                if let Err(e) = self.record(audit, found, notice, trouble) {
                    ends.db = Some(e);
                    engine.request(Reason::Failed);
                }
            });
            ends.read(read);
            // The reads have stopped: release a feeder blocked on a full channel.
            feed_stop.request(Reason::Failed);
            ends.feeder(feeder.join());
        });
        ends.step()?;
        Ok(feed_stop.own_reason() == Some(Reason::Budget))
    }

    /// Which registered, unchanged files to read: those not verified within `--older-than`.
    fn filter(&self) -> PlanFilter {
        PlanFilter {
            verified_before: self
                .opts
                .older_than
                // An age past any time there is: nothing registered is older.
                .map(|d| {
                    crate::now_secs().saturating_sub(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
                }),
            stored: false,
        }
    }

    fn budget(&self) -> Budget {
        Budget {
            max_bytes: self.opts.max_bytes,
            max_time: self.opts.max_time,
            start: self.start,
        }
    }

    /// Records what one read found: its verdict (a corrupt file named), a file gone since the
    /// walk, or a read that failed (named, and making `trouble`).
    fn record(
        &self,
        audit: &mut Audit<'_>,
        found: ReadResult<'_>,
        notice: &mut dyn FnMut(Notice<'_>),
        trouble: &mut bool,
    ) -> Result<(), CatalogError> {
        let roots = self.roots;
        match found {
            ReadResult::Read {
                root,
                path,
                size,
                mtime_ns,
                dev,
                ino,
                ctime_ns,
                digests,
                expected,
            } => {
                let meta = (size, mtime_ns, dev, ino, ctime_ns);
                let r = rel(path, &roots[root]);
                let (v, detail) = audit.record_read(root, r, meta, digests, expected)?;
                if v == Verdict::Corrupt {
                    notice(Notice::Corrupt {
                        path,
                        detail: detail.as_deref().unwrap_or_default(),
                    });
                }
                Ok(())
            }
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget is spent once as many bytes as it allows were started, or once its time
    /// has passed since the start; without either it never is.
    #[test]
    fn a_budget_is_spent_by_bytes_started_or_by_time() {
        let start = Instant::now();
        let none = Budget {
            max_bytes: None,
            max_time: None,
            start,
        };
        assert!(!none.spent(u64::MAX));
        let bytes = Budget {
            max_bytes: Some(100),
            ..none
        };
        assert!(!bytes.spent(99));
        assert!(bytes.spent(100));
        let time = Budget {
            max_time: Some(Duration::ZERO),
            ..none
        };
        assert!(time.spent(0));
        let later = Budget {
            max_time: Some(Duration::from_secs(3600)),
            ..none
        };
        assert!(!later.spent(0));
    }
}
