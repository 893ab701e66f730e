//! Objects through the reading service: [`ObjectSource`] lists roots that are prefixes, turns
//! names into objects (a HeadObject each), and reads them as a pipeline of its own. An opener
//! thread starts each object's ranged reads on the runtime, once the memory budget has room
//! for what the object may hold at once; `threads` consumer threads take the objects in the
//! order they were opened and hand each piece to the object's lanes (a thread per lane for a
//! large object with several), the events going back to the caller's thread.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use crossbeam_channel::{Receiver, bounded};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use trawl_read::ReadError;
use trawl_scan::{
    Event, FileInfo, FileRecord, IoDepth, Lane, LaneFactory, LaneOutput, Listing, Outcome,
    Progress, Refusal, Resolve, ScanConfig, ScanError, Source,
};
use trawl_stop::Stop;
use trawl_walk::{Excluded, ExcludedKind, Exclusion, FileEntry, WalkError, WalkItem, Why};

use crate::depth::{Depth, MAX_DEPTH};
use crate::range::{Pieces, RANGE, Want, fetch, footprint};
use crate::{Listed, ObjectUrl, S3Error, Store, StoreFault};

/// The least memory the reads may hold, whatever the buffer pool's size: a few ranges of a
/// few large objects, and many small ones, in flight.
const MIN_BUDGET: u64 = 128 << 20;
/// The budget is counted in these (a semaphore's permits).
const UNIT: u64 = 4096;

/// Objects under prefixes of a store, read through the scan engine's lanes.
pub struct ObjectSource {
    store: Arc<Store>,
    roots: Vec<ObjectUrl>,
    /// The ETag each object named or listed had then, until it is read: every range of it is
    /// pinned to that version. Only objects on their way to the readers are held.
    pins: Mutex<HashMap<PathBuf, String>>,
    /// Whether a listing pins what it lists (a scan reads each at once; an audit reads later,
    /// some of them, and pins by the first answer instead).
    pin_listed: bool,
}

/// The device number every object has: no local file system's.
pub const OBJECT_DEV: u64 = u64::from_be_bytes(*b"trawl-s3");

/// The number an object has as its inode: a hash of its bucket and key, the same in every run
/// and for no other key (a catalog tells files apart by device and inode; a counter would give
/// another object the number a missing one had).
pub fn object_ino(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let d = trawl_digest::digest(trawl_digest::Algorithm::Xxh3, path.as_os_str().as_bytes());
    u64::from_be_bytes(d[..8].try_into().unwrap_or([0; 8]))
}

impl std::fmt::Debug for ObjectSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectSource")
            .field("roots", &self.roots)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An object's failure as the engine's read error, naming it.
pub(crate) fn read_error(path: &Path, e: S3Error) -> ReadError {
    let path = path.to_path_buf();
    match e.fault() {
        StoreFault::NotFound => ReadError::Vanished { path },
        StoreFault::Replaced => ReadError::Changed {
            path,
            detail: match e {
                S3Error::Request { message, .. } => message,
                e => e.to_string(),
            },
        },
        _ => ReadError::Read {
            path,
            source: std::io::Error::other(e),
        },
    }
}

impl ObjectSource {
    /// Objects under `roots` (each a bucket and prefix) of `store`.
    pub fn new(store: Arc<Store>, roots: Vec<ObjectUrl>) -> ObjectSource {
        ObjectSource {
            store,
            roots,
            pins: Mutex::new(HashMap::new()),
            pin_listed: true,
        }
    }

    /// As [`ObjectSource::new`], for reads some time after the listing (an audit's): what is
    /// listed is not pinned; each read is pinned to its first answer's version.
    pub fn reading_later(store: Arc<Store>, roots: Vec<ObjectUrl>) -> ObjectSource {
        ObjectSource {
            pin_listed: false,
            ..ObjectSource::new(store, roots)
        }
    }

