//! Prefixes audited into a catalog: the catalog's [`Source`] whose walk is the store's listing
//! and whose reads go through the reading service over the store, so that an audit of objects
//! records, judges and reports as one of files on a disk does; and whose lookups (a
//! no-download audit's) say what the store holds of each object, its own checksums, by one
//! HeadObject each, several batches in flight. The catalog judges; this only reports.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Receiver, bounded};
use trawl_catalog::{
    CatalogError, ReadPlan, ReadResult, Source, SourceError, StoredPlan, StoredResult, read_plan,
};
use trawl_scan::Progress;
use trawl_stop::Stop;
use trawl_walk::{FileEntry, WalkItem, WalkOptions};

use crate::{ObjectSource, ObjectUrl, S3Error, Store, StoreFault, Stored};

/// Objects looked up together (one HeadObject each, all in flight), as `check` does.
const BATCH: usize = 64;
/// Batches in flight at once: one's answers are recorded while the next are asked for.
const LOOKERS: usize = 2;
/// Nanoseconds in a second.
const NS: i64 = 1_000_000_000;

/// An object planned, and what the store said of it (or why it was not asked).
type Looked = (FileEntry, Result<Stored, S3Error>);

/// Objects under prefixes, as an audit's source.
pub struct AuditObjects {
    objects: ObjectSource,
}

impl AuditObjects {
    /// The objects under `roots` of `store`.
    pub fn new(store: Arc<Store>, roots: Vec<ObjectUrl>) -> AuditObjects {
        AuditObjects {
            objects: ObjectSource::reading_later(store, roots),
        }
    }

    /// The objects `source` names, for an audit.
    pub fn of(source: &ObjectSource) -> AuditObjects {
        AuditObjects::new(source.store_arc(), source.roots().to_vec())
    }
}

impl Source for AuditObjects {
    fn walk(
        &mut self,
        _roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        let mut broke = None;
        let listed = self
            .objects
            .walk(&opts.excluding, stop, &mut |it| match item(it) {
                ControlFlow::Continue(()) => ControlFlow::Continue(()),
                ControlFlow::Break(e) => {
                    broke = Some(e);
                    ControlFlow::Break(())
                }
            });
        if let Some(e) = broke {
            return Err(e.into());
        }
        // A prefix that cannot be listed fails the audit: without its listing, every object
        // under it would be called missing.
        listed.map_err(|e| SourceError::Failed(e.to_string()))?;
        Ok(())
    }

    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError> {
        read_plan(&self.objects, plan, progress, stop, found);
        Ok(())
    }

    fn stored(
        &mut self,
        plan: StoredPlan<'_>,
        stop: &Stop,
        found: &mut dyn FnMut(StoredResult<'_>),
    ) -> Result<(), SourceError> {
        let (store, roots) = (self.objects.store(), self.objects.roots());
        let (tx, rx) = bounded::<Vec<Looked>>(LOOKERS);
        std::thread::scope(|s| {
            for _ in 0..LOOKERS {
                let (feed, tx) = (plan.feed.clone(), tx.clone());
                s.spawn(move || {
                    while let Some(batch) = next_batch(&feed, stop) {
                        if tx.send(look_up(store, roots, batch)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            for (entry, answer) in rx.iter().flatten() {
                hand(&entry, answer, found);
            }
        });
        Ok(())
    }
}

/// Up to [`BATCH`] of the plan's objects: waits for the first, takes what is there besides;
/// None at the plan's end or at `stop`.
fn next_batch(feed: &Receiver<FileEntry>, stop: &Stop) -> Option<Vec<FileEntry>> {
    if stop.is_stopping() {
        return None;
    }
    let mut batch = vec![feed.recv().ok()?];
    while batch.len() < BATCH {
        match feed.try_recv() {
            Ok(e) => batch.push(e),
            Err(_) => break,
        }
    }
    Some(batch)
}

/// What the store holds of each object of `batch`, looked up together.
fn look_up(store: &Store, roots: &[ObjectUrl], batch: Vec<FileEntry>) -> Vec<Looked> {
    use std::os::unix::ffi::OsStrExt;
    let keys: Vec<Option<(&ObjectUrl, String)>> = batch
        .iter()
        .map(|e| {
            let url = roots.get(e.root)?;
            let root = url.root_path();
            let rel = e.path.strip_prefix(&root).ok()?;
            Some((url, url.key_of(rel.as_os_str().as_bytes())?))
        })
        .collect();
    let asked: Vec<(&ObjectUrl, &str)> = keys
        .iter()
        .flatten()
        .map(|(u, k)| (*u, k.as_str()))
        .collect();
    let mut answers = store.stored_each(&asked).into_iter();
    batch
        .into_iter()
        .zip(&keys)
        .map(|(e, key)| {
            let answer = match key {
                Some(_) => answers.next().unwrap_or_else(|| Err(unasked(&e))),
                None => Err(unasked(&e)),
            };
            (e, answer)
        })
        .collect()
}

/// The failure of an object that is no key below its root (the plan gives none such).
fn unasked(e: &FileEntry) -> S3Error {
    S3Error::Request {
        what: e.path.display().to_string(),
        fault: StoreFault::Other,
        message: "not one plain name below its prefix: not looked up".to_string(),
    }
}

/// Hands what the store said of one object to the catalog: what it holds (its size, time and
/// checksums), gone (404 since the listing), or the failure.
fn hand(e: &FileEntry, answer: Result<Stored, S3Error>, found: &mut dyn FnMut(StoredResult<'_>)) {
    match answer {
        Ok(st) => {
            // HeadObject's Last-Modified is an HTTP date, to the second, where the listing's
            // time is finer: the object listed, at its size and second, keeps its listed time,
            // so that an object as registered is not taken for one whose time changed.
            let same = st.size == e.size && st.mtime_ns.div_euclid(NS) == e.mtime_ns.div_euclid(NS);
            found(StoredResult::Held {
                root: e.root,
                path: &e.path,
                size: st.size,
                mtime_ns: if same { e.mtime_ns } else { st.mtime_ns },
                checksums: &st.full_object(),
                withheld: &st.withheld(),
            });
        }
        Err(err) if err.fault() == StoreFault::NotFound => {
            found(StoredResult::Gone { path: &e.path })
        }
        Err(err) => found(StoredResult::Failed {
            path: &e.path,
            error: &err,
        }),
    }
}
