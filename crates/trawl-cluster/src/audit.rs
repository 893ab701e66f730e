//! A cluster audit's pieces: the client runs `trawl audit` itself, catalog, messages and
//! outputs included, with a [`Source`] whose walk and reads are tasks on the workers; a
//! [`Worker`] lists directories and reads shards there; what crosses the wire between them is
//! encoded here (postcard: compact, and names go as bytes, whatever their encoding).

use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, bounded};
use serde::{Deserialize, Serialize};
use trawl_catalog::{CatalogError, ReadPlan, ReadResult, Source, SourceError};
use trawl_digest::Algorithm;
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;
use trawl_walk::{
    Excluded, ExcludedKind, FileEntry, SkipKind, WalkError, WalkItem, WalkOptions, Why,
};

use crate::listing::budgeted;
use crate::{ClusterError, ListBudget, bytes, path};

/// What a listing task needs beyond the flags: the roots as the audit placed them (a root
/// given inside a registered one is replaced by it) and the directories the walk leaves out.
#[derive(Serialize, Deserialize)]
struct WalkSpec {
    roots: Vec<Vec<u8>>,
    exclude: Vec<Vec<u8>>,
}

/// One walk item on the wire.
#[derive(Serialize, Deserialize)]
enum WireItem {
    File {
        root: u32,
        path: Vec<u8>,
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
    },
    Skipped {
        path: Vec<u8>,
        kind: String,
    },
    /// A directory that could not be listed: the system's error number where there is one
    /// (the client words it as the worker's system would), else the worker's words.
    Io {
        path: Vec<u8>,
        errno: Option<i32>,
        message: String,
    },
    Loop {
        path: Vec<u8>,
        ancestor: Vec<u8>,
    },
    Other(String),
    Refused {
        path: Vec<u8>,
        reason: String,
    },
    /// An entry the user's rules left out: its kind's name (`directory`, `file`, a skip
    /// kind's), a file's size, and the pattern that matched it or the name it holds.
    Excluded {
        root: u32,
        path: Vec<u8>,
        kind: String,
        size: Option<u64>,
        pattern: Option<String>,
        holds: Option<Vec<u8>>,
    },
}

/// A shard of the plan: the catalog's algorithms and (root, path, size, device, inode) per file.
#[derive(Serialize, Deserialize)]
struct ReadShard {
    algorithms: Vec<String>,
    /// The roots the files' indexes name: each file is opened beneath its root.
    roots: Vec<Vec<u8>>,
    files: Vec<(u32, Vec<u8>, u64, u64, u64)>,
}

/// What the read of one file found, on the wire.
#[derive(Serialize, Deserialize)]
enum WireRead {
    Read {
        root: u32,
        path: Vec<u8>,
        size: u64,
        mtime_ns: i64,
        dev: u64,
        ino: u64,
        /// In the shard's algorithm order.
        digests: Vec<Vec<u8>>,
    },
    Gone {
        path: Vec<u8>,
    },
    Failed {
        path: Option<Vec<u8>>,
        message: String,
    },
}

/// A read failure as the worker worded it (the words name the file).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RemoteError(String);

fn wire_error(what: &str, e: postcard::Error) -> SourceError {
    SourceError::Failed(format!(
        "{what}: cannot decode ({e}); are all workers on this version?"
    ))
}

/// Hands each item of a listing task's result to `item`.
pub(crate) fn take_listing(
    b: &[u8],
    item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
) -> Result<(), SourceError> {
    let items: Vec<WireItem> = postcard::from_bytes(b).map_err(|e| wire_error("a listing", e))?;
    for it in items {
        if let ControlFlow::Break(e) = item(walk_item(it)) {
            return Err(e.into());
        }
    }
    Ok(())
}

/// A walk item as it came over the wire.
fn walk_item(it: WireItem) -> WalkItem {
    match it {
        WireItem::File {
            root,
            path: p,
            size,
            mtime_ns,
            dev,
            ino,
        } => WalkItem::File(FileEntry {
            path: path(p),
            root: root as usize,
            size,
            dev,
            ino,
            mtime_ns,
            dir: None,
            open: None,
        }),
        WireItem::Skipped { path: p, kind } => WalkItem::Skipped {
            path: path(p),
            kind: SkipKind::from_name(&kind).unwrap_or(SkipKind::Other),
        },
        WireItem::Io {
            path: p,
            errno,
            message,
        } => WalkItem::Error(unlisted(path(p), errno, message)),
        WireItem::Loop { path: p, ancestor } => WalkItem::Error(WalkError::Loop {
            path: path(p),
            ancestor: path(ancestor),
        }),
        WireItem::Other(m) => WalkItem::Error(WalkError::Other(m)),
        WireItem::Refused { path: p, reason } => WalkItem::Error(WalkError::Refused {
            path: path(p),
            reason,
        }),
        WireItem::Excluded {
            root,
            path: p,
            kind,
            size,
            pattern,
            holds,
        } => WalkItem::Excluded(Excluded {
            path: path(p),
            root: root as usize,
            kind: excluded_kind(&kind),
            size,
            why: match (pattern, holds) {
                (Some(p), _) => Why::Pattern(p),
                (None, h) => Why::Holds(path(h.unwrap_or_default()).into_os_string()),
            },
        }),
    }
}

