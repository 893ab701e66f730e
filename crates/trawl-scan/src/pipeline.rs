//! The pipeline [`scan`] runs: a feeder (the walk, named files or the caller's stream), readers
//! let in as the depth's steering allows, and the results handed to the caller's sink on the
//! caller's thread.

use std::path::PathBuf;
use std::thread::Scope;

use crossbeam_channel::{Receiver, Sender, bounded};
use trawl_read::BufferPool;
use trawl_read::Stage;
use trawl_stop::Stop;
use trawl_walk::{BATCH, FileEntry, WalkItem, WalkOptions};

use crate::depth::{self, Depth};
use crate::read::read_file;
use crate::{Event, Input, LaneFactory, Progress, ReadOrder, ScanConfig, Spread, order, rate};

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
    let depth = Depth::new(cfg.io_depth, cfg.threads);
    // The compute threads' share of buffers, and one more for each reader let in past them
    // (made when the readers are: see `grow_to` in `deliver`).
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
    let pipeline = Pipeline {
        cfg,
        pool: &pool,
        lanes,
        progress,
        stop,
        depth: &depth,
        spread: Spread::default(),
    };
    pipeline.run(input, &extra, sink);
}

/// What the feeder and every reader share.
struct Pipeline<'a> {
    cfg: &'a ScanConfig,
    pool: &'a BufferPool,
    lanes: &'a dyn LaneFactory,
    progress: &'a dyn Progress,
    stop: &'a Stop,
    depth: &'a Depth,
    /// The large files under way, which decides which may spread.
    spread: Spread,
}

