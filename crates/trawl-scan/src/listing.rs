//! Sources whose files are found by listing them (a store's objects under prefixes), not by a
//! walk of directories, and the scan of one: the listing on a thread of its own feeding the
//! source's reads through a bounded channel, what is not a file handed on after.

use std::ops::ControlFlow;
use std::sync::Mutex;

use crossbeam_channel::bounded;
use trawl_stop::Stop;
use trawl_walk::{Exclusion, WalkItem};

use crate::{Event, IN_FLIGHT, LaneFactory, Progress, ScanConfig, ScanError, Source};

/// A [`Source`] that lists its own roots.
pub trait Listing: Source + Sync + std::fmt::Debug {
    /// Every entry under the roots, as walk items (a root that cannot be listed is an error
    /// item naming it; what `excluding`'s patterns match, an excluded item), until `found`
    /// breaks or `stop` is requested.
    fn list(
        &self,
        excluding: &Exclusion,
        stop: &Stop,
        found: &mut dyn FnMut(WalkItem) -> ControlFlow<()>,
    );
}

/// Reads everything `listing` lists with `lanes`, telling `sink` each event on this thread:
/// the files' as they are read, then the entries that were not files (skipped, failed,
/// excluded).
pub fn scan_listing(
    cfg: &ScanConfig,
    listing: &dyn Listing,
    lanes: &dyn LaneFactory,
    progress: &dyn Progress,
    stop: &Stop,
    sink: &mut dyn FnMut(Event),
) {
    let others: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let (tx, rx) = bounded(IN_FLIGHT);
        let others = &others;
        s.spawn(move || {
            listing.list(&cfg.walk.excluding, stop, &mut |item| {
                let ev = match item {
                    WalkItem::File(f) => {
                        progress.found(1, f.size);
                        return match tx.send(f) {
                            Ok(()) => ControlFlow::Continue(()),
                            Err(_) => ControlFlow::Break(()),
                        };
                    }
                    WalkItem::Skipped { path, kind } => Event::Skipped { path, kind },
                    WalkItem::Error(e) => Event::Failed(ScanError::Walk(e)),
                    WalkItem::Excluded(x) => Event::Excluded(x),
                };
                others.lock().unwrap_or_else(|p| p.into_inner()).push(ev);
                ControlFlow::Continue(())
            });
            progress.walk_done();
        });
        listing.read(cfg, lanes, progress, stop, rx, sink);
    });
    for ev in others.into_inner().unwrap_or_else(|p| p.into_inner()) {
        sink(ev);
    }
}
