//! Lanes: the consumers of a file's bytes, the scan's extension point. Each sees every chunk of
//! the file in order. The digest lanes live here; other crates implement [`Lane`] for their own
//! consumers (data reduction, media indexes) and a caller assembles them in a [`LaneFactory`],
//! so this crate knows none of them.

use std::any::Any;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use trawl_digest::{Algorithm, Hasher};

/// What a lane produced for one file.
pub enum LaneOutput {
    /// A digest by an algorithm.
    Digest(Algorithm, Vec<u8>),
    /// The product of a lane defined elsewhere; the crate that defines the lane names its type
    /// (see [`LaneOutput::other`]).
    Other(Box<dyn Any + Send>),
    /// The lane has nothing to say of this file (e.g. the media lane of a file that is not
    /// media): no allocation, which matters at a few microseconds per small file.
    Nothing,
}

impl std::fmt::Debug for LaneOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LaneOutput::Digest(a, d) => write!(f, "Digest({a}, {})", hex::encode(d)),
            LaneOutput::Other(_) => f.write_str("Other(..)"),
            LaneOutput::Nothing => f.write_str("Nothing"),
        }
    }
}

impl LaneOutput {
    /// The digest, when it is one.
    pub fn digest(&self) -> Option<(Algorithm, &[u8])> {
        match self {
            LaneOutput::Digest(a, d) => Some((*a, d)),
            _ => None,
        }
    }

    /// The product of another crate's lane, if it is a `T`.
    pub fn other<T: 'static>(&self) -> Option<&T> {
        match self {
            LaneOutput::Other(b) => b.downcast_ref(),
            _ => None,
        }
    }

    /// As [`LaneOutput::other`], by value; `Err(self)` when it is not a `T`.
    pub fn into_other<T: 'static>(self) -> Result<Box<T>, LaneOutput> {
        match self {
            LaneOutput::Other(b) => b.downcast().map_err(LaneOutput::Other),
            o => Err(o),
        }
    }
}

/// A consumer of one file's contents.
pub trait Lane: Send {
    /// Takes the file's next bytes, in order.
    fn update(&mut self, chunk: &[u8]);
    /// What the lane made of the file, after its last byte.
    fn finish(self: Box<Self>) -> LaneOutput;

    /// Whether it reads every byte it is given (a lane that only looks at some bytes does not
    /// keep mapped pages resident).
    fn reads_all(&self) -> bool {
        true
    }
}

/// The file a factory makes lanes for, as it was opened.
#[derive(Debug, Clone, Copy)]
pub struct FileInfo<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its size when opened.
    pub size: u64,
    /// Its lanes may spread a buffer over the pool of `-j` threads ([`Spread::begin`]).
    pub spread: bool,
    /// Device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Names of the inode: more than 1 for a file with hard links.
    pub nlink: u64,
}

/// Which large files spread one buffer over the pool (BLAKE3 by its tree, the reduction by its
/// blocks and units): one per scan, counting its large files under way ([`Spread::begin`]).
#[derive(Debug, Default)]
pub struct Spread {
    under_way: AtomicUsize,
}

/// A large file under way ([`Spread::begin`]), counted until it is dropped.
#[derive(Debug)]
pub struct Spreading<'a> {
    counted: Option<&'a Spread>,
    /// Whether its lanes may spread a buffer over the pool.
    pub yes: bool,
}

impl Spread {
    /// A file of `size` bytes, read in buffers of `buffer` by a scan of `threads` compute
    /// threads (`-j`), begins. It may spread only if it is several buffers long (small files are
    /// spread over the readers already, one each), never at `-j1` (which asks for one compute
    /// thread), and only while the large files under way, itself included, are at most half the
    /// threads: where more are read at once their lanes keep the cores busy by themselves, and
    /// spreading each buffer as well only added hand-offs (a full reduction of a tree of large
    /// files took 17% longer on two cores). The pool has `threads` threads: sized here by the
    /// first file that spreads (the process's pool is made once and cannot be resized, so a
    /// later scan in the same process with another `-j` shares the first one's).
    pub fn begin(&self, size: u64, buffer: u64, threads: usize) -> Spreading<'_> {
        if size <= buffer || threads < 2 {
            return Spreading {
                counted: None,
                yes: false,
            };
        }
        let n = self.under_way.fetch_add(1, Ordering::SeqCst) + 1;
        let yes = n * 2 <= threads;
        if yes {
            size_pool(threads);
        }
        Spreading {
            counted: Some(self),
            yes,
        }
    }
}

impl Drop for Spreading<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.counted {
            s.under_way.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Makes the process's pool (the one BLAKE3's `update_rayon` and the reduction use) with
/// `threads` threads, once; a pool someone else made first is left as it is.
fn size_pool(threads: usize) {
    static SIZED: std::sync::Once = std::sync::Once::new();
    SIZED.call_once(|| {
        let _ = rayon_core::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("trawl-pool-{i}"))
            .build_global();
    });
}

