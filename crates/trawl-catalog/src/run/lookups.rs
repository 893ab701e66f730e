//! A no-download audit's lookups: the registered files found as registered, fed to the source
//! by a feeder thread, the source saying what its store holds of each (its own checksums),
//! and a verdict recorded for each as its answer comes back.
//!
//! The stop tokens nest as the reads' do: the engine's (also stopped by a catalog error) and
//! the feed's under it (also stopped when the lookups end, to release a blocked feeder).

use std::path::PathBuf;

use crossbeam_channel::bounded;
use trawl_scan::Progress;
use trawl_stop::{Reason, Stop};
use trawl_walk::FileEntry;

use super::reads::{Budget, Ends, feed};
use super::{Notice, Step, rel, root_of};
use crate::CatalogError;
use crate::audit::{Audit, Held, PlanFilter};
use crate::source::{Source, StoredPlan, StoredResult};
use crate::verdict::Verdict;

/// Looks up, through `source`, what the store holds of each registered file the walk found
/// as registered, recording each verdict; a lookup that failed makes `trouble`.
pub(super) fn run(
    audit: &mut Audit<'_>,
    source: &mut dyn Source,
    roots: &[PathBuf],
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
    trouble: &mut bool,
) -> Result<(), Step> {
    let filter = PlanFilter {
        stored: true,
        ..PlanFilter::default()
    };
    let (n, _, _) = audit.plan_totals(filter)?;
    progress.found(n, 0);
    progress.walk_done();
    let planner = audit.planner(filter)?;
    let engine = stop.child();
    let feed_stop = engine.child();
    let (ftx, frx) = bounded::<FileEntry>(1024);
    let mut ends = Ends::default();
    std::thread::scope(|s| {
        let feed_stop = &feed_stop;
        let feeder = s.spawn(move || feed(planner, Budget::unlimited(), feed_stop, ftx));
        let plan = StoredPlan {
            feed: frx,
            roots,
            files: n,
        };
        let looked = source.stored(plan, &engine, &mut |found| {
            progress.file_done();
            if ends.db.is_some() {
                return;
            }
            if let Err(e) = record(audit, roots, found, notice, trouble) {
                ends.db = Some(e);
                engine.request(Reason::Failed);
            }
        });
        ends.read(looked);
        // The lookups have stopped: release a feeder blocked on a full channel.
        feed_stop.request(Reason::Failed);
        ends.feeder(feeder.join());
    });
    ends.step()
}

/// Records what one lookup found: its verdict (a corrupt file named), a file gone since the
/// walk, or a lookup that failed (named, and making `trouble`).
fn record(
    audit: &mut Audit<'_>,
    roots: &[PathBuf],
    found: StoredResult<'_>,
    notice: &mut dyn FnMut(Notice<'_>),
    trouble: &mut bool,
) -> Result<(), CatalogError> {
    match found {
        StoredResult::Held {
            root,
            path,
            size,
            mtime_ns,
            checksums,
            withheld,
        } => {
            let held = Held {
                size,
                mtime_ns,
                checksums,
                withheld,
            };
            let judged = audit.record_stored(root, rel(path, &roots[root]), held)?;
            if let Some((Verdict::Corrupt, detail)) = judged {
                notice(Notice::Corrupt {
                    path,
                    detail: &detail,
                });
            }
            Ok(())
        }
        StoredResult::Gone { path } => match root_of(roots, path) {
            Some(i) => audit.record_gone(i, rel(path, &roots[i])),
            None => Ok(()),
        },
        StoredResult::Failed { path, error } => {
            *trouble = true;
            notice(Notice::Failed(error));
            match root_of(roots, path) {
                Some(i) => audit.record_unreadable(i, rel(path, &roots[i]), &error.to_string()),
                None => Ok(()),
            }
        }
    }
}
