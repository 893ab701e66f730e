//! Where an audit's walk and reads are done: [`Local`] on this machine (the scan engine), or
//! any other [`Source`] (a cluster's workers), the catalog staying with the caller either way.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, bounded};
use trawl_digest::Algorithm;
use trawl_scan::{
    DigestLanes, Links, LocalRoots, Outcome, Progress, Reading, Refused, ScanConfig, read_named,
};
use trawl_stop::Stop;
use trawl_walk::{FileEntry, WalkItem, WalkOptions};

use crate::CatalogError;

/// What reading one planned file found.
#[derive(Debug)]
pub enum ReadResult<'a> {
    /// Read to its end: what it is now, and its digests in the catalog's algorithm order.
    Read {
        /// Which root it is under.
        root: usize,
        /// The file.
        path: &'a Path,
        /// Bytes read.
        size: u64,
        /// Modification time, nanoseconds since the epoch.
        mtime_ns: i64,
        /// Device it is on.
        dev: u64,
        /// Its inode number.
        ino: u64,
        /// Its status change time as the read found it, nanoseconds since the epoch, where the
        /// source has one (what `scan --reuse` holds a file to).
        ctime_ns: Option<i64>,
        /// Its digests: the catalog's algorithms in its order, then any others the source
        /// computed to compare with `expected` (kept for that only).
        digests: &'a [(Algorithm, Vec<u8>)],
        /// What its source says the content must be, when it says (an OCFL inventory's
        /// digests): a read that differs in one of these is corrupt, whatever its size and
        /// time, and these stay its registered digests.
        expected: Option<Expected<'a>>,
    },
    /// Gone since the walk.
    Gone {
        /// The file.
        path: &'a Path,
    },
    /// Could not be read; the error names the file.
    Failed {
        /// The file, when the failure has one.
        path: Option<&'a Path>,
        /// What failed.
        error: &'a (dyn std::error::Error + 'a),
    },
}

/// Digests a file's source gives for it, and where they come from (for the event's detail).
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// Each algorithm's digest; those the catalog does not compute are not compared.
    pub digests: &'a [(Algorithm, Vec<u8>)],
    /// Where they come from (`the OCFL inventory`).
    pub from: &'a str,
    /// Where the source holds the content fixed for good, the unit it is fixed in (an OCFL
    /// version's directory, `OBJECT/vN`, a path under the file's root): a registered file
    /// read again with other digests is corrupt, never modified, whatever its size and time,
    /// and keeps its registered digests; and a file new in a unit that had files registered
    /// in an earlier run is corrupt too (the unit's content was added to).
    pub fixed: Option<&'a Path>,
}

/// What a source's store holds of one planned file, looked up without reading it.
#[derive(Debug)]
pub enum StoredResult<'a> {
    /// The store's values for the file as it holds it now.
    Held {
        /// Which root it is under.
        root: usize,
        /// The file.
        path: &'a Path,
        /// Its size now.
        size: u64,
        /// Its modification time now, nanoseconds since the epoch (the walk's where the store
        /// says the same to its own precision).
        mtime_ns: i64,
        /// Each checksum of the whole content the store holds, by algorithm (a single-part
        /// upload's ETag as MD5 among them): what the store says, never judged here.
        checksums: &'a [(Algorithm, Vec<u8>)],
        /// What else it holds that is no checksum of the whole content, each in a few words
        /// (`a composite CRC32C checksum of 3 parts`): said where nothing compares.
        withheld: &'a [String],
    },
    /// Gone since the walk.
    Gone {
        /// The file.
        path: &'a Path,
    },
    /// Could not be looked up; the error names the file.
    Failed {
        /// The file.
        path: &'a Path,
        /// What failed.
        error: &'a (dyn std::error::Error + 'a),
    },
}

