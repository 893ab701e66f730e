//! The parallel directory walk: worker threads share a stack of directories to list; each lists
//! its directory as the kernel hands the entries over and passes every file on at once. Only
//! directories wait in the stack, never files, so a directory of 10^6 files is walked in a few
//! hundred KiB and its files are read while it is still being listed.
//!
//! Written here rather than taken from the `ignore` crate (ripgrep's walker, used before): that
//! walker queues every entry of a directory, files included, before visiting any, which costs
//! about 300 bytes per entry of the largest directory (300 MB for 10^6 files) and holds the
//! readers back until the listing ends.

use std::fs::{File, Metadata};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use trawl_read::Stage;
use trawl_stop::Stop;

use crate::walker::{Out, entry};
use crate::{Excluded, ExcludedKind, FileEntry, SkipKind, WalkError, WalkItem, WalkOptions};

/// A directory to list.
struct DirWork {
    path: PathBuf,
    /// With `follow_links`: the directories above it, to refuse a link back to one of them.
    ancestors: Option<Arc<Ancestor>>,
}

/// A directory on the way down from the root (device and inode), with its parent's.
struct Ancestor {
    dev: u64,
    ino: u64,
    parent: Option<Arc<Ancestor>>,
}

impl Ancestor {
    fn contains(self: &Arc<Self>, dev: u64, ino: u64) -> bool {
        let mut a = Some(self);
        while let Some(x) = a {
            if x.dev == dev && x.ino == ino {
                return true;
            }
            a = x.parent.as_ref();
        }
        false
    }
}

/// The directories waiting, and how many workers are listing one (the walk is over when none
/// waits and none is busy).
struct Queue {
    state: Mutex<State>,
    more: Condvar,
}

struct State {
    dirs: Vec<DirWork>,
    busy: usize,
    quit: bool,
}

impl Queue {
    fn new(dirs: Vec<DirWork>) -> Queue {
        Queue {
            state: Mutex::new(State {
                dirs,
                busy: 0,
                quit: false,
            }),
            more: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next directory to list; None when the walk is over.
    fn take(&self) -> Option<DirWork> {
        let mut s = self.lock();
        loop {
            if s.quit {
                return None;
            }
            if let Some(w) = s.dirs.pop() {
                s.busy += 1;
                return Some(w);
            }
            if s.busy == 0 {
                s.quit = true;
                self.more.notify_all();
                return None;
            }
            s = self.more.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn push(&self, w: DirWork) {
        self.lock().dirs.push(w);
        self.more.notify_one();
    }

    /// A worker finished a directory; `go_on` false ends the walk.
    fn done(&self, go_on: bool) {
        let mut s = self.lock();
        s.busy -= 1;
        if !go_on {
            s.quit = true;
        }
        if s.quit || (s.busy == 0 && s.dirs.is_empty()) {
            self.more.notify_all();
        }
    }
}

/// Held by a worker while it lists a directory: if the listing panics, the walk ends (as a
/// listing that says stop ends it), so that the other workers stop waiting for that directory's
/// end and the panic reaches the end of the workers' scope. Without it they waited for ever,
/// and so did the scan, whatever signal came.
struct EndsOnPanic<'a>(&'a Queue);

impl Drop for EndsOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.done(false);
        }
    }
}