impl Pipeline<'_> {
    /// The channels, the feeder's thread (and the reordering's), then the readers and the sink.
    fn run(&self, input: Input<'_>, extra: &dyn Fn(usize) -> usize, sink: &mut dyn FnMut(Event)) {
        let cfg = self.cfg;
        // The walk's channel is deep enough for the walk to run well ahead of the readers (the
        // progress bar's ETA needs the total), bounded so that a huge tree does not pile up in
        // memory. Unless the order is the walk's, `order` passes the files on to the readers'
        // own channel, which holds one window. Files travel in batches (`trawl_walk::BATCH`)
        // both ways: a message per small file made the channels' locking, spinning and waking
        // a large part of its cost.
        let (listed_tx, listed_rx) = bounded::<Vec<WalkItem>>(16 * 1024 / BATCH);
        let (walk_tx, walk_rx) = match cfg.read_order {
            ReadOrder::Walk => (None, listed_rx.clone()),
            _ => {
                let (tx, rx) = bounded::<Vec<WalkItem>>(order::WINDOW / BATCH);
                (Some(tx), rx)
            }
        };
        let (ev_tx, ev_rx) = bounded::<Vec<Event>>(1024 / BATCH);
        std::thread::scope(|s| {
            if let Some(walk_tx) = walk_tx {
                let (depth, stop) = (self.depth, self.stop);
                s.spawn(move || {
                    order::pass_on(
                        cfg.read_order,
                        &listed_rx,
                        &walk_tx,
                        cfg.threads,
                        (depth, &cfg.stages),
                        stop,
                    )
                });
            } else {
                drop(listed_rx);
            }
            s.spawn(move || self.feed(input, &listed_tx));
            self.deliver(s, (walk_rx, ev_tx), &ev_rx, extra, sink);
        });
    }

    /// The feeder's thread: sends what `input` names to the readers, telling the progress
    /// what is found.
    fn feed(&self, input: Input<'_>, tx: &Sender<Vec<WalkItem>>) {
        let (cfg, stop, progress) = (self.cfg, self.stop, self.progress);
        let _clock = cfg.stages.clock(Stage::Walk);
        let observe = |item: &WalkItem| {
            if let WalkItem::File(f) = item {
                progress.found(1, f.size);
            }
        };
        match input {
            Input::Walk => {
                // The walk's threads count in the scan's stages, whatever its options held.
                let walk = WalkOptions {
                    stages: cfg.stages.clone(),
                    ..cfg.walk.clone()
                };
                trawl_walk::walk_batched(&cfg.roots, &walk, tx, stop, &observe)
            }
            Input::Files(paths) => list_files(paths, tx, stop, &observe),
            Input::Stream(rx) => forward(&rx, tx, stop),
        }
        progress.walk_done();
    }

    /// Starts readers as they are let in and hands their events to `sink` until the last one
    /// is done.
    fn deliver<'scope>(
        &'scope self,
        s: &'scope Scope<'scope, '_>,
        ends: (Receiver<Vec<WalkItem>>, Sender<Vec<Event>>),
        ev_rx: &Receiver<Vec<Event>>,
        extra: &dyn Fn(usize) -> usize,
        sink: &mut dyn FnMut(Event),
    ) {
        let depth = self.depth;
        // Readers are started as they are let in: a warm scan never starts more than `-j`.
        // The channels' ends kept here for them go once the walk is drained or the scan stops,
        // so that the results' channel then closes with the last reader.
        let mut spawner = Some(ends);
        let mut started = 0;
        loop {
            if let Some((w, e)) = &spawner {
                while started < depth.limit() {
                    let (w, e, i) = (w.clone(), e.clone(), started);
                    s.spawn(move || self.read_batches(i, w, e));
                    started += 1;
                }
            }
            let waiting = std::time::Instant::now();
            let got = ev_rx.recv_timeout(depth::STEP);
            self.cfg.stages.add_wait(Stage::Merge, waiting.elapsed());
            match got {
                Ok(events) => {
                    for ev in events {
                        if !matches!(ev, Event::Skipped { .. } | Event::Excluded(_)) {
                            self.progress.file_done();
                        }
                        sink(ev);
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
            }
            depth.step();
            self.pool.grow_to(extra(depth.limit()));
            if depth.is_done() || self.stop.is_stopping() {
                spawner = None;
            }
        }
        depth.finish();
    }

    /// One reader: takes batches while it is let in (see `depth`), reads each file through
    /// its lanes, and says what the batch cost it.
    fn read_batches(&self, i: usize, walk_rx: Receiver<Vec<WalkItem>>, ev_tx: Sender<Vec<Event>>) {
        let (cfg, depth, stop) = (self.cfg, self.depth, self.stop);
        let _clock = cfg.stages.clock(Stage::Read);
        'batches: while depth.admit(i, &|| stop.is_stopping()) {
            let waiting = std::time::Instant::now();
            let Ok(batch) = walk_rx.recv() else {
                depth.finish();
                // Wakes the deliverer at once (an empty batch), which then lets go of its
                // ends of the channels, so that the results' channel closes with the last
                // reader; it would otherwise notice only at its next step, up to 50 ms on.
                let _ = ev_tx.send(Vec::new());
                break;
            };
            cfg.stages.add_wait(Stage::Read, waiting.elapsed());
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
                        let (pool, lanes, progress) = (self.pool, self.lanes, self.progress);
                        // Still as it was when its digests were known: taken, not read.
                        let root = cfg.roots.get(f.root);
                        let known = cfg.known.as_deref().zip(root);
                        if let Some(rec) = known.and_then(|(k, r)| k.take(&f, r)) {
                            events.push(Event::File(rec));
                            continue;
                        }
                        match read_file(
                            &f,
                            cfg,
                            (pool, &self.spread),
                            lanes,
                            progress,
                            stop,
                            &mut waited,
                        ) {
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
            let mut handed = std::time::Duration::ZERO;
            if !send_events(&ev_tx, events, &mut handed) {
                break;
            }
            let locks = depth::take_lock_waits();
            cfg.stages.add_wait(Stage::Read, handed + locks);
            waited += handed + locks;
            depth.record(t.elapsed(), trawl_read::thread_cpu_time() - cpu, waited);
        }
    }
}

/// Sends a reader's events, adding to `waited` the time it waited for room; false once the
/// results' channel is closed.
fn send_events(
    ev_tx: &Sender<Vec<Event>>,
    events: Vec<Event>,
    waited: &mut std::time::Duration,
) -> bool {
    match ev_tx.try_send(events) {
        Ok(()) => true,
        Err(crossbeam_channel::TrySendError::Full(events)) => {
            let sent = std::time::Instant::now();
            if ev_tx.send(events).is_err() {
                return false;
            }
            *waited += sent.elapsed();
            true
        }
        Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
    }
}

/// The caller's stream passed on to the readers: sent as they come when the feeder is slower
/// than the readers, in batches when it is ahead.
fn forward(rx: &Receiver<FileEntry>, tx: &Sender<Vec<WalkItem>>, stop: &Stop) {
    let mut batch = Vec::new();
    for f in rx.iter() {
        batch.push(WalkItem::File(f));
        while batch.len() < BATCH
            && let Ok(f) = rx.try_recv()
        {
            batch.push(WalkItem::File(f));
        }
        let full = std::mem::take(&mut batch);
        if stop.is_stopping() || tx.send(full).is_err() {
            break;
        }
    }
}

/// The files the caller named, in batches.
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
