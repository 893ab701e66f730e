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
//! each answered with an [`Outcome`]; a source that lists its own roots (a store's objects) is
//! a [`Listing`], scanned by [`scan_listing`] (or its named files alone, by [`scan_named`]).
//! [`Known`] holds digests from an earlier read that a file still as it was then is taken
//! from instead of being read.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod depth;
mod known;
mod lane;
mod listing;
mod named;
#[cfg(debug_assertions)]
mod open_log;
mod order;
mod pipeline;
mod progress;
mod rate;
mod read;
mod relative;

pub use depth::{IoDepth, MAX_READERS, waited_on_a_lock};
pub use known::{Identity, Known, KnownBuilder, ReuseCounts};
pub use lane::{
    DigestLanes, FileInfo, Lane, LaneFactory, LaneOutput, Spread, Spreading, fill_cores,
};
pub use listing::{LOOKUPS, Listing, scan_listing, scan_named};
pub use named::{
    Feeder, IN_FLIGHT, Links, LocalRoots, Outcome, Reading, Refusal, Refused, Resolve, Source,
    read_named,
};
pub use order::ReadOrder;
pub use pipeline::scan;
pub use progress::{NoProgress, Progress};
pub use relative::{NotBeneath, RelativeEntries};

use std::path::PathBuf;
use std::sync::Arc;

use trawl_read::{IoMethod, ReadError};
pub use trawl_read::{Stage, StageFigures, Stages, ThreadClock, process_cpu_time};
use trawl_walk::{Excluded, FileEntry, SkipKind, WalkError, WalkOptions};

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
    /// Digests known from an earlier read (`scan --reuse`): a file that is still what it was
    /// then is taken from here, not read. An audit never has one.
    pub known: Option<Arc<Known>>,
    /// Where every thread's CPU time and waits are counted, by stage (the walk's too).
    pub stages: Arc<Stages>,
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
            known: None,
            stages: Arc::default(),
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
    /// Status change time (ctime), nanoseconds since the epoch; 0 where the source has none
    /// (an object in a store).
    pub ctime_ns: i64,
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
