//! The scan engine: walk -> pooled reads -> per-file consumer lanes, as one visible pipeline.
//!
//! Stages are threads joined by bounded channels: the walker (itself parallel) feeds a queue of
//! files; `threads` workers each open a file and read it into buffers from one bounded pool; a
//! file that fits in one buffer is consumed right there (small files spread over the workers), a
//! larger one is fanned out to one thread per lane (each lane a digest today; data-reduction and
//! media consumers tomorrow), all sharing each buffer read-only, so that reading overlaps consuming
//! and independent lanes run on different cores. Results go over a bounded channel to the caller's
//! sink, on the caller's thread.

//!
//! The face: [`scan`] runs a [`ScanConfig`] over an [`Input`] with the lanes a [`LaneFactory`]
//! makes ([`DigestLanes`] for digests alone), telling [`Progress`] and the caller's sink each
//! [`Event`]; [`IoDepth`] and [`ReadOrder`] steer the reads, [`RelativeEntries`] makes the entries
//! of files named relative to a root (a manifest's, a bag's, a catalog's), and [`read_named`] is
//! the reading service: named files read once each through a [`Source`] ([`LocalRoots`]),
//! each answered with an [`Outcome`].
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod depth;
mod lane;
mod named;
#[cfg(debug_assertions)]
mod open_log;
mod order;
mod progress;
mod rate;
mod relative;

pub use depth::{IoDepth, MAX_READERS, waited_on_a_lock};
pub use lane::{DigestLanes, FileInfo, Lane, LaneFactory, LaneOutput, fill_cores};
pub use named::{
    Feeder, IN_FLIGHT, Links, LocalRoots, Outcome, Reading, Refusal, Refused, Resolve, Source,
    read_named,
};
pub use order::ReadOrder;
pub use progress::{NoProgress, Progress};
pub use relative::{NotBeneath, RelativeEntries};

use std::path::PathBuf;
use std::sync::Arc;
use trawl_stop::Stop;

use crossbeam_channel::{Sender, bounded};
use trawl_read::{BufferPool, Chunk, ChunkSource, IoMethod, ReadError, open_for_read_in};
use trawl_walk::{BATCH, Excluded, FileEntry, SkipKind, WalkError, WalkItem, WalkOptions};

/// Everything the engine needs to know.
#[derive(Debug, Clone)]
pub struct ScanConfig {
    /// Where to walk (or what the files are named under, with [`Input::Files`]).
    pub roots: Vec<PathBuf>,
    /// How to walk.
    pub walk: WalkOptions,
    /// Compute threads (`-j`): the readers that keep this many cores busy, and the lanes' and
    /// the reduction's parallelism.
    pub threads: usize,
    /// Files read at once: steered by the device by default, or fixed (`--io-depth`); see
    /// [`IoDepth`].
    pub io_depth: IoDepth,
    /// In which order the listed files are read (`--read-order`); see [`ReadOrder`].
    pub read_order: ReadOrder,
    /// How bytes come in (`--io`).
    pub io: IoMethod,
    /// Bytes in each pooled buffer.
    pub buffer_size: usize,
    /// Buffers in the pool; bounds memory at `buffers * buffer_size`.
    pub buffers: usize,
    /// Read at most this many bytes per second, all readers together (`--limit-rate`).
    pub rate_limit: Option<u64>,
}

impl ScanConfig {
    /// Defaults for `roots`: a reader and a lane per core, reads steered by the device.
    pub fn new(roots: Vec<PathBuf>) -> ScanConfig {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        ScanConfig {
            roots,
            walk: WalkOptions {
                threads: threads.min(8),
                ..WalkOptions::default()
            },
            threads,
            io_depth: IoDepth::Auto,
            read_order: ReadOrder::Auto,
            io: IoMethod::Auto,
            buffer_size: 1 << 20,
            buffers: threads * 4 + 4,
            rate_limit: None,
        }
    }
}

