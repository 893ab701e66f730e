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
        let flow = item(match it {
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
            } => WalkItem::Error(WalkError::Io {
                path: path(p),
                source: match errno {
                    Some(n) => std::io::Error::from_raw_os_error(n),
                    None => std::io::Error::other(message),
                },
            }),
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
                kind: match kind.as_str() {
                    "directory" => ExcludedKind::Directory,
                    "file" => ExcludedKind::File,
                    k => ExcludedKind::Other(SkipKind::from_name(k).unwrap_or(SkipKind::Other)),
                },
                size,
                why: match (pattern, holds) {
                    (Some(p), _) => Why::Pattern(p),
                    (None, h) => Why::Holds(path(h.unwrap_or_default()).into_os_string()),
                },
            }),
        });
        if let ControlFlow::Break(e) = flow {
            return Err(e.into());
        }
    }
    Ok(())
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
        let items: Vec<WireItem> = l
            .items
            .into_iter()
            .map(|it| match it {
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
            })
            .collect();
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
                out.push(match r {
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
                })
            })
        })?;
        Ok(postcard::to_stdvec(&out).expect("reads encode"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(root: &Path) -> Worker {
        Worker::new(ScanConfig::new(vec![root.to_path_buf()]))
    }

    /// An audit's listing task keeps a scan's budget: directories depth first, and no more
    /// once its files are found (the audit's tasks once had no limit on files).
    #[test]
    fn an_audit_listing_task_stops_at_the_budget_a_scans_has() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["d0", "d1", "d2"] {
            std::fs::create_dir_all(root.join(d).join("deep")).unwrap();
            for f in ["x", "y", "z"] {
                std::fs::write(root.join(d).join(f), b"1").unwrap();
            }
        }
        let spec = WalkSpec {
            roots: vec![bytes(&root)],
            exclude: vec![],
        };
        let spec = postcard::to_stdvec(&spec).unwrap();
        let w = worker(&root);
        // Three files found (in d0): the task ends there, d0's subdirectory first in what is left.
        let files = ListBudget {
            dirs: 100,
            files: 3,
        };
        let (made, left) = w.list_task(&spec, 0, None, files).unwrap();
        // (in the order the directory lists them)
        assert_eq!(made.len(), 2, "the root, then its first directory");
        assert_eq!(left.len(), 3, "{left:?}");
        let first = left[0].parent().unwrap().to_path_buf();
        assert_eq!(left[0], first.join("deep"));
        let mut tops = vec![first, left[1].clone(), left[2].clone()];
        tops.sort();
        assert_eq!(tops, [root.join("d0"), root.join("d1"), root.join("d2")]);
        // The directories handed back are listed by the next task, in that order: the empty
        // `deep`, then the next directory (three files), whose `deep` comes before the last.
        let dirs = ListBudget {
            dirs: 2,
            files: 1000,
        };
        let (made, rest) = w.list_task(&spec, 0, Some(left.clone()), dirs).unwrap();
        assert_eq!(made.len(), 2);
        assert_eq!(rest, [left[1].join("deep"), left[2].clone()]);
    }

    /// A listing crosses the wire whole: files with their metadata, skipped entries with their
    /// kind, the subdirectories left, the entries the user's rules left out with their kind,
    /// size and reason; directories excluded by the spec are not listed.
    #[test]
    fn a_listing_comes_back_as_the_walk_gave_it() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), b"abc").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::create_dir(root.join("left-out")).unwrap();
        std::os::unix::fs::symlink("a", root.join("link")).unwrap();
        std::fs::write(root.join("x.tmp"), b"12345").unwrap();
        std::fs::create_dir(root.join("kept-out")).unwrap();
        std::fs::write(root.join("kept-out/.nobackup"), b"").unwrap();
        let spec = WalkSpec {
            roots: vec![bytes(&root)],
            exclude: vec![bytes(&root.join("left-out"))],
        };
        let spec = postcard::to_stdvec(&spec).unwrap();
        let one = ListBudget {
            dirs: 1,
            ..ListBudget::default()
        };
        let mut cfg = ScanConfig::new(vec![root.clone()]);
        let mut rules = trawl_walk::ExclusionBuilder::new();
        rules.pattern(std::ffi::OsStr::new("*.tmp")).unwrap();
        rules.if_present(std::ffi::OsStr::new(".nobackup")).unwrap();
        cfg.walk.excluding = rules.build().unwrap();
        let (b, dirs) = Worker::new(cfg).list_task(&spec, 0, None, one).unwrap();
        assert_eq!(dirs, vec![root.join("sub")]);
        let b = b.into_iter().next().unwrap();
        let mut got = Vec::new();
        take_listing(&b, &mut |it| {
            got.push(match it {
                WalkItem::File(f) => {
                    let md = std::fs::metadata(&f.path).unwrap();
                    assert_eq!((f.size, f.dev, f.ino), (3, md.dev(), md.ino()));
                    assert_eq!(f.mtime_ns, md.mtime() * 1_000_000_000 + md.mtime_nsec());
                    format!("file {}", f.path.display())
                }
                WalkItem::Skipped { path, kind } => format!("{} {}", kind.name(), path.display()),
                WalkItem::Error(e) => format!("error {e}"),
                WalkItem::Excluded(x) => format!(
                    "excluded {} {} {:?} {:?} {:?}",
                    x.kind.name(),
                    x.path.display(),
                    x.size,
                    x.why.pattern(),
                    x.why.holds()
                ),
            });
            ControlFlow::Continue(())
        })
        .unwrap();
        got.sort();
        let want = vec![
            format!(
                "excluded directory {} None None Some(\".nobackup\")",
                root.join("kept-out").display()
            ),
            format!(
                "excluded file {} Some(5) Some(\"*.tmp\") None",
                root.join("x.tmp").display()
            ),
            format!("file {}", root.join("a").display()),
            format!("symlink {}", root.join("link").display()),
        ];
        assert_eq!(got, want);
    }

    /// A shard's reads come back with the digests of the catalog's algorithms, in their
    /// order; a file gone since the walk comes back as gone.
    #[test]
    fn a_shards_reads_carry_the_digests_in_the_catalogs_order() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::write(root.join("a"), b"abc").unwrap();
        let (tx, rx) = bounded(4);
        for name in ["a", "gone"] {
            tx.send(FileEntry {
                path: root.join(name),
                root: 0,
                size: 3,
                dev: 0,
                ino: 0,
                mtime_ns: 0,
                dir: None,
                open: None,
            })
            .unwrap();
        }
        drop(tx);
        let algorithms = [Algorithm::Md5, Algorithm::Sha256];
        let feed = Feed {
            rx: Mutex::new(Some(rx)),
            algorithms: algorithms.to_vec(),
            roots: Vec::new(),
            stop: Stop::new(),
            files: 2,
            bytes: 6,
        };
        let shard = feed.next_shard(10, 1 << 20).unwrap();
        assert!(
            feed.next_shard(10, 1 << 20).is_none(),
            "the feed is drained"
        );
        let reads = worker(&root).read(&shard).unwrap();
        let mut got = Vec::new();
        take_reads(&reads, &algorithms, &trawl_scan::NoProgress, &mut |r| {
            got.push(match r {
                ReadResult::Read { path, digests, .. } => format!(
                    "{} {}",
                    path.display(),
                    digests
                        .iter()
                        .map(|(a, d)| format!("{}={}", a.name(), hex::encode(d)))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                ReadResult::Gone { path } => format!("gone {}", path.display()),
                ReadResult::Failed { error, .. } => format!("failed {error}"),
            })
        })
        .unwrap();
        got.sort();
        assert_eq!(
            got,
            vec![
                format!(
                    "{} md5=900150983cd24fb0d6963f7d28e17f72 sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                    root.join("a").display()
                ),
                format!("gone {}", root.join("gone").display()),
            ]
        );
    }
}
