//! Where an audit's walk and reads are done: [`Local`] on this machine (the scan engine), or
//! any other [`Source`] (a cluster's workers), the catalog staying with the caller either way.

use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, bounded};
use trawl_digest::Algorithm;
use trawl_read::ReadError;
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig, ScanError};
use trawl_stop::Stop;
use trawl_walk::{FileEntry, WalkItem, WalkOptions};

use crate::CatalogError;

/// What reading one planned file found.
#[derive(Debug)]
pub enum ReadResult<'a> {
    /// Read to its end: what it is now, and its digests in the catalog's algorithm order.
    Read {
        root: usize,
        path: &'a Path,
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
        digests: &'a [(Algorithm, Vec<u8>)],
    },
    /// Gone since the walk.
    Gone { path: &'a Path },
    /// Could not be read; the error names the file.
    Failed {
        path: Option<&'a Path>,
        error: &'a (dyn std::error::Error + 'a),
    },
}

/// Why a source stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// The catalog refused what the source handed it.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The source itself failed (e.g. a cluster task failed for good).
    #[error("{0}")]
    Failed(String),
}

/// The walk and the reads of an audit.
pub trait Source {
    /// Walks `roots` as `opts` says, handing each item to `item` as it comes; stops at the
    /// first error `item` returns, or when `stop` is set.
    fn walk(
        &mut self,
        roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> Result<(), CatalogError>,
    ) -> Result<(), SourceError>;

    /// Reads each file `plan.feed` gives until it is closed, and hands what each read found
    /// to `found`; stops starting files when `stop` is set.
    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError>;
}

/// What an audit's reads are to do.
pub struct ReadPlan<'a> {
    pub cfg: &'a ScanConfig,
    /// The digests to compute, in the catalog's order.
    pub algorithms: &'a [Algorithm],
    /// The files to read, in the plan's order; closed at the plan's end or the budget's.
    pub feed: Receiver<FileEntry>,
    /// What the plan holds: files, and bytes (no more than the byte budget).
    pub files: u64,
    pub bytes: u64,
}

/// This machine: trawl's walker and scan engine.
pub struct Local;

impl Source for Local {
    fn walk(
        &mut self,
        roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> Result<(), CatalogError>,
    ) -> Result<(), SourceError> {
        let (tx, rx) = bounded::<WalkItem>(16 * 1024);
        std::thread::scope(|s| {
            s.spawn(move || trawl_walk::walk(roots, opts, &tx, stop, &|_| {}));
            // Dropping the receiver on an error ends the walk at its next send.
            for it in rx {
                item(it)?;
            }
            Ok(())
        })
    }

    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError> {
        let lanes = DigestLanes(plan.algorithms.to_vec());
        trawl_scan::scan(
            plan.cfg,
            Input::Stream(plan.feed),
            &lanes,
            progress,
            stop,
            &mut |ev| match ev {
                Event::File(rec) => {
                    let digests = rec.digests();
                    found(ReadResult::Read {
                        root: rec.root,
                        path: &rec.path,
                        size: rec.size,
                        mtime_ns: rec.mtime_sec * 1_000_000_000 + rec.mtime_nsec,
                        dev: rec.dev,
                        ino: rec.ino,
                        digests: &digests,
                    })
                }
                Event::Failed(ScanError::Read(ReadError::Vanished { path, .. })) => {
                    found(ReadResult::Gone { path: &path })
                }
                Event::Failed(e) => found(ReadResult::Failed {
                    path: e.path(),
                    error: &e,
                }),
                Event::Skipped { .. } => {}
            },
        );
        Ok(())
    }
}
