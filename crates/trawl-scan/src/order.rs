//! The order files are handed to the readers: as listed, or as their data lies on disk.
//!
//! Between the walk and the readers, files wait in a window: whatever the walk has listed and
//! the readers have not yet taken, up to [`WINDOW`] files. Where the order is the disk's, each
//! file of the window is looked up (one open and one FIEMAP ioctl) and the window goes out
//! sorted by device and by the offset of the file's first extent, so that a disk that seeks
//! reads forward instead of back and forth; files with no place on a device (empty, inline,
//! a file system without FIEMAP) go first, as listed. By default (`auto`) that is done only for
//! files on a device that seeks, as sysfs says, and only while the readers wait on the device:
//! where the page cache serves the reads the order saves nothing and the lookups would cost.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use trawl_read::{Stage, Stages};
use trawl_stop::Stop;
use trawl_walk::{BATCH, FileEntry, WalkItem};

use crate::depth::Depth;

/// In which order the listed files are read (`--read-order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadOrder {
    /// The disk's, for files on a device that seeks while the reads wait on it; as listed
    /// otherwise.
    #[default]
    Auto,
    /// The disk's, for every file whose place its file system says.
    Disk,
    /// As listed.
    Walk,
}

/// Files sorted at once at most: enough that a cold directory's files are read in one sweep,
/// few enough that the first are read soon (the lookups take a few microseconds a file).
pub(crate) const WINDOW: usize = 4096;

/// Passes the listed files on from `rx` to `tx` in `order`, until `rx` closes or the scan stops;
/// its CPU and its waits on both channels counted in `stages`.
pub(crate) fn pass_on(
    order: ReadOrder,
    rx: &Receiver<Vec<WalkItem>>,
    tx: &Sender<Vec<WalkItem>>,
    threads: usize,
    (depth, stages): (&Depth, &Stages),
    stop: &Stop,
) {
    let _clock = stages.clock(Stage::Order);
    let mut seeks = Seeks::default();
    loop {
        let t = Instant::now();
        let Ok(mut window) = rx.recv() else { break };
        stages.add_wait(Stage::Order, t.elapsed());
        let wanted = match order {
            ReadOrder::Walk => false,
            ReadOrder::Disk => true,
            ReadOrder::Auto => depth.device_bound(),
        };
        if wanted {
            while window.len() < WINDOW
                && let Ok(more) = rx.try_recv()
            {
                window.extend(more);
            }
        }
        // Each file's device, where the walk or the directory it was listed from says it (0:
        // known only once the file is opened).
        let devs: Vec<u64> = if wanted { devices(&window) } else { Vec::new() };
        let only_seeking = order == ReadOrder::Auto;
        let look = wanted && (!only_seeking || devs.iter().any(|&d| d == 0 || seeks.of(d)));
        if look {
            window = sorted(window, &devs, only_seeking, &seeks, threads, (stop, stages));
        }
        if stop.is_stopping() {
            return;
        }
        let mut items = window.into_iter().peekable();
        while items.peek().is_some() {
            let batch: Vec<WalkItem> = items.by_ref().take(BATCH).collect();
            let t = Instant::now();
            if stop.is_stopping() || tx.send(batch).is_err() {
                return;
            }
            stages.add_wait(Stage::Order, t.elapsed());
        }
    }
}

/// Each item's device (0 for an item that is no file, or whose device is not known before it
/// is opened): the walk's, else its directory's (asked once per directory).
fn devices(window: &[WalkItem]) -> Vec<u64> {
    let mut dirs: HashMap<*const std::fs::File, u64> = HashMap::new();
    window
        .iter()
        .map(|item| match item {
            WalkItem::File(f) if f.dev != 0 => f.dev,
            WalkItem::File(FileEntry { dir: Some(d), .. }) => *dirs
                .entry(std::sync::Arc::as_ptr(d))
                .or_insert_with(|| d.metadata().map(|m| m.dev()).unwrap_or(0)),
            _ => 0,
        })
        .collect()
}

/// The window in disk order: each file looked up (an open, an ioctl and a close a file; on
/// `threads` threads, as on one they held back the readers of a tree of tiny files), then a
/// stable sort, files without a place first as listed.
fn sorted(
    window: Vec<WalkItem>,
    devs: &[u64],
    only_seeking: bool,
    seeks: &Seeks,
    threads: usize,
    (stop, stages): (&Stop, &Stages),
) -> Vec<WalkItem> {
    let mut keyed: Vec<(Place, u64, WalkItem)> = window
        .into_iter()
        .zip(devs)
        .map(|(item, &dev)| (None, dev, item))
        .collect();
    let part = keyed.len().div_ceil(threads.max(1)).max(256);
    std::thread::scope(|s| {
        for part in keyed.chunks_mut(part) {
            s.spawn(move || {
                let _clock = stages.clock(Stage::Order);
                let mut seeks = seeks.clone();
                for (key, dev, item) in part {
                    if let WalkItem::File(f) = item
                        && !stop.is_stopping()
                    {
                        *key = place(f, *dev, only_seeking, &mut seeks);
                    }
                }
            });
        }
    });
    keyed.sort_by_key(|(key, _, _)| *key);
    keyed.into_iter().map(|(_, _, item)| item).collect()
}

/// A file's device and the offset of its data there.
type Place = Option<(u64, u64)>;

/// The file's device and the offset of its data there; None where it has no place or (when
/// `only_seeking`) its device does not seek. `dev`: its device where known before it is opened.
fn place(f: &FileEntry, dev: u64, only_seeking: bool, seeks: &mut Seeks) -> Place {
    if only_seeking && dev != 0 && !seeks.of(dev) {
        return None;
    }
    let file = match &f.open {
        Some(open) => (open.0)(),
        None => trawl_read::open_in(f.dir.as_deref(), &f.path, 0),
    }
    .ok()?;
    let dev = match dev {
        0 => file.metadata().ok()?.dev(),
        dev => dev,
    };
    if only_seeking && !seeks.of(dev) {
        return None;
    }
    Some((dev, trawl_read::first_extent(&file)?))
}

/// Whether each device seen seeks, asked of sysfs once per device (unknown: no).
#[derive(Default, Clone)]
struct Seeks(HashMap<u64, bool>);

impl Seeks {
    fn of(&mut self, dev: u64) -> bool {
        *self
            .0
            .entry(dev)
            .or_insert_with(|| trawl_read::device_seeks(dev).unwrap_or(false))
    }
}
