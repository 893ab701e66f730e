//! The lanes a scan runs, assembled from the crates that own them: digests (`trawl-scan`), data
//! reduction (`trawl-reduce`) and the FLV index (`trawl-media`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use trawl_digest::Algorithm;
use trawl_media::MediaLane;
use trawl_reduce::{Counter, FileReducer, ReduceConfig};
use trawl_scan::{DigestLanes, FileInfo, Lane, LaneFactory, fill_cores};

/// Digest lanes plus, if asked, one data-reduction lane and one media lane.
#[derive(Clone)]
pub struct ScanLanes {
    pub digests: Vec<Algorithm>,
    pub reduce: Option<Arc<ReduceConfig>>,
    /// Where every file's reduction facts are folded in, by the thread that read it (a large
    /// file's as it is read: flat memory).
    pub counter: Option<Arc<Counter>>,
    /// Index FLV files.
    pub media: bool,
    /// The inodes with several names met so far: a name after the first gets no reduction lane
    /// (its data is counted once, as `du` counts it). `None` counts every name
    /// (`--count-links`).
    pub links: Option<Arc<Links>>,
}

/// Hard links met during a scan: the inodes seen (only those with several names, so that the
/// set stays small), and the names beyond the first with their bytes.
#[derive(Debug, Default)]
pub struct Links {
    seen: Mutex<HashSet<(u64, u64)>>,
    pub names: AtomicU64,
    pub bytes: AtomicU64,
}

impl Links {
    /// Whether this name is the first of its inode met in this scan (always, for one name).
    pub fn first_name(&self, file: &FileInfo<'_>) -> bool {
        if file.nlink < 2 {
            return true;
        }
        let first = self
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((file.dev, file.ino));
        if !first {
            self.names.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(file.size, Ordering::Relaxed);
        }
        first
    }
}

impl LaneFactory for ScanLanes {
    fn lanes(&self, file: &FileInfo<'_>) -> Vec<Box<dyn Lane>> {
        let (path, size) = (file.path, file.size);
        let mut l = DigestLanes::of(&self.digests, file, 2);
        let counted = self.links.as_ref().is_none_or(|k| k.first_name(file));
        if let Some(cfg) = self.reduce.as_ref().filter(|_| counted) {
            let mut r = FileReducer::new(cfg.clone());
            if let Some(c) = &self.counter {
                if cfg.attributing() {
                    r = r.with_file(c.register(path));
                }
                r = r.with_counter(c.clone());
            }
            l.push(Box::new(r));
        }
        if self.media && size > 0 {
            l.push(Box::new(MediaLane::new(path, size)));
        }
        l
    }

    fn busy_cores(&self) -> bool {
        // The media lane only looks at most files' first bytes.
        fill_cores(&self.digests, self.reduce.is_some() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_media_lane_does_not_count_as_busy_the_reduction_lane_does() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let scan = |digests: Vec<Algorithm>, reduce: bool| ScanLanes {
            digests,
            reduce: reduce.then(|| Arc::new(ReduceConfig::default())),
            counter: None,
            media: true,
            links: None,
        };
        assert_eq!(
            scan(vec![Algorithm::Sha256], false).busy_cores(),
            cores == 1
        );
        assert_eq!(scan(vec![Algorithm::Sha256], true).busy_cores(), cores <= 2);
    }
}