    /// The roots, in order.
    pub fn roots(&self) -> &[ObjectUrl] {
        &self.roots
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, shared.
    pub fn store_arc(&self) -> Arc<Store> {
        self.store.clone()
    }

    /// The entry of an object as `l` gives it, its ETag pinned where listings pin.
    pub(crate) fn entry(&self, root: usize, url: &ObjectUrl, l: &Listed) -> FileEntry {
        let path = url.key_path(&l.key);
        if let Some(e) = l.etag.as_ref().filter(|_| self.pin_listed) {
            lock(&self.pins).insert(path.clone(), e.clone());
        }
        FileEntry {
            ino: object_ino(&path),
            path,
            root,
            size: l.size,
            dev: OBJECT_DEV,
            mtime_ns: l.mtime_ns,
            dir: None,
            open: None,
        }
    }

    /// Every object under every root, as the walk's items: a file for each key that is a
    /// plain name beneath its root, an error naming each key that is not (`a//b`, `../x`:
    /// never read under a name it does not have); "directory" markers (empty keys ending in
    /// `/`) are not objects of their own and are passed over. What `excluding`'s patterns
    /// match is an excluded item: a "directory" (a prefix of names) once, whole, as the walk of
    /// a disk leaves one, else the object. Ends where `found` breaks, at `stop`, or at the
    /// first root that cannot be listed (its error).
    pub fn walk(
        &self,
        excluding: &Exclusion,
        stop: &Stop,
        found: &mut dyn FnMut(WalkItem) -> ControlFlow<()>,
    ) -> Result<(), S3Error> {
        // The excluded "directories" said so far: each is said once (its keys come from
        // several listings at once, not one after another).
        let mut dirs_said = std::collections::HashSet::new();
        for (i, url) in self.roots.iter().enumerate() {
            let mut broke = false;
            self.store.list(url, stop, &mut |l| {
                let Some(item) = self.item(i, url, l, excluding, &mut dirs_said) else {
                    return ControlFlow::Continue(());
                };
                let r = found(item);
                broke = r.is_break();
                r
            })?;
            if broke || stop.is_stopping() {
                break;
            }
        }
        Ok(())
    }

    /// One key of root `i` as the walk's item (see [`ObjectSource::walk`]); None for a
    /// "directory" marker, or an excluded "directory" `dirs_said` holds already.
    fn item(
        &self,
        i: usize,
        url: &ObjectUrl,
        l: Listed,
        excluding: &Exclusion,
        dirs_said: &mut std::collections::HashSet<(usize, String)>,
    ) -> Option<WalkItem> {
        let name = if l.refused.is_some() {
            None
        } else {
            url.name_of(&l.key)
        };
        Some(match name {
            Some(rel) => match excluded_at(excluding, rel) {
                None => WalkItem::File(self.entry(i, url, &l)),
                Some((above, true, why)) => {
                    if !dirs_said.insert((i, above.to_string())) {
                        return None;
                    }
                    let key = format!("{}{above}", url.prefix());
                    WalkItem::Excluded(Excluded {
                        path: url.key_path(&key),
                        root: i,
                        kind: ExcludedKind::Directory,
                        size: None,
                        why,
                    })
                }
                Some((_, false, why)) => WalkItem::Excluded(Excluded {
                    path: url.key_path(&l.key),
                    root: i,
                    kind: ExcludedKind::File,
                    size: Some(l.size),
                    why,
                }),
            },
            None if l.refused.is_none() && l.key.ends_with('/') && l.size == 0 => return None,
            None if l.refused.is_some() => WalkItem::Error(WalkError::Other(format!(
                "{}: {}: not read",
                url.key_path(&l.key).display(),
                l.refused.unwrap_or_default()
            ))),
            None => WalkItem::Error(WalkError::Other(format!(
                "{}: a key that is not one plain name beneath {} (an empty, '.' or \
                 '..' segment, or a NUL): not read",
                url.key_path(&l.key).display(),
                url.root_path().display()
            ))),
        })
    }

    /// One level of root `root`'s keys: those directly under `prefix` (the root's prefix, or
    /// a "directory" below it, ending in `/`) as the walk's items, as [`ObjectSource::walk`]
    /// makes them, handed to `found`; returns the "directories" under it to list next, as
    /// keys' prefixes (ending in `/`). One that `excluding`'s patterns match is not listed:
    /// it is an excluded item, once, as the walk of a disk leaves a directory. A level's
    /// listing that fails is the error returned (what it found before is handed on).
    pub fn list_level(
        &self,
        root: usize,
        prefix: &str,
        excluding: &Exclusion,
        found: &mut dyn FnMut(WalkItem),
    ) -> Result<Vec<String>, S3Error> {
        let Some(url) = self.roots.get(root) else {
            return Ok(Vec::new());
        };
        let mut said = std::collections::HashSet::new();
        let subs = self.store.list_level(url, prefix, &mut |l| {
            if let Some(item) = self.item(root, url, l, excluding, &mut said) {
                found(item);
            }
        })?;
        let mut next = Vec::with_capacity(subs.len());
        for sub in subs {
            if !sub.starts_with(prefix) || sub.len() == prefix.len() {
                // Never listed: what the store named is not below the level asked for.
                found(WalkItem::Error(WalkError::Other(format!(
                    "{}: a common prefix not below {prefix}, in its listing: not listed",
                    url.key_path(&sub).display()
                ))));
                continue;
            }
            // A "directory" with no plain name (`a//`) is listed on: its keys are named as
            // errors, or passed over as markers, as the whole prefix's listing names them.
            let rel = url.name_of(sub.strip_suffix('/').unwrap_or(&sub));
            let why = rel.and_then(|r| excluding.matched(Path::new(r), true));
            match (rel, why) {
                (Some(rel), Some(p)) => found(WalkItem::Excluded(Excluded {
                    path: url.key_path(&format!("{}{rel}", url.prefix())),
                    root,
                    kind: ExcludedKind::Directory,
                    size: None,
                    why: Why::Pattern(p.to_string()),
                })),
                _ => next.push(sub),
            }
        }
        Ok(next)
    }
}

/// Where `excluding`'s patterns leave out the object named `rel` below its root: the topmost
/// "directory" above it they match (nothing below an excluded directory is taken back, as in
/// the walk of a disk), else the object itself; with whether it is a directory, and why.
fn excluded_at<'r>(excluding: &Exclusion, rel: &'r str) -> Option<(&'r str, bool, Why)> {
    if excluding.is_empty() {
        return None;
    }
    let ends = rel
        .match_indices('/')
        .map(|(at, _)| at)
        .chain(std::iter::once(rel.len()));
    for end in ends {
        let above = &rel[..end];
        let is_dir = end < rel.len();
        if let Some(p) = excluding.matched(Path::new(above), is_dir) {
            return Some((above, is_dir, Why::Pattern(p.to_string())));
        }
    }
    None
}