/// One file fully read.
#[derive(Debug)]
pub struct FileRecord {
    /// The file as found.
    pub path: PathBuf,
    /// Which root it was found under.
    pub root: usize,
    /// Bytes read.
    pub size: u64,
    /// Modification time: seconds since the epoch.
    pub mtime_sec: i64,
    /// And nanoseconds.
    pub mtime_nsec: i64,
    /// Device and inode, as read (identifies the file whatever path reached it).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Names of the inode (more than 1: hard links).
    pub nlink: u64,
    /// Bytes it takes on disk (`st_blocks` x 512), as `du` counts them.
    pub disk_bytes: u64,
    /// What each lane made of it.
    pub outputs: Vec<LaneOutput>,
}

impl FileRecord {
    /// The digests computed, in lane order.
    pub fn digests(&self) -> Vec<(trawl_digest::Algorithm, Vec<u8>)> {
        self.outputs
            .iter()
            .filter_map(|o| o.digest().map(|(a, d)| (a, d.to_vec())))
            .collect()
    }
}

/// A failure during the scan, naming the path.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// The walk failed on a path.
    #[error(transparent)]
    Walk(#[from] WalkError),
    /// A file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
}

impl ScanError {
    /// The failure's kind as reports name it (`walk`, `symlink-loop`, or the read's).
    pub fn kind(&self) -> &'static str {
        match self {
            ScanError::Walk(WalkError::Loop { .. }) => "symlink-loop",
            ScanError::Walk(_) => "walk",
            ScanError::Read(r) => r.kind(),
        }
    }

    /// The path concerned, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            ScanError::Walk(w) => w.path(),
            ScanError::Read(r) => Some(r.path()),
        }
    }
}

/// What the sink receives, in no particular order.
#[derive(Debug)]
pub enum Event {
    /// A file read to its end.
    File(FileRecord),
    /// An entry not read, and why.
    Skipped {
        /// The path concerned.
        path: PathBuf,
        /// What it is.
        kind: SkipKind,
    },
    /// A file or directory that failed.
    Failed(ScanError),
    /// An entry the user's rules left out (`--exclude`); a directory was not listed.
    Excluded(Excluded),
}

/// What to read.
#[derive(Debug, Clone)]
pub enum Input<'a> {
    /// Walk `cfg.roots`.
    Walk,
    /// Exactly these files (symlinks followed), e.g. the entries of a manifest being verified.
    /// A path that does not exist yields a [`ReadError::Vanished`] failure.
    Files(&'a [PathBuf]),
    /// Files fed by the caller (e.g. an audit's plan, in the order it chose), until the sender
    /// is dropped. The caller announces totals to the progress bar itself.
    Stream(crossbeam_channel::Receiver<FileEntry>),
}