/// Walks the directory `root` (the walk's root number `idx`) with `opts.threads` workers.
pub(crate) fn walk_dir(idx: usize, root: &Path, opts: &WalkOptions, out: &Out<'_>, stop: &Stop) {
    let ancestors = if opts.follow_links {
        std::fs::metadata(root).ok().map(|md| {
            Arc::new(Ancestor {
                dev: md.dev(),
                ino: md.ino(),
                parent: None,
            })
        })
    } else {
        None
    };
    let root_dev = if opts.one_file_system {
        std::fs::metadata(root).ok().map(|md| md.dev())
    } else {
        None
    };
    let q = Queue::new(vec![DirWork {
        path: root.to_path_buf(),
        ancestors,
    }]);
    let w = Walker {
        idx,
        root,
        opts,
        root_dev,
        q: &q,
        stop,
    };
    // A root holding an `--exclude-if-present` name is left out whole, unlisted.
    if let Some(x) = w.excluded(root, ExcludedKind::Directory, || None) {
        out.send(x);
        return;
    }
    std::thread::scope(|s| {
        for _ in 0..opts.threads.max(1) {
            s.spawn(|| {
                let _clock = out.stages.clock(Stage::Walk);
                let mut batcher = out.batcher();
                loop {
                    // Waiting for a directory to list (others are listing theirs).
                    let t = std::time::Instant::now();
                    let Some(dir) = w.q.take() else { break };
                    out.stages.add_wait(Stage::Walk, t.elapsed());
                    let listing = EndsOnPanic(w.q);
                    let go_on = w.list(dir, &mut |d| w.q.push(d), &mut |i| batcher.push(i));
                    drop(listing);
                    w.q.done(go_on);
                }
            });
        }
    });
}

struct Walker<'a> {
    idx: usize,
    /// The root, which the user's patterns match paths relative to.
    root: &'a Path,
    opts: &'a WalkOptions,
    root_dev: Option<u64>,
    q: &'a Queue,
    stop: &'a Stop,
}

/// One directory's entries, listed alone (a cluster's walk: each listing is a task).
pub struct Listing {
    /// Its files, skipped entries and errors, as the walk would send them.
    pub items: Vec<WalkItem>,
    /// Its subdirectories, to be listed in turn.
    pub dirs: Vec<PathBuf>,
}

/// Lists the directory `dir` under `root`, the walk's root number `idx`, as the walk lists each
/// of its directories (without `--follow`: links are skipped entries). `root_dev`: the root's
/// device under `--one-file-system` (a directory on another is not listed). The root itself
/// holding an `--exclude-if-present` name is one excluded item, not listed (the directories
/// below it are checked by their parents' listings).
pub fn list_directory(
    idx: usize,
    root: &Path,
    dir: &Path,
    opts: &WalkOptions,
    root_dev: Option<u64>,
    stop: &Stop,
) -> Listing {
    let opts = WalkOptions {
        follow_links: false,
        ..opts.clone()
    };
    let q = Queue::new(Vec::new());
    let w = Walker {
        idx,
        root,
        opts: &opts,
        root_dev,
        q: &q,
        stop,
    };
    let mut out = Listing {
        items: Vec::new(),
        dirs: Vec::new(),
    };
    if dir == root
        && let Some(x) = w.excluded(root, ExcludedKind::Directory, || None)
    {
        out.items.push(x);
        return out;
    }
    let work = DirWork {
        path: dir.to_path_buf(),
        ancestors: None,
    };
    w.list(work, &mut |d| out.dirs.push(d.path), &mut |i| {
        out.items.push(i);
        true
    });
    out
}

/// A directory's listing, and a descriptor of it to open its files by name in.
type OpenListing = (std::fs::ReadDir, Option<Arc<std::fs::File>>);