/// A directory the worker could not list: the system's error by its number where it had one,
/// else the worker's words, typed, under the walk's error (which names the path).
fn unlisted(p: PathBuf, errno: Option<i32>, message: String) -> WalkError {
    let source = match errno {
        Some(n) => std::io::Error::from_raw_os_error(n),
        None => std::io::Error::other(ClusterError::Unlisted {
            path: p.clone(),
            message,
        }),
    };
    WalkError::Io { path: p, source }
}

/// An excluded entry's kind from its name on the wire.
fn excluded_kind(kind: &str) -> ExcludedKind {
    match kind {
        "directory" => ExcludedKind::Directory,
        "file" => ExcludedKind::File,
        k => ExcludedKind::Other(SkipKind::from_name(k).unwrap_or(SkipKind::Other)),
    }
}

/// The plan's files for the read tasks, taken a shard at a time; closed when the reads end,
/// so that the audit's planner is never left waiting on it.
pub struct Feed {
    rx: Mutex<Option<Receiver<FileEntry>>>,
    algorithms: Vec<Algorithm>,
    roots: Vec<Vec<u8>>,
    stop: Stop,
    /// What the plan holds: files, and bytes (no more than the byte budget).
    pub files: u64,
    /// And bytes.
    pub bytes: u64,
}

impl Feed {
    /// Takes up to `max_files` files or `max_bytes` bytes (waiting for them) as one shard for
    /// [`Worker::read`]; None once the plan or the budget has ended, or the audit is stopping.
    pub fn next_shard(&self, max_files: usize, max_bytes: u64) -> Option<Vec<u8>> {
        let rx = self.rx.lock().ok()?.clone()?;
        let mut shard = ReadShard {
            algorithms: self
                .algorithms
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            roots: self.roots.clone(),
            files: Vec::new(),
        };
        let mut total = 0u64;
        while shard.files.len() < max_files.max(1) && total < max_bytes.max(1) {
            if self.stop.is_stopping() {
                return None;
            }
            let Ok(f) = rx.recv() else { break };
            total += f.size;
            shard
                .files
                .push((f.root as u32, bytes(&f.path), f.size, f.dev, f.ino));
        }
        if shard.files.is_empty() || self.stop.is_stopping() {
            return None;
        }
        Some(postcard::to_stdvec(&shard).expect("a shard encodes"))
    }

    fn close(&self) {
        if let Ok(mut g) = self.rx.lock() {
            g.take();
        }
    }
}

/// Where a cluster audit's listings and reads come from: the tasks the caller runs, each
/// stream pulled a result at a time. An error is the caller's words for why it ended.
pub trait Remote {
    /// Starts a walk of `roots` roots: listing tasks for [`Worker::list_task`] with `spec`.
    fn walk(&mut self, spec: &[u8], roots: usize) -> Result<(), String>;
    /// Starts the reads: tasks for [`Worker::read`], each with a shard taken from `feed`.
    fn read(&mut self, feed: Arc<Feed>) -> Result<(), String>;
    /// The next result of the stream started last; None at its end.
    fn next(&mut self) -> Result<Option<Vec<u8>>, String>;
    /// Ends the stream started last (the tasks still running are let go).
    fn close(&mut self);
}

/// A [`Source`] whose walk and reads are a [`Remote`]'s tasks.
pub struct RemoteSource<R>(pub R);

impl<R: Remote> RemoteSource<R> {
    /// Pulls the stream started last to its end (or the stop), handing each result to `each`.
    fn drain(
        &mut self,
        stop: &Stop,
        each: &mut dyn FnMut(&[u8]) -> Result<(), SourceError>,
    ) -> Result<(), SourceError> {
        let r = (|| {
            while !stop.is_stopping() {
                match self.0.next().map_err(SourceError::Failed)? {
                    Some(b) => each(&b)?,
                    None => break,
                }
            }
            Ok(())
        })();
        self.0.close();
        r
    }
}