/// Runs the scan; `sink` is called on this thread for every event. Returns early, with the
/// events so far delivered, when `stop` is set.
pub fn scan(
    cfg: &ScanConfig,
    input: Input<'_>,
    lanes: &dyn LaneFactory,
    progress: &dyn Progress,
    stop: &Stop,
    sink: &mut dyn FnMut(Event),
) {
    let depth = depth::Depth::new(cfg.io_depth, cfg.threads);
    // The compute threads' share of buffers, and one more for each reader let in past them
    // (made when the readers are: see `grow_to` below).
    let base = cfg.buffers.max(cfg.threads + 1);
    let extra = |limit: usize| base + limit.saturating_sub(cfg.threads);
    let pool = BufferPool::growable(
        extra(depth.limit()),
        extra(depth.readers()),
        cfg.buffer_size,
    );
    let limiter = cfg.rate_limit.map(rate::RateLimiter::new);
    let throttled;
    let progress: &dyn Progress = match &limiter {
        Some(l) => {
            throttled = rate::Throttled {
                inner: progress,
                limiter: l,
            };
            &throttled
        }
        None => progress,
    };
    // The walk's channel is deep enough for the walk to run well ahead of the readers (the
    // progress bar's ETA needs the total), bounded so that a huge tree does not pile up in
    // memory. Unless the order is the walk's, `order` passes the files on to the readers' own
    // channel, which holds one window. Files travel in batches (`trawl_walk::BATCH`) both
    // ways: a message per small file made the channels' locking, spinning and waking a large
    // part of its cost.
    let (listed_tx, listed_rx) = bounded::<Vec<WalkItem>>(16 * 1024 / BATCH);
    let (walk_tx, walk_rx) = match cfg.read_order {
        ReadOrder::Walk => (None, listed_rx.clone()),
        _ => {
            let (tx, rx) = bounded::<Vec<WalkItem>>(order::WINDOW / BATCH);
            (Some(tx), rx)
        }
    };
    let (ev_tx, ev_rx) = bounded::<Vec<Event>>(1024 / BATCH);
    let depth = &depth;
    std::thread::scope(|s| {
        if let Some(walk_tx) = walk_tx {
            s.spawn(move || {
                order::pass_on(
                    cfg.read_order,
                    &listed_rx,
                    &walk_tx,
                    cfg.threads,
                    depth,
                    stop,
                )
            });
        } else {
            drop(listed_rx);
        }
        let walk_tx = listed_tx;
        s.spawn(move || {
            let observe = |item: &WalkItem| {
                if let WalkItem::File(f) = item {
                    progress.found(1, f.size);
                }
            };
            match input {
                Input::Walk => {
                    trawl_walk::walk_batched(&cfg.roots, &cfg.walk, &walk_tx, stop, &observe)
                }
                Input::Files(paths) => list_files(paths, &walk_tx, stop, &observe),
                Input::Stream(rx) => {
                    // Sent as they come when the feeder is slower than the readers, in batches
                    // when it is ahead.
                    let mut batch = Vec::new();
                    for f in rx.iter() {
                        batch.push(WalkItem::File(f));
                        while batch.len() < BATCH
                            && let Ok(f) = rx.try_recv()
                        {
                            batch.push(WalkItem::File(f));
                        }
                        let full = std::mem::take(&mut batch);
                        if stop.is_stopping() || walk_tx.send(full).is_err() {
                            break;
                        }
                    }
                }
            }
            progress.walk_done();
        });
        let pool = &pool;
        // One reader: takes batches while it is let in (see `depth`), reads each file through
        // its lanes, and says what the batch cost it.
        let reader = move |i: usize,
                           walk_rx: crossbeam_channel::Receiver<Vec<WalkItem>>,
                           ev_tx: Sender<Vec<Event>>| {
            'batches: while depth.admit(i, &|| stop.is_stopping()) {
                let Ok(batch) = walk_rx.recv() else {
                    depth.finish();
                    break;
                };
                let (t, cpu) = (std::time::Instant::now(), trawl_read::thread_cpu_time());
                let mut waited = std::time::Duration::ZERO;
                depth::take_lock_waits();
                let mut events = Vec::with_capacity(batch.len());
                for item in batch {
                    if stop.is_stopping() {
                        break 'batches;
                    }
                    events.push(match item {
                        WalkItem::File(f) => {
                            match read_file(&f, cfg.io, pool, lanes, progress, stop, &mut waited) {
                                Ok(Some(rec)) => Event::File(rec),
                                Ok(None) => break 'batches,
                                Err(e) => Event::Failed(e.into()),
                            }
                        }
                        WalkItem::Skipped { path, kind } => Event::Skipped { path, kind },
                        WalkItem::Error(e) => Event::Failed(e.into()),
                        WalkItem::Excluded(x) => Event::Excluded(x),
                    });
                }
                match ev_tx.try_send(events) {
                    Ok(()) => {}
                    Err(crossbeam_channel::TrySendError::Full(events)) => {
                        let sent = std::time::Instant::now();
                        if ev_tx.send(events).is_err() {
                            break;
                        }
                        waited += sent.elapsed();
                    }
                    Err(crossbeam_channel::TrySendError::Disconnected(_)) => break,
                }
                waited += depth::take_lock_waits();
                depth.record(t.elapsed(), trawl_read::thread_cpu_time() - cpu, waited);
            }
        };
        // Readers are started as they are let in: a warm scan never starts more than `-j`.
        // The channels' ends kept here for them go once the walk is drained or the scan stops,
        // so that the results' channel then closes with the last reader.
        let mut spawner = Some((walk_rx, ev_tx));
        let mut started = 0;
        loop {
            if let Some((w, e)) = &spawner {
                while started < depth.limit() {
                    let (w, e, i) = (w.clone(), e.clone(), started);
                    s.spawn(move || reader(i, w, e));
                    started += 1;
                }
            }
            match ev_rx.recv_timeout(depth::STEP) {
                Ok(events) => {
                    for ev in events {
                        if !matches!(ev, Event::Skipped { .. } | Event::Excluded(_)) {
                            progress.file_done();
                        }
                        sink(ev);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
            depth.step();
            pool.grow_to(extra(depth.limit()));
            if depth.is_done() || stop.is_stopping() {
                spawner = None;
            }
        }
        depth.finish();
    });
}

fn list_files(
    paths: &[PathBuf],
    tx: &Sender<Vec<WalkItem>>,
    stop: &Stop,
    observe: &(dyn Fn(&WalkItem) + Sync),
) {
    let mut batch = Vec::with_capacity(BATCH);
    for path in paths {
        if stop.is_stopping() {
            return;
        }
        let item = WalkItem::File(FileEntry::named(path));
        observe(&item);
        batch.push(item);
        if batch.len() == BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
            return;
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
}

/// Reads one file through its lanes. `Ok(None)` means the scan was cancelled. `waited` gains
/// the time this thread spent waiting on the consumers (a free buffer, a lane's channel).
fn read_file(
    entry: &FileEntry,
    io: IoMethod,
    pool: &BufferPool,
    factory: &dyn LaneFactory,
    progress: &dyn Progress,
    stop: &Stop,
    waited: &mut std::time::Duration,
) -> Result<Option<FileRecord>, ReadError> {
    #[cfg(debug_assertions)]
    open_log::opening(&entry.path);
    let opened = match &entry.open {
        Some(open) => trawl_read::open_for_read_with((open.0)(), &entry.path)?,
        None => open_for_read_in(entry.dir.as_deref(), &entry.path)?,
    };
    let stamp = opened.stamp;
    let nlink = opened.nlink;
    let disk_bytes = opened.disk_bytes;
    progress.start_file(&entry.path, stamp.size);
    // `auto` (which the source resolves by size) maps a large file only where its lanes keep
    // every core busy (`LaneFactory::busy_cores`); asked only for files it could map.
    let io = match io {
        IoMethod::Auto if stamp.size >= trawl_read::AUTO_MAP_MIN && !factory.busy_cores() => {
            IoMethod::Read
        }
        io => io,
    };
    let mut src = ChunkSource::new(opened, pool, io);
    let large = stamp.size > pool.buffer_size() as u64;
    let mut lanes = factory.lanes(&FileInfo {
        path: &entry.path,
        size: stamp.size,
        large,
        dev: stamp.dev,
        ino: stamp.ino,
        nlink,
    });
    src.share_windows(lanes.iter().filter(|l| l.reads_all()).count());
    let outputs = if !large || lanes.is_empty() {
        // Fits in one buffer (or nothing consumes it): consume on this thread.
        while let Some(chunk) = src.next_chunk()? {
            for l in lanes.iter_mut() {
                l.update(&chunk);
            }
            progress.read(chunk.len() as u64);
            if stop.is_stopping() {
                return Ok(None);
            }
        }
        lanes.into_iter().map(|l| l.finish()).collect()
    } else {
        match fan_out(&mut src, lanes, progress, stop, waited)? {
            Some(o) => o,
            None => return Ok(None),
        }
    };
    *waited += src.waited();
    src.finish()?;
    Ok(Some(FileRecord {
        path: entry.path.clone(),
        root: entry.root,
        size: stamp.size,
        mtime_sec: stamp.mtime_sec,
        mtime_nsec: stamp.mtime_nsec,
        dev: stamp.dev,
        ino: stamp.ino,
        nlink,
        disk_bytes,
        outputs,
    }))
}

/// This thread reads; each lane consumes on its own thread from a bounded channel of shared
/// chunks (readers and digesters apart, with several digesters per file).
///
/// A mapped window is unmapped by this thread, not by the lane that drops it last: that lane
/// hands it back (the `unmap` channel) and this thread drops it while the lanes go on with the
/// next windows. Unmapping a window takes about a millisecond; on the last lane, between two
/// windows, it left the other cores idle (docs/decisions/0010).
fn fan_out(
    src: &mut ChunkSource<'_>,
    lanes: Vec<Box<dyn Lane>>,
    progress: &dyn Progress,
    stop: &Stop,
    waited: &mut std::time::Duration,
) -> Result<Option<Vec<LaneOutput>>, ReadError> {
    // Windows handed back and not yet unmapped: at most one per window in flight, so a full
    // channel is unlikely; a lane that finds it full unmaps the window itself.
    let (unmap_tx, unmap_rx) = bounded::<Chunk>(16);
    // Set once the file was read to its end: a lane whose file failed or was stopped part way
    // is dropped, not finished, so that nothing of it is counted (a reduction lane folds its
    // file into the shared counts when it finishes).
    let whole = std::sync::atomic::AtomicBool::new(false);
    let whole = &whole;
    std::thread::scope(|s| {
        let mut txs: Vec<Sender<Arc<Chunk>>> = Vec::with_capacity(lanes.len());
        let mut handles = Vec::with_capacity(lanes.len());
        for mut lane in lanes {
            let (tx, rx) = bounded::<Arc<Chunk>>(4);
            txs.push(tx);
            let unmap = unmap_tx.clone();
            handles.push(s.spawn(move || {
                for chunk in rx {
                    lane.update(&chunk);
                    // The last holder of a window hands it back; pool buffers go back to the
                    // pool here, as they are dropped.
                    if let Some(c @ Chunk::Map(_)) = Arc::into_inner(chunk) {
                        let _ = unmap.try_send(c);
                    }
                }
                drop(unmap);
                whole
                    .load(std::sync::atomic::Ordering::SeqCst)
                    .then(|| lane.finish())
            }));
        }
        drop(unmap_tx);
        let mut result = Ok(Some(()));
        loop {
            if stop.is_stopping() {
                result = Ok(None);
                break;
            }
            while unmap_rx.try_recv().is_ok() {}
            match src.next_chunk() {
                Ok(Some(chunk)) => {
                    let n = chunk.len() as u64;
                    let chunk = Arc::new(chunk);
                    let t = std::time::Instant::now();
                    for tx in &txs {
                        // Waiting for room in a lane's channel, unmap what comes back. A lane
                        // thread only stops early by panicking (the send then fails at once),
                        // which propagates at join.
                        loop {
                            crossbeam_channel::select! {
                                send(tx, Arc::clone(&chunk)) -> _ => break,
                                recv(unmap_rx) -> _window => {}
                            }
                        }
                    }
                    *waited += t.elapsed();
                    progress.read(n);
                }
                Ok(None) => break,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if matches!(result, Ok(Some(()))) {
            whole.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        drop(txs);
        // Until every lane has let go of its channel end.
        for _window in unmap_rx.iter() {}
        let outputs: Vec<Option<LaneOutput>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        result.map(|r| r.map(|()| outputs.into_iter().flatten().collect()))
    })
}