impl Walker<'_> {
    /// Lists one directory: files go out at once, directories onto the stack. False when the
    /// walk must end (stopped, or nobody takes the items any more).
    fn list(
        &self,
        dir: DirWork,
        push_dir: &mut dyn FnMut(DirWork),
        out: &mut dyn FnMut(WalkItem) -> bool,
    ) -> bool {
        let (rd, fd) = match self.open_listing(&dir) {
            Ok(Some(listing)) => listing,
            Ok(None) => return true,
            Err(item) => return out(item),
        };
        for ent in rd {
            if self.stop.is_stopping() {
                return false;
            }
            let ent = match ent {
                Ok(e) => e,
                // The listing itself failed part way: what was listed stands, the rest is
                // reported as not listed.
                Err(e) => return out(io_error(&dir.path, e)),
            };
            let path = ent.path();
            if self.opts.exclude.contains(&path) {
                continue;
            }
            let item = match ent.file_type() {
                Err(e) => Some(io_error(&path, e)),
                Ok(ft) if ft.is_dir() => {
                    if !self.directory(&dir, &ent, path, push_dir, out) {
                        return false;
                    }
                    None
                }
                Ok(ft) if ft.is_file() => {
                    let size = || ent.metadata().ok().map(|m| m.len());
                    match self.excluded(&path, ExcludedKind::File, size) {
                        Some(x) => Some(x),
                        None => Some(self.file(path, &fd, || ent.metadata())),
                    }
                }
                Ok(ft) if ft.is_symlink() && self.opts.follow_links => self.followed(&dir, path),
                Ok(ft) => {
                    let kind = SkipKind::of(&ft);
                    self.excluded(&path, ExcludedKind::Other(kind), || None)
                        .or(Some(WalkItem::Skipped { path, kind }))
                }
            };
            if let Some(item) = item
                && !out(item)
            {
                return false;
            }
        }
        true
    }

    /// The directory's listing and a descriptor of it to open its files by name in (where it
    /// opens: else by path); None for a directory on another file system than the root's
    /// (`one_file_system`), or the error item when it cannot be looked at or listed.
    fn open_listing(&self, dir: &DirWork) -> Result<Option<OpenListing>, WalkItem> {
        if let Some(dev) = self.root_dev {
            match std::fs::metadata(&dir.path) {
                Ok(md) if md.dev() != dev => return Ok(None),
                Ok(_) => {}
                Err(e) => return Err(io_error(&dir.path, e)),
            }
        }
        #[cfg(debug_assertions)]
        test_delay();
        let rd = std::fs::read_dir(&dir.path).map_err(|e| io_error(&dir.path, e))?;
        let fd = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(&dir.path)
            .ok()
            .map(Arc::new);
        Ok(Some((rd, fd)))
    }

    /// A directory found in `dir`: excluded (said so), or onto the stack with its ancestors
    /// when links are followed. False when the walk must end.
    fn directory(
        &self,
        dir: &DirWork,
        ent: &std::fs::DirEntry,
        path: PathBuf,
        push_dir: &mut dyn FnMut(DirWork),
        out: &mut dyn FnMut(WalkItem) -> bool,
    ) -> bool {
        if let Some(x) = self.excluded(&path, ExcludedKind::Directory, || None) {
            return out(x);
        }
        let ancestors = match &dir.ancestors {
            None => None,
            Some(a) => match ent.metadata() {
                Ok(md) => Some(child(a, &md)),
                Err(e) => return out(io_error(&path, e)),
            },
        };
        push_dir(DirWork { path, ancestors });
        true
    }

    /// The entry at `path` as an excluded item, if the user's rules leave it out (`size`: a
    /// regular file's, asked only then).
    fn excluded(
        &self,
        path: &Path,
        kind: ExcludedKind,
        size: impl FnOnce() -> Option<u64>,
    ) -> Option<WalkItem> {
        if self.opts.excluding.is_empty() {
            return None;
        }
        let rel = path.strip_prefix(self.root).unwrap_or(path);
        let why = self
            .opts
            .excluding
            .why(path, rel, kind == ExcludedKind::Directory)?;
        Some(WalkItem::Excluded(Excluded {
            path: path.to_path_buf(),
            root: self.idx,
            kind,
            size: if kind == ExcludedKind::File {
                size()
            } else {
                None
            },
            why,
        }))
    }

    /// A regular file: stat only when the walk is to say its size.
    fn file(
        &self,
        path: PathBuf,
        dir: &Option<Arc<File>>,
        stat: impl FnOnce() -> std::io::Result<Metadata>,
    ) -> WalkItem {
        if !self.opts.metadata {
            return WalkItem::File(FileEntry {
                path,
                root: self.idx,
                size: 0,
                dev: 0,
                ino: 0,
                mtime_ns: 0,
                dir: dir.clone(),
                open: None,
            });
        }
        match stat() {
            Ok(md) => WalkItem::File(FileEntry {
                dir: dir.clone(),
                ..entry(path, self.idx, &md)
            }),
            Err(e) => io_error(&path, e),
        }
    }

    /// A symbolic link under `--follow`: what it points to.
    fn followed(&self, dir: &DirWork, path: PathBuf) -> Option<WalkItem> {
        let md = match std::fs::metadata(&path) {
            Ok(md) => md,
            // Dangling: said so, with where it points.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let to = std::fs::read_link(&path).unwrap_or_default();
                let said = format!("dangling symbolic link to {}: nothing there", to.display());
                return Some(io_error(&path, std::io::Error::new(e.kind(), said)));
            }
            // A loop of links, or a target that cannot be looked at.
            Err(e) => return Some(io_error(&path, e)),
        };
        // Matched as what it leads to (a directory for `dir/` patterns).
        let kind = if md.is_dir() {
            ExcludedKind::Directory
        } else if md.is_file() {
            ExcludedKind::File
        } else {
            ExcludedKind::Other(SkipKind::of(&md.file_type()))
        };
        if let Some(x) = self.excluded(&path, kind, || Some(md.len())) {
            return Some(x);
        }
        if md.is_dir() {
            let a = dir.ancestors.as_ref().expect("following keeps ancestors");
            if a.contains(md.dev(), md.ino()) {
                return Some(WalkItem::Skipped {
                    path,
                    kind: SkipKind::SymlinkLoop,
                });
            }
            let ancestors = Some(child(a, &md));
            self.q.push(DirWork { path, ancestors });
            return None;
        }
        if md.is_file() {
            // Opened by its path (the link followed), not by its name in its directory, where
            // readers never follow a link.
            return Some(WalkItem::File(FileEntry {
                dir: None,
                ..entry(path, self.idx, &md)
            }));
        }
        Some(WalkItem::Skipped {
            path,
            kind: SkipKind::of(&md.file_type()),
        })
    }
}

