//! One file read through its lanes: consumed on the reader's thread when it fits in one
//! buffer, else fanned out to a thread per lane sharing each buffer read-only.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_channel::{Receiver, Sender, bounded};
use trawl_read::open_for_read_in;
use trawl_read::{BufferPool, Chunk, ChunkSource, IoMethod, OpenedFile, ReadError, Stage, Stages};
use trawl_stop::Stop;
use trawl_walk::FileEntry;

use crate::{FileInfo, FileRecord, Lane, LaneFactory, LaneOutput, Progress, ScanConfig, Spread};

/// Reads one file through its lanes. `Ok(None)` means the scan was cancelled. `waited` gains
/// the time this thread spent waiting on the consumers (a free buffer, a lane's channel).
pub(crate) fn read_file(
    entry: &FileEntry,
    cfg: &ScanConfig,
    (pool, spread): (&BufferPool, &Spread),
    factory: &dyn LaneFactory,
    progress: &dyn Progress,
    stop: &Stop,
    waited: &mut std::time::Duration,
) -> Result<Option<FileRecord>, ReadError> {
    let opened = open(entry)?;
    let stamp = opened.stamp;
    let nlink = opened.nlink;
    let disk_bytes = opened.disk_bytes;
    progress.start_file(&entry.path, stamp.size);
    let large = stamp.size > pool.buffer_size() as u64;
    // Counted as under way until its lanes are done.
    let spreading = spread.begin(stamp.size, pool.buffer_size() as u64, cfg.threads);
    let info = FileInfo {
        path: &entry.path,
        size: stamp.size,
        spread: spreading.yes,
        dev: stamp.dev,
        ino: stamp.ino,
        nlink,
    };
    // `auto` (which the source resolves by size) maps a large file only where its lanes keep
    // every core busy (`LaneFactory::busy_cores`); asked only for files it could map.
    let io = match cfg.io {
        IoMethod::Auto if stamp.size >= trawl_read::AUTO_MAP_MIN && !factory.busy_cores(&info) => {
            IoMethod::Read
        }
        io => io,
    };
    let mut src = ChunkSource::new(opened, pool, io);
    let lanes = factory.lanes(&info);
    src.share_windows(lanes.iter().filter(|l| l.reads_all()).count());
    let outputs = if !large || lanes.is_empty() {
        // Fits in one buffer (or nothing consumes it): consume on this thread.
        consume_here(&mut src, lanes, progress, stop)?
    } else {
        fan_out(&mut src, lanes, (progress, &cfg.stages), stop, waited)?
    };
    let Some(outputs) = outputs else {
        return Ok(None);
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
        ctime_ns: stamp.ctime_ns,
        nlink,
        disk_bytes,
        outputs,
    }))
}

/// Opens the entry as it says: by its opener, by its name in its directory, or by its path.
fn open(entry: &FileEntry) -> Result<OpenedFile, ReadError> {
    #[cfg(debug_assertions)]
    crate::open_log::opening(&entry.path);
    match &entry.open {
        Some(open) => trawl_read::open_for_read_with((open.0)(), &entry.path),
        None => open_for_read_in(entry.dir.as_deref(), &entry.path),
    }
}

/// Every chunk through every lane on this thread; `Ok(None)` if the scan was cancelled.
fn consume_here(
    src: &mut ChunkSource<'_>,
    mut lanes: Vec<Box<dyn Lane>>,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Option<Vec<LaneOutput>>, ReadError> {
    while let Some(chunk) = src.next_chunk()? {
        for l in lanes.iter_mut() {
            l.update(&chunk);
        }
        progress.read(chunk.len() as u64);
        if stop.is_stopping() {
            return Ok(None);
        }
    }
    Ok(Some(lanes.into_iter().map(|l| l.finish()).collect()))
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
    (progress, stages): (&dyn Progress, &Stages),
    stop: &Stop,
    waited: &mut std::time::Duration,
) -> Result<Option<Vec<LaneOutput>>, ReadError> {
    // Windows handed back and not yet unmapped: at most one per window in flight, so a full
    // channel is unlikely; a lane that finds it full unmaps the window itself.
    let (unmap_tx, unmap_rx) = bounded::<Chunk>(16);
    // Set once the file was read to its end: a lane whose file failed or was stopped part way
    // is dropped, not finished, so that nothing of it is counted (a reduction lane folds its
    // file into the shared counts when it finishes).
    let whole = AtomicBool::new(false);
    let whole = &whole;
    std::thread::scope(|s| {
        let mut txs: Vec<Sender<Arc<Chunk>>> = Vec::with_capacity(lanes.len());
        let mut handles = Vec::with_capacity(lanes.len());
        for lane in lanes {
            let (tx, rx) = bounded::<Arc<Chunk>>(4);
            txs.push(tx);
            let unmap = unmap_tx.clone();
            handles.push(s.spawn(move || run_lane(lane, rx, unmap, (whole, stages))));
        }
        drop(unmap_tx);
        let result = send_chunks(src, &txs, &unmap_rx, progress, stop, waited);
        if matches!(result, Ok(Some(()))) {
            whole.store(true, Ordering::SeqCst);
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

/// A lane's thread: consumes the chunks as they come, hands mapped windows back to be unmapped,
/// and finishes only if the file was read whole; its CPU, its waits for chunks and its waits on
/// the reduction's locks counted in `stages`.
fn run_lane(
    mut lane: Box<dyn Lane>,
    rx: Receiver<Arc<Chunk>>,
    unmap: Sender<Chunk>,
    (whole, stages): (&AtomicBool, &Stages),
) -> Option<LaneOutput> {
    let _clock = stages.clock(Stage::Lanes);
    let mut waited = std::time::Duration::ZERO;
    loop {
        let t = std::time::Instant::now();
        let Ok(chunk) = rx.recv() else { break };
        waited += t.elapsed();
        lane.update(&chunk);
        // The last holder of a window hands it back; pool buffers go back to the pool here, as
        // they are dropped.
        if let Some(c @ Chunk::Map(_)) = Arc::into_inner(chunk) {
            let _ = unmap.try_send(c);
        }
    }
    drop(unmap);
    let out = whole.load(Ordering::SeqCst).then(|| lane.finish());
    stages.add_wait(Stage::Lanes, waited + crate::depth::take_lock_waits());
    out
}

/// Reads the file to its end, every chunk to every lane, unmapping what comes back meanwhile;
/// `Ok(None)` if the scan was cancelled.
fn send_chunks(
    src: &mut ChunkSource<'_>,
    txs: &[Sender<Arc<Chunk>>],
    unmap_rx: &Receiver<Chunk>,
    progress: &dyn Progress,
    stop: &Stop,
    waited: &mut std::time::Duration,
) -> Result<Option<()>, ReadError> {
    loop {
        if stop.is_stopping() {
            return Ok(None);
        }
        while unmap_rx.try_recv().is_ok() {}
        let Some(chunk) = src.next_chunk()? else {
            return Ok(Some(()));
        };
        let n = chunk.len() as u64;
        let chunk = Arc::new(chunk);
        let t = std::time::Instant::now();
        for tx in txs {
            // Waiting for room in a lane's channel, unmap what comes back. A lane thread only
            // stops early by panicking (the send then fails at once), which propagates at join.
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
}