/// What a no-download audit's lookups are to do.
pub struct StoredPlan<'a> {
    /// The files to look up, in the plan's order; closed at the plan's end.
    pub feed: Receiver<FileEntry>,
    /// The roots the entries' `root` indexes name.
    pub roots: &'a [PathBuf],
    /// How many files the plan holds.
    pub files: u64,
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
    /// Walks `roots` as `opts` says, handing each item to `item` as it comes; stops when `item`
    /// breaks (the walk then returns the error the break carries), or when `stop` is set.
    fn walk(
        &mut self,
        roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError>;

    /// Whether every file this source lists is content that never changes (an OCFL storage
    /// root's): a metadata-only audit then calls a changed size or time corrupt, not modified.
    fn fixed(&self) -> bool {
        false
    }

    /// Reads each file `plan.feed` gives until it is closed, and hands what each read found
    /// to `found`; stops starting files when `stop` is set.
    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError>;

    /// Looks up what the store holds of each file `plan.feed` gives (its own checksums of the
    /// content), reading none, and hands each to `found`; stops starting lookups when `stop`
    /// is set. A source whose files have no checksums kept beside them (a file system's)
    /// cannot, and says so.
    fn stored(
        &mut self,
        plan: StoredPlan<'_>,
        stop: &Stop,
        found: &mut dyn FnMut(StoredResult<'_>),
    ) -> Result<(), SourceError> {
        let _ = (plan, stop, found);
        Err(SourceError::Failed(
            "these files have no checksums kept by their store: an audit without a download takes s3:// roots"
                .to_string(),
        ))
    }
}

/// What an audit's reads are to do.
pub struct ReadPlan<'a> {
    /// The engine's settings.
    pub cfg: &'a ScanConfig,
    /// The digests to compute, in the catalog's order.
    pub algorithms: &'a [Algorithm],
    /// The files to read, in the plan's order; closed at the plan's end or the budget's.
    pub feed: Receiver<FileEntry>,
    /// The roots the entries' `root` indexes name.
    pub roots: &'a [PathBuf],
    /// What the plan holds: files, and bytes (no more than the byte budget).
    pub files: u64,
    /// And bytes.
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
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        let (tx, rx) = bounded::<WalkItem>(16 * 1024);
        std::thread::scope(|s| {
            s.spawn(move || trawl_walk::walk(roots, opts, &tx, stop, &|_| {}));
            // Dropping the receiver on a break ends the walk at its next send.
            for it in rx {
                if let ControlFlow::Break(e) = item(it) {
                    return Err(e.into());
                }
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
        // Each file is opened by its name in its directory, that directory opened beneath its
        // root (unless links are followed, as --follow asks): a name or directory swapped for a
        // link since the walk cannot make the audit read, and record, a file outside.
        let links = match plan.cfg.walk.follow_links {
            true => Links::Follow,
            false => Links::Beneath,
        };
        let source = LocalRoots::new(plan.roots.to_vec(), links);
        read_plan(&source, plan, progress, stop, found);
        Ok(())
    }
}

/// Reads the files `plan.feed` gives through the reading service over `source`, with the
/// plan's digests, and hands what each read found to `found`: the one way every audit source
/// that reads through the engine reads (this machine's files, a store's objects).
pub fn read_plan(
    source: &dyn trawl_scan::Source,
    plan: ReadPlan<'_>,
    progress: &dyn Progress,
    stop: &Stop,
    found: &mut dyn FnMut(ReadResult<'_>),
) {
    let lanes = DigestLanes(plan.algorithms.to_vec());
    // An audit reads every file it checks: never a digest known from an earlier read, which
    // bit rot (content changed, metadata not) would pass.
    let cfg = ScanConfig {
        known: None,
        ..plan.cfg.clone()
    };
    let reading = Reading {
        source,
        cfg: &cfg,
        lanes: &lanes,
        cap: None,
        // The plan announced its totals.
        announce: false,
    };
    let feed = plan.feed;
    read_named(
        &reading,
        progress,
        stop,
        move |f| {
            for e in feed {
                if f.send_entry(e, ()).is_break() {
                    return;
                }
            }
        },
        |(), outcome| hand(outcome, found),
    );
}

/// Hands what the engine's read of one file found to `found`, as the catalog takes it.
fn hand(outcome: Outcome, found: &mut dyn FnMut(ReadResult<'_>)) {
    match outcome {
        Outcome::Read(rec) => found(ReadResult::Read {
            root: rec.root,
            path: &rec.path,
            size: rec.size,
            mtime_ns: rec
                .mtime_sec
                .wrapping_mul(1_000_000_000)
                .wrapping_add(rec.mtime_nsec),
            dev: rec.dev,
            ino: rec.ino,
            ctime_ns: (rec.ctime_ns != 0).then_some(rec.ctime_ns),
            digests: &rec.digests(),
            expected: None,
        }),
        Outcome::Gone(path) => found(ReadResult::Gone { path: &path }),
        Outcome::Failed(e) => found(ReadResult::Failed {
            path: e.path(),
            error: &e,
        }),
        Outcome::Refused { path, why } => found(ReadResult::Failed {
            path: Some(&path),
            error: &Refused {
                path: path.clone(),
                why,
            },
        }),
        // Stopped before it was read: nothing is recorded for it, as for any file a stopped
        // audit did not reach.
        Outcome::Unread(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A callback that breaks ends the walk: nothing more is handed to it, and the walk
    /// returns the error the break carries.
    #[test]
    fn a_break_ends_the_walk_with_the_error_it_carries() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..64 {
            std::fs::write(t.path().join(format!("f{i}")), b"x").unwrap();
        }
        let roots = vec![t.path().to_path_buf()];
        let mut seen = 0;
        let walked = Local.walk(&roots, &WalkOptions::default(), &Stop::new(), &mut |_| {
            seen += 1;
            ControlFlow::Break(CatalogError::Missing {
                path: "cat.db".into(),
            })
        });
        assert_eq!(seen, 1);
        match walked {
            Err(SourceError::Catalog(CatalogError::Missing { path })) => {
                assert_eq!(path, Path::new("cat.db"))
            }
            other => panic!("{other:?}"),
        }
    }

    /// A directory swapped for a link to elsewhere between the walk and the read: the read
    /// refuses it, and reads nothing outside the root.
    #[test]
    fn a_read_never_goes_through_a_link_swapped_in_after_the_walk() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(root.join("kept")).unwrap();
        std::fs::write(root.join("kept/f"), b"inside").unwrap();
        std::fs::create_dir_all(top.path().join("outside")).unwrap();
        std::fs::write(top.path().join("outside/f"), b"outside").unwrap();
        std::os::unix::fs::symlink(top.path().join("outside"), root.join("sub")).unwrap();
        std::os::unix::fs::symlink(top.path().join("outside/f"), root.join("kept/g")).unwrap();
        let (tx, rx) = bounded(8);
        for name in ["kept/f", "sub/f", "kept/g", "gone/f"] {
            tx.send(FileEntry {
                path: root.join(name),
                root: 0,
                size: 0,
                dev: 0,
                ino: 0,
                mtime_ns: 0,
                dir: None,
                open: None,
            })
            .unwrap();
        }
        drop(tx);
        let roots = vec![root.clone()];
        let cfg = ScanConfig::new(roots.clone());
        let plan = ReadPlan {
            cfg: &cfg,
            algorithms: &[Algorithm::Sha256],
            feed: rx,
            roots: &roots,
            files: 4,
            bytes: 0,
        };
        let mut got: Vec<(String, String)> = Vec::new();
        Local
            .read(plan, &trawl_scan::NoProgress, &Stop::new(), &mut |r| {
                let (p, what) = match r {
                    ReadResult::Read { path, size, .. } => {
                        (path.to_path_buf(), format!("read {size}"))
                    }
                    ReadResult::Gone { path } => (path.to_path_buf(), "gone".into()),
                    ReadResult::Failed { path, error } => {
                        (path.unwrap().to_path_buf(), format!("failed: {error}"))
                    }
                };
                let rel = p.strip_prefix(&root).unwrap().display().to_string();
                got.push((rel, what));
            })
            .unwrap();
        got.sort();
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], ("gone/f".into(), "gone".into()));
        assert_eq!(got[1], ("kept/f".into(), "read 6".into()));
        assert!(
            got[2].0 == "kept/g" && got[2].1.contains("symbolic link"),
            "{got:?}"
        );
        assert!(
            got[3].0 == "sub/f" && got[3].1.contains("outside the root"),
            "{got:?}"
        );
    }
}