/// Makes the lanes for each file.
pub trait LaneFactory: Sync {
    /// The lanes that consume `file` (none: the file is only counted).
    fn lanes(&self, file: &FileInfo<'_>) -> Vec<Box<dyn Lane>>;

    /// Whether a large file's lanes keep every core busy by themselves, so that `--io auto`
    /// maps it: the copy out of the page cache that `read(2)` costs is then work taken from
    /// the lanes, where with cores to spare the reader thread does it beside them and a
    /// mapping's page faults would fall on the lanes instead (the measurements:
    /// docs/decisions/0010-map-windows-and-coloured-buffers.md). Asked for `file`, whose
    /// `spread` says whether its lanes may spread a buffer over the pool.
    fn busy_cores(&self, _file: &FileInfo<'_>) -> bool {
        false
    }
}

/// Whether lanes doing `algorithms` (and `others` more busy lanes) keep all cores busy: BLAKE3
/// hashes a large file on all cores itself where the file `spread`s ([`Spread::begin`]);
/// otherwise one core a lane (BLAKE3 too: at `-j1` a mapped file's faults fell on its one lane,
/// 1.28x slower than reading beside it on two cores).
pub fn fill_cores(algorithms: &[Algorithm], others: usize, spread: bool) -> bool {
    // Asked once: `available_parallelism` reads the cgroup's files each time.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    (spread && algorithms.contains(&Algorithm::Blake3)) || algorithms.len() + others >= cores
}

impl Lane for Hasher {
    fn update(&mut self, chunk: &[u8]) {
        Hasher::update(self, chunk)
    }
    fn finish(self: Box<Self>) -> LaneOutput {
        let alg = self.algorithm();
        LaneOutput::Digest(alg, Hasher::finish(*self))
    }
}

/// One digest lane per algorithm.
#[derive(Debug, Clone)]
pub struct DigestLanes(pub Vec<Algorithm>);

impl DigestLanes {
    /// A hasher lane for each of `algs`, with room for `more` lanes after them.
    pub fn of(algs: &[Algorithm], file: &FileInfo<'_>, more: usize) -> Vec<Box<dyn Lane>> {
        let mut v: Vec<Box<dyn Lane>> = Vec::with_capacity(algs.len() + more);
        // BLAKE3 may spread a large buffer over the rayon pool ([`Spread::begin`]).
        v.extend(
            algs.iter()
                .map(|a| Box::new(a.hasher().with_parallel(file.spread)) as Box<dyn Lane>),
        );
        v
    }
}

impl LaneFactory for DigestLanes {
    fn lanes(&self, file: &FileInfo<'_>) -> Vec<Box<dyn Lane>> {
        DigestLanes::of(&self.0, file, 0)
    }

    fn busy_cores(&self, file: &FileInfo<'_>) -> bool {
        fill_cores(&self.0, 0, file.spread)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_of_several_buffers_spreads_never_at_one_thread_nor_beside_many() {
        let mib = 1 << 20;
        let spread = Spread::default();
        assert!(spread.begin(mib + 1, mib, 2).yes);
        assert!(
            !spread.begin(mib, mib, 16).yes,
            "one buffer: read on its reader's thread"
        );
        assert!(
            !spread.begin(64 * mib, mib, 1).yes,
            "-j1 asks for one compute thread"
        );
        // At -j4, two large files under way spread, a third does not; once one ends, the next
        // one does again.
        let (a, b) = (
            spread.begin(64 * mib, mib, 4),
            spread.begin(64 * mib, mib, 4),
        );
        assert!(a.yes && b.yes);
        assert!(!spread.begin(64 * mib, mib, 4).yes);
        let c = spread.begin(64 * mib, mib, 4);
        assert!(!c.yes);
        drop((a, c));
        assert!(spread.begin(64 * mib, mib, 4).yes);
    }

    /// A large file's facts, spreading or not.
    fn large(spread: bool) -> FileInfo<'static> {
        FileInfo {
            path: std::path::Path::new("f"),
            size: 64 << 20,
            spread,
            dev: 1,
            ino: 1,
            nlink: 1,
        }
    }

    #[test]
    fn auto_maps_where_the_lanes_fill_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (spreads, alone) = (large(true), large(false));
        assert!(DigestLanes(vec![Algorithm::Blake3]).busy_cores(&spreads));
        // A BLAKE3 that does not spread (at -j1, or beside many large files) is one lane.
        assert_eq!(
            DigestLanes(vec![Algorithm::Blake3]).busy_cores(&alone),
            cores == 1
        );
        for file in [&spreads, &alone] {
            assert_eq!(
                DigestLanes(vec![Algorithm::Sha256]).busy_cores(file),
                cores == 1
            );
            assert_eq!(
                DigestLanes(Algorithm::ALL.to_vec()).busy_cores(file),
                cores <= Algorithm::ALL.len()
            );
        }
    }
}