impl Listing for ObjectSource {
    fn list(
        &self,
        excluding: &Exclusion,
        stop: &Stop,
        found: &mut dyn FnMut(WalkItem) -> ControlFlow<()>,
    ) {
        if let Err(e) = self.walk(excluding, stop, found) {
            let _ = found(WalkItem::Error(WalkError::Other(e.to_string())));
        }
    }
}

impl Source for ObjectSource {
    fn resolver(&self) -> Box<dyn Resolve + '_> {
        Box::new(Named { source: self })
    }

    fn read(
        &self,
        cfg: &ScanConfig,
        lanes: &dyn LaneFactory,
        progress: &dyn Progress,
        stop: &Stop,
        entries: Receiver<FileEntry>,
        sink: &mut dyn FnMut(Event),
    ) {
        let depth = Arc::new(Depth::new(match cfg.io_depth {
            IoDepth::Fixed(n) => Some(n),
            IoDepth::Auto => None,
        }));
        let pool = (cfg.buffers as u64).saturating_mul(cfg.buffer_size as u64);
        let units = pool.max(MIN_BUDGET) / UNIT;
        let budget = Arc::new(Semaphore::new(units as usize));
        let (open_tx, open_rx) = bounded::<Opened>(MAX_DEPTH);
        let (ev_tx, ev_rx) = bounded::<Event>(64);
        let store = &self.store;
        // The large objects under way, which decides which may spread.
        let spread = &trawl_scan::Spread::default();
        std::thread::scope(|s| {
            let (depth, budget) = (&depth, &budget);
            s.spawn(move || {
                for e in entries {
                    if stop.is_stopping() {
                        break;
                    }
                    let need = (footprint(e.size).div_ceil(UNIT)).min(units) as u32;
                    let Ok(held) = store.rt.block_on(budget.clone().acquire_many_owned(need))
                    else {
                        break;
                    };
                    let Some(want) = self.want(&e) else {
                        continue;
                    };
                    let pieces = fetch(store, depth.clone(), want);
                    if open_tx
                        .send(Opened {
                            entry: e,
                            pieces,
                            _held: held,
                        })
                        .is_err()
                    {
                        break;
                    }
                }
            });
            for _ in 0..cfg.threads.max(1) {
                let (open_rx, ev_tx) = (open_rx.clone(), ev_tx.clone());
                s.spawn(move || {
                    for o in open_rx.iter() {
                        if stop.is_stopping() {
                            continue;
                        }
                        let ev = consume(o, (lanes, cfg.threads, spread), progress, stop);
                        progress.file_done();
                        let Some(ev) = ev else {
                            continue;
                        };
                        if ev_tx.send(ev).is_err() {
                            break;
                        }
                    }
                });
            }
            drop((open_rx, ev_tx));
            for ev in ev_rx {
                sink(ev);
            }
        });
    }
}

impl ObjectSource {
    /// What to ask the store for `e` (None: not an object of this source's).
    fn want(&self, e: &FileEntry) -> Option<Want> {
        let p = e.path.to_str()?;
        let (bucket, key) = p.strip_prefix("s3://")?.split_once('/')?;
        Some(Want {
            bucket: bucket.to_string(),
            key: key.to_string(),
            path: p.to_string(),
            size: e.size,
            etag: lock(&self.pins).remove(&e.path),
        })
    }
}

/// An object whose reads have started, with its share of the memory budget.
struct Opened {
    entry: FileEntry,
    pieces: Pieces,
    _held: OwnedSemaphorePermit,
}

