//! Sources whose files are found by listing them (a store's objects under prefixes), not by a
//! walk of directories, and the scan of one: the listing on a thread of its own feeding the
//! source's reads through a bounded channel, what is not a file handed on after; and the scan
//! of named files through such a source (a cluster's shard of objects).

use std::ops::ControlFlow;
use std::sync::Mutex;

use crossbeam_channel::bounded;
use trawl_stop::Stop;
use trawl_walk::{Exclusion, WalkItem};

use crate::{Event, IN_FLIGHT, LaneFactory, Outcome, Progress, ScanConfig, ScanError, Source};

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

/// Names looked up at once by [`scan_named`] (each lookup is a request to the source: a
/// HeadObject for an object).
pub const LOOKUPS: usize = 16;

/// Reads exactly `files` (each a path below one of `cfg.roots`, as a listing named it) through
/// `source`, telling `sink` each event on this thread, as [`scan_listing`] does for what it
/// lists: each name is turned into an entry by the source's resolver ([`LOOKUPS`] at once), a
/// name that is gone is a [`ReadError::Vanished`] failure naming it, one the resolver refuses
/// or cannot look up a failure naming it, one below no root a failure too.
///
/// [`ReadError::Vanished`]: trawl_read::ReadError::Vanished
pub fn scan_named(
    cfg: &ScanConfig,
    source: &dyn Listing,
    files: &[std::path::PathBuf],
    lanes: &dyn LaneFactory,
    progress: &dyn Progress,
    stop: &Stop,
    sink: &mut dyn FnMut(Event),
) {
    let others: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let (tx, rx) = bounded(IN_FLIGHT);
        let (names_tx, names_rx) = bounded::<&std::path::Path>(IN_FLIGHT);
        let others = &others;
        for _ in 0..LOOKUPS.min(files.len()) {
            let (tx, names_rx) = (tx.clone(), names_rx.clone());
            s.spawn(move || {
                let mut resolve = source.resolver();
                for path in names_rx {
                    if stop.is_stopping() {
                        break;
                    }
                    let outcome = match below_a_root(&cfg.roots, path) {
                        Some((root, rel)) => resolve.entry(root, rel),
                        None => Err(Outcome::Failed(not_below(path))),
                    };
                    let ev = match outcome {
                        Ok(e) => {
                            progress.found(1, e.size);
                            if tx.send(e).is_err() {
                                break;
                            }
                            continue;
                        }
                        Err(o) => match failure(o) {
                            Some(ev) => ev,
                            None => continue,
                        },
                    };
                    others.lock().unwrap_or_else(|p| p.into_inner()).push(ev);
                }
            });
        }
        drop((tx, names_rx));
        s.spawn(move || {
            for f in files {
                if stop.is_stopping() || names_tx.send(f).is_err() {
                    break;
                }
            }
            progress.walk_done();
        });
        source.read(cfg, lanes, progress, stop, rx, sink);
    });
    for ev in others.into_inner().unwrap_or_else(|p| p.into_inner()) {
        sink(ev);
    }
}

/// The root `path` is below (the first that holds it) and its name below that root.
fn below_a_root<'p>(
    roots: &[std::path::PathBuf],
    path: &'p std::path::Path,
) -> Option<(usize, &'p [u8])> {
    use std::os::unix::ffi::OsStrExt;
    let p = path.as_os_str().as_bytes();
    roots.iter().enumerate().find_map(|(i, r)| {
        let rel = p
            .strip_prefix(r.as_os_str().as_bytes())?
            .strip_prefix(b"/")?;
        (!rel.is_empty()).then_some((i, rel))
    })
}

/// A name below none of the roots, as a failure naming it.
fn not_below(path: &std::path::Path) -> ScanError {
    ScanError::Read(trawl_read::ReadError::Open {
        path: path.to_path_buf(),
        source: std::io::Error::other("below none of the roots: not read"),
    })
}

/// A name's outcome decided without reading it, as the event a scan records (None: not read
/// because the run stopped).
fn failure(o: Outcome) -> Option<Event> {
    use trawl_read::ReadError;
    Some(Event::Failed(match o {
        Outcome::Gone(path) => ScanError::Read(ReadError::Vanished { path }),
        Outcome::Refused { path, why } => ScanError::Read(ReadError::Open {
            path,
            source: std::io::Error::other(why),
        }),
        Outcome::Failed(e) => e,
        Outcome::Read(r) => return Some(Event::File(r)),
        Outcome::Unread(_) => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DigestLanes, LocalRoots, NoProgress};
    use std::path::PathBuf;

    /// Local roots as a listing source (it lists nothing: only named files are read).
    #[derive(Debug)]
    struct Named(LocalRoots);

    impl Source for Named {
        fn resolver(&self) -> Box<dyn crate::Resolve + '_> {
            self.0.resolver()
        }

        fn read(
            &self,
            cfg: &ScanConfig,
            lanes: &dyn LaneFactory,
            progress: &dyn Progress,
            stop: &Stop,
            entries: crossbeam_channel::Receiver<trawl_walk::FileEntry>,
            sink: &mut dyn FnMut(Event),
        ) {
            self.0.read(cfg, lanes, progress, stop, entries, sink)
        }
    }

    impl Listing for Named {
        fn list(&self, _: &Exclusion, _: &Stop, _: &mut dyn FnMut(WalkItem) -> ControlFlow<()>) {}
    }

    /// Exactly the files named are read, each once, through the source's resolver; one that
    /// is gone is a vanished failure naming it, one below no root a failure naming it.
    #[test]
    fn named_files_are_read_through_the_source_and_the_missing_named() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("r");
        std::fs::create_dir_all(root.join("d")).unwrap();
        let mut files: Vec<PathBuf> = (0..40)
            .map(|i| {
                let p = root.join(format!("d/f{i}"));
                std::fs::write(&p, vec![i as u8; i * 100]).unwrap();
                p
            })
            .collect();
        std::fs::write(root.join("unnamed"), b"not read").unwrap();
        files.push(root.join("d/gone"));
        files.push(t.path().join("elsewhere"));
        let cfg = ScanConfig::new(vec![root.clone()]);
        let source = Named(LocalRoots::new(vec![root.clone()], crate::Links::Beneath));
        let lanes = DigestLanes(vec![trawl_digest::Algorithm::Sha256]);
        let (mut read, mut failed) = (Vec::new(), Vec::new());
        let stop = Stop::new();
        scan_named(
            &cfg,
            &source,
            &files,
            &lanes,
            &NoProgress,
            &stop,
            &mut |ev| match ev {
                Event::File(r) => read.push((r.path, r.size)),
                Event::Failed(e) => failed.push(e.to_string()),
                other => panic!("{other:?}"),
            },
        );
        read.sort();
        let mut want: Vec<(PathBuf, u64)> = (0..40)
            .map(|i| (root.join(format!("d/f{i}")), i as u64 * 100))
            .collect();
        want.sort();
        assert_eq!(read, want);
        assert_eq!(failed.len(), 2, "{failed:?}");
        let said = |what: &str| failed.iter().any(|f| f.ends_with(what));
        assert!(
            said("d/gone: vanished before it could be read"),
            "{failed:?}"
        );
        assert!(
            said("elsewhere: cannot open: below none of the roots: not read"),
            "{failed:?}"
        );
    }
}
