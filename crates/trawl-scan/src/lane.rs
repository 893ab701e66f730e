//! Lanes: the consumers of a file's bytes. Each sees every chunk of the file in order.

use std::path::Path;
use std::sync::Arc;

use trawl_digest::{Algorithm, Hasher};
use trawl_media::{FlvIndex, FlvStream};
use trawl_reduce::{Accumulator, FileReduce, FileReducer, ReduceConfig};

/// What a lane produced for one file.
#[derive(Debug, Clone, PartialEq)]
pub enum LaneOutput {
    Digest(Algorithm, Vec<u8>),
    Reduce(Box<FileReduce>),
    /// The FLV keyframe index, or why a file with the FLV signature could not be indexed;
    /// `None` for a file that is not FLV.
    Media(Option<Box<Result<FlvIndex, String>>>),
}

impl LaneOutput {
    pub fn digest(&self) -> Option<(Algorithm, &[u8])> {
        match self {
            LaneOutput::Digest(a, d) => Some((*a, d)),
            _ => None,
        }
    }
}

/// A consumer of one file's contents.
pub trait Lane: Send {
    fn update(&mut self, chunk: &[u8]);
    fn finish(self: Box<Self>) -> LaneOutput;

    /// Whether it reads every byte it is given (a lane that only looks at some bytes does not
    /// keep mapped pages resident).
    fn reads_all(&self) -> bool {
        true
    }
}

/// Makes the lanes for each file.
pub trait LaneFactory: Sync {
    /// For the file at `path` of `size` bytes; `large`: it spans several buffers and each lane
    /// gets a thread of its own.
    fn lanes(&self, path: &Path, size: u64, large: bool) -> Vec<Box<dyn Lane>>;

    /// Whether a large file's lanes keep every core busy by themselves, so that `--io auto`
    /// maps it: the copy out of the page cache that `read(2)` costs is then work taken from
    /// the lanes, where with cores to spare the reader thread does it beside them and a
    /// mapping's page faults would fall on the lanes instead (2 GiB file, 2 cores: SHA-256
    /// alone 1.52 s read against 1.67 s mapped; BLAKE3 0.58 against 0.45, four digests 5.57
    /// against 5.28, the default scan 1.79 against 1.70).
    fn busy_cores(&self) -> bool {
        false
    }
}

/// Whether lanes doing `algorithms` (and `others` more busy lanes) keep all cores busy: BLAKE3
/// hashes a large file on all cores itself; otherwise one core a lane.
fn fill_cores(algorithms: &[Algorithm], others: usize) -> bool {
    // Asked once: `available_parallelism` reads the cgroup's files each time.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    algorithms.contains(&Algorithm::Blake3) || algorithms.len() + others >= cores
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

impl Lane for FileReducer {
    fn update(&mut self, chunk: &[u8]) {
        FileReducer::update(self, chunk)
    }
    fn finish(self: Box<Self>) -> LaneOutput {
        LaneOutput::Reduce(Box::new(FileReducer::finish(*self)))
    }
}

/// The FLV index from the bytes as they pass (files that are not FLV cost one look at their
/// first bytes).
pub struct MediaLane(FlvStream);

impl Lane for MediaLane {
    fn update(&mut self, chunk: &[u8]) {
        if !self.0.is_not_flv() {
            self.0.update(chunk)
        }
    }
    fn finish(self: Box<Self>) -> LaneOutput {
        LaneOutput::Media(
            self.0
                .finish()
                .map(|r| Box::new(r.map_err(|e| e.to_string()))),
        )
    }

    fn reads_all(&self) -> bool {
        // Tag headers and the few payloads it parses.
        false
    }
}

/// Digest lanes plus, if asked, one data-reduction lane and one media lane.
#[derive(Clone)]
pub struct ScanLanes {
    pub digests: Vec<Algorithm>,
    pub reduce: Option<Arc<ReduceConfig>>,
    /// Where large files' reduction facts are folded in as they are read (flat memory).
    pub accumulator: Option<Arc<std::sync::Mutex<Accumulator>>>,
    /// Index FLV files.
    pub media: bool,
}

impl LaneFactory for ScanLanes {
    fn lanes(&self, path: &Path, size: u64, large: bool) -> Vec<Box<dyn Lane>> {
        let mut l = DigestLanes(self.digests.clone()).lanes(path, size, large);
        if let Some(cfg) = &self.reduce {
            let mut r = FileReducer::new(cfg.clone());
            if let Some(acc) = &self.accumulator {
                if cfg.top_files > 0 {
                    let id = acc.lock().unwrap_or_else(|p| p.into_inner()).register(path);
                    r = r.with_file(id);
                }
                r = r.with_accumulator(acc.clone());
            }
            l.push(Box::new(r));
        }
        if self.media && size > 0 {
            l.push(Box::new(MediaLane(FlvStream::new(path, size))));
        }
        l
    }

    fn busy_cores(&self) -> bool {
        // The media lane only looks at most files' first bytes.
        fill_cores(&self.digests, self.reduce.is_some() as usize)
    }
}

/// One digest lane per algorithm.
#[derive(Debug, Clone)]
pub struct DigestLanes(pub Vec<Algorithm>);

impl LaneFactory for DigestLanes {
    fn lanes(&self, _path: &Path, _size: u64, large: bool) -> Vec<Box<dyn Lane>> {
        // BLAKE3 may spread a large buffer over the rayon pool; small files are already
        // spread over the workers.
        self.0
            .iter()
            .map(|a| Box::new(a.hasher().with_parallel(large)) as Box<dyn Lane>)
            .collect()
    }

    fn busy_cores(&self) -> bool {
        fill_cores(&self.0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_maps_where_the_lanes_fill_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(DigestLanes(vec![Algorithm::Blake3]).busy_cores());
        assert_eq!(
            DigestLanes(vec![Algorithm::Sha256]).busy_cores(),
            cores == 1
        );
        assert_eq!(
            DigestLanes(Algorithm::ALL.to_vec()).busy_cores(),
            cores <= Algorithm::ALL.len()
        );
        let scan = |digests: Vec<Algorithm>, reduce: bool| ScanLanes {
            digests,
            reduce: reduce.then(|| Arc::new(ReduceConfig::default())),
            accumulator: None,
            media: true,
        };
        // The media lane is not counted; the reduction lane is.
        assert_eq!(
            scan(vec![Algorithm::Sha256], false).busy_cores(),
            cores == 1
        );
        assert_eq!(scan(vec![Algorithm::Sha256], true).busy_cores(), cores <= 2);
    }
}