impl<R: Remote> Source for RemoteSource<R> {
    fn walk(
        &mut self,
        roots: &[PathBuf],
        opts: &WalkOptions,
        stop: &Stop,
        item: &mut dyn FnMut(WalkItem) -> ControlFlow<CatalogError>,
    ) -> Result<(), SourceError> {
        let spec = WalkSpec {
            roots: roots.iter().map(|r| bytes(r)).collect(),
            exclude: opts.exclude.iter().map(|r| bytes(r)).collect(),
        };
        let spec = postcard::to_stdvec(&spec).expect("a walk spec encodes");
        self.0
            .walk(&spec, roots.len())
            .map_err(SourceError::Failed)?;
        self.drain(stop, &mut |b| take_listing(b, item))
    }

    fn read(
        &mut self,
        plan: ReadPlan<'_>,
        progress: &dyn Progress,
        stop: &Stop,
        found: &mut dyn FnMut(ReadResult<'_>),
    ) -> Result<(), SourceError> {
        let feed = Arc::new(Feed {
            rx: Mutex::new(Some(plan.feed)),
            algorithms: plan.algorithms.to_vec(),
            roots: plan.roots.iter().map(|r| bytes(r)).collect(),
            stop: stop.clone(),
            files: plan.files,
            bytes: plan.bytes,
        });
        let r = self
            .0
            .read(Arc::clone(&feed))
            .map_err(SourceError::Failed)
            .and_then(|()| {
                self.drain(stop, &mut |b| {
                    take_reads(b, plan.algorithms, progress, found)
                })
            });
        feed.close();
        r
    }
}

/// Hands what a read task found to `found`, file by file, showing it on `progress`.
pub(crate) fn take_reads(
    b: &[u8],
    algorithms: &[Algorithm],
    progress: &dyn Progress,
    found: &mut dyn FnMut(ReadResult<'_>),
) -> Result<(), SourceError> {
    let reads: Vec<WireRead> =
        postcard::from_bytes(b).map_err(|e| wire_error("a shard's reads", e))?;
    for r in reads {
        match r {
            WireRead::Read {
                root,
                path: p,
                size,
                mtime_ns,
                dev,
                ino,
                digests,
            } => {
                let p = path(p);
                let digests: Vec<(Algorithm, Vec<u8>)> =
                    algorithms.iter().copied().zip(digests).collect();
                progress.start_file(&p, size);
                progress.read(size);
                found(ReadResult::Read {
                    root: root as usize,
                    path: &p,
                    size,
                    mtime_ns,
                    dev,
                    ino,
                    // Not carried on the wire: a cluster's audit records no ctime, and
                    // `scan --reuse` reads such a file.
                    ctime_ns: None,
                    digests: &digests,
                    expected: None,
                });
            }
            WireRead::Gone { path: p } => found(ReadResult::Gone { path: &path(p) }),
            WireRead::Failed { path: p, message } => {
                let p = p.map(path);
                found(ReadResult::Failed {
                    path: p.as_deref(),
                    error: &RemoteError(message),
                })
            }
        }
        progress.file_done();
    }
    Ok(())
}

/// A worker's side of a cluster audit: the read settings `trawl audit`'s flags gave.
pub struct Worker {
    cfg: ScanConfig,
}

impl Worker {
    /// A worker reading with `cfg` (from `trawl audit`'s flags).
    pub fn new(cfg: ScanConfig) -> Worker {
        Worker { cfg }
    }

    /// An audit's listing task: root number `idx` of `spec` (`dirs` None) or each of `dirs`,
    /// within `budget` as a scan's listing task ([`crate::list_task`]): each directory's listing
    /// for `take_listing`, and the directories left to list.
    pub fn list_task(
        &self,
        spec: &[u8],
        idx: usize,
        dirs: Option<Vec<PathBuf>>,
        budget: ListBudget,
    ) -> Result<(Vec<Vec<u8>>, Vec<PathBuf>), ClusterError> {
        let spec: WalkSpec =
            postcard::from_bytes(spec).map_err(|e| ClusterError::wire("a walk spec", e))?;
        budgeted(dirs, budget, |d| self.list_one(&spec, idx, d.as_deref()))
    }

    /// One directory's listing (the root's with `dir` None), its subdirectories, and how many
    /// files it holds.
    fn list_one(
        &self,
        spec: &WalkSpec,
        idx: usize,
        dir: Option<&Path>,
    ) -> Result<(Vec<u8>, Vec<PathBuf>, usize), ClusterError> {
        let root = path(
            spec.roots
                .get(idx)
                .cloned()
                .ok_or(ClusterError::NoRoot(idx))?,
        );
        let opts = WalkOptions {
            exclude: spec.exclude.iter().cloned().map(path).collect(),
            metadata: true,
            follow_links: false,
            ..self.cfg.walk.clone()
        };
        let root_dev = if opts.one_file_system {
            std::fs::metadata(&root).ok().map(|m| m.dev())
        } else {
            None
        };
        let l = trawl_walk::list_directory(
            idx,
            &root,
            dir.unwrap_or(&root),
            &opts,
            root_dev,
            &Stop::new(),
        );
        // Excluded entries travel too, each a name: they count towards the task's budget.
        let files = l
            .items
            .iter()
            .filter(|it| matches!(it, WalkItem::File(_) | WalkItem::Excluded(_)))
            .count();
        let items: Vec<WireItem> = l.items.into_iter().map(wire_item).collect();
        Ok((
            postcard::to_stdvec(&items).expect("a listing encodes"),
            l.dirs,
            files,
        ))
    }

    /// Reads one shard (from [`Feed::next_shard`]) with trawl's engine: what each file's read found,
    /// for `take_reads`.
    pub fn read(&self, shard: &[u8]) -> Result<Vec<u8>, ClusterError> {
        let shard: ReadShard =
            postcard::from_bytes(shard).map_err(|e| ClusterError::wire("a shard", e))?;
        let algorithms = shard
            .algorithms
            .iter()
            .map(|a| a.parse::<Algorithm>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ClusterError::Algorithm(e.to_string()))?;
        let (tx, rx) = bounded::<FileEntry>(1024);
        let mut out = Vec::with_capacity(shard.files.len());
        let roots: Vec<PathBuf> = shard.roots.iter().cloned().map(path).collect();
        std::thread::scope(|s| {
            s.spawn(move || {
                for (root, p, size, dev, ino) in shard.files {
                    let entry = FileEntry {
                        path: path(p),
                        root: root as usize,
                        size,
                        dev,
                        ino,
                        mtime_ns: 0,
                        dir: None,
                        open: None,
                    };
                    if tx.send(entry).is_err() {
                        break;
                    }
                }
            });
            let plan = ReadPlan {
                cfg: &self.cfg,
                algorithms: &algorithms,
                feed: rx,
                roots: &roots,
                files: 0,
                bytes: 0,
            };
            trawl_catalog::Local.read(plan, &trawl_scan::NoProgress, &Stop::new(), &mut |r| {
                out.push(wire_read(r))
            })
        })?;
        Ok(postcard::to_stdvec(&out).expect("reads encode"))
    }
}

/// A walk item for the wire.
fn wire_item(it: WalkItem) -> WireItem {
    match it {
        WalkItem::File(f) => WireItem::File {
            root: f.root as u32,
            path: bytes(&f.path),
            size: f.size,
            mtime_ns: f.mtime_ns,
            dev: f.dev,
            ino: f.ino,
        },
        WalkItem::Skipped { path: p, kind } => WireItem::Skipped {
            path: bytes(&p),
            kind: kind.name().to_string(),
        },
        WalkItem::Error(WalkError::Io { path: p, source }) => WireItem::Io {
            path: bytes(&p),
            errno: source.raw_os_error(),
            message: source.to_string(),
        },
        WalkItem::Error(WalkError::Loop { path: p, ancestor }) => WireItem::Loop {
            path: bytes(&p),
            ancestor: bytes(&ancestor),
        },
        WalkItem::Error(WalkError::Other(m)) => WireItem::Other(m),
        WalkItem::Error(WalkError::Refused { path: p, reason }) => WireItem::Refused {
            path: bytes(&p),
            reason,
        },
        WalkItem::Excluded(x) => WireItem::Excluded {
            root: x.root as u32,
            path: bytes(&x.path),
            kind: x.kind.name().to_string(),
            size: x.size,
            pattern: x.why.pattern().map(str::to_string),
            holds: x.why.holds().map(|h| bytes(std::path::Path::new(h))),
        },
    }
}

/// What the read of one file found, for the wire (digests in the shard's algorithm order).
fn wire_read(r: ReadResult<'_>) -> WireRead {
    match r {
        ReadResult::Read {
            root,
            path: p,
            size,
            mtime_ns,
            dev,
            ino,
            digests,
            ..
        } => WireRead::Read {
            root: root as u32,
            path: bytes(p),
            size,
            mtime_ns,
            dev,
            ino,
            digests: digests.iter().map(|(_, d)| d.clone()).collect(),
        },
        ReadResult::Gone { path: p } => WireRead::Gone { path: bytes(p) },
        ReadResult::Failed { path: p, error } => WireRead::Failed {
            path: p.map(bytes),
            message: error.to_string(),
        },
    }
}

#[cfg(test)]
mod tests;