/// Tests only (debug builds): `TRAWL_TEST_WALK_DELAY_MS` milliseconds before each directory is
/// listed, so that a test can watch a walk that takes a while.
#[cfg(debug_assertions)]
fn test_delay() {
    static DELAY: std::sync::OnceLock<Option<std::time::Duration>> = std::sync::OnceLock::new();
    let d = DELAY.get_or_init(|| {
        let ms = std::env::var("TRAWL_TEST_WALK_DELAY_MS")
            .ok()?
            .parse()
            .ok()?;
        Some(std::time::Duration::from_millis(ms))
    });
    if let Some(d) = d {
        std::thread::sleep(*d);
    }
}

fn child(parent: &Arc<Ancestor>, md: &Metadata) -> Arc<Ancestor> {
    Arc::new(Ancestor {
        dev: md.dev(),
        ino: md.ino(),
        parent: Some(Arc::clone(parent)),
    })
}

fn io_error(path: &Path, source: std::io::Error) -> WalkItem {
    WalkItem::Error(WalkError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod panic_tests {
    use super::*;

    /// A worker whose listing panics ends the walk: another worker waiting for a directory is
    /// told the walk is over, instead of waiting for ever for the panicked one to finish.
    #[test]
    fn a_worker_that_panics_while_listing_ends_the_walk_for_the_others() {
        let q = Arc::new(Queue::new(vec![DirWork {
            path: PathBuf::from("/"),
            ancestors: None,
        }]));
        let q1 = Arc::clone(&q);
        let panicked = std::thread::spawn(move || {
            let _dir = q1.take().expect("the root");
            let _listing = EndsOnPanic(&q1);
            panic!("a listing that panics (this panic is the test's)");
        });
        assert!(panicked.join().is_err());
        let (tx, rx) = std::sync::mpsc::channel();
        let q2 = Arc::clone(&q);
        std::thread::spawn(move || tx.send(q2.take().is_none()));
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(5)),
            Ok(true),
            "the other worker still waits"
        );
    }
}