/// Reads one opened object through its lanes: its record, its failure, or None where the run
/// stopped.
fn consume(
    o: Opened,
    (factory, threads, spread): (&dyn LaneFactory, usize, &trawl_scan::Spread),
    progress: &dyn Progress,
    stop: &Stop,
) -> Option<Event> {
    let Opened {
        entry, mut pieces, ..
    } = o;
    let size = entry.size;
    progress.start_file(&entry.path, size);
    // Counted as under way until its lanes are done.
    let spreading = spread.begin(size, RANGE, threads);
    let lanes = factory.lanes(&FileInfo {
        path: &entry.path,
        size,
        spread: spreading.yes,
        dev: entry.dev,
        ino: entry.ino,
        nlink: 1,
    });
    let mut next = || pieces.blocking_recv();
    let read = if lanes.len() > 1 && size > RANGE {
        fan_out(lanes, &mut next, progress, stop)
    } else {
        in_turn(lanes, &mut next, progress, stop)
    };
    let outputs = match read {
        Ok(Some(o)) => o,
        Ok(None) => return None,
        Err(e) => return Some(Event::Failed(ScanError::Read(read_error(&entry.path, e)))),
    };
    Some(Event::File(FileRecord {
        path: entry.path,
        root: entry.root,
        size,
        mtime_sec: entry.mtime_ns.div_euclid(1_000_000_000),
        mtime_nsec: entry.mtime_ns.rem_euclid(1_000_000_000),
        dev: entry.dev,
        ino: entry.ino,
        ctime_ns: 0,
        nlink: 1,
        disk_bytes: size,
        outputs,
    }))
}

type Next<'a> = dyn FnMut() -> Option<Result<Bytes, S3Error>> + 'a;

/// Every piece through every lane on this thread.
fn in_turn(
    mut lanes: Vec<Box<dyn Lane>>,
    next: &mut Next<'_>,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Option<Vec<LaneOutput>>, S3Error> {
    while let Some(p) = next() {
        let p = p?;
        for l in lanes.iter_mut() {
            l.update(&p);
        }
        progress.read(p.len() as u64);
        if stop.is_stopping() {
            return Ok(None);
        }
    }
    Ok(Some(lanes.into_iter().map(|l| l.finish()).collect()))
}

/// A thread per lane, each piece shared with all of them (several digests of a large object
/// on several cores).
fn fan_out(
    lanes: Vec<Box<dyn Lane>>,
    next: &mut Next<'_>,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Option<Vec<LaneOutput>>, S3Error> {
    std::thread::scope(|s| {
        let mut txs = Vec::with_capacity(lanes.len());
        let mut handles = Vec::with_capacity(lanes.len());
        for mut lane in lanes {
            let (tx, rx) = bounded::<Bytes>(2);
            txs.push(tx);
            handles.push(s.spawn(move || {
                for p in rx {
                    lane.update(&p);
                }
                lane
            }));
        }
        let mut result = Ok(true);
        while let Some(p) = next() {
            match p {
                Ok(p) => {
                    for tx in &txs {
                        // A lane's thread ends early only by panicking, which the join
                        // below carries on.
                        let _ = tx.send(p.clone());
                    }
                    progress.read(p.len() as u64);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
            if stop.is_stopping() {
                result = Ok(false);
                break;
            }
        }
        drop(txs);
        let lanes: Vec<Box<dyn Lane>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        match result {
            Ok(true) => Ok(Some(lanes.into_iter().map(|l| l.finish()).collect())),
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        }
    })
}

/// Names under the roots turned into objects: one HeadObject each, which also pins the
/// version to be read.
struct Named<'a> {
    source: &'a ObjectSource,
}

impl Resolve for Named<'_> {
    fn entry(&mut self, root: usize, rel: &[u8]) -> Result<FileEntry, Outcome> {
        let s = self.source;
        let Some(url) = s.roots.get(root) else {
            return Err(Outcome::Gone(PathBuf::from(
                String::from_utf8_lossy(rel).into_owned(),
            )));
        };
        let Some(key) = url.key_of(rel) else {
            let mut path = url.root_path().into_os_string();
            path.push("/");
            path.push(std::ffi::OsStr::new(&*String::from_utf8_lossy(rel)));
            return Err(Outcome::Refused {
                path: PathBuf::from(path),
                why: Refusal::NotPlain,
            });
        };
        let path = url.key_path(&key);
        match s.store.stored(url, &key) {
            Ok(st) => Ok(s.entry(
                root,
                url,
                &Listed {
                    key,
                    size: st.size,
                    etag: st.etag,
                    mtime_ns: st.mtime_ns,
                    refused: None,
                },
            )),
            Err(e) if e.fault() == StoreFault::NotFound => Err(Outcome::Gone(path)),
            Err(e) => Err(Outcome::Failed(ScanError::Read(read_error(&path, e)))),
        }
    }

    fn known(&mut self, e: FileEntry) -> Result<FileEntry, Outcome> {
        Ok(e)
    }
}
