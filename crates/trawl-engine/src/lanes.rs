//! The lanes a scan runs, assembled from the crates that own them: digests (`trawl-scan`), data
//! reduction (`trawl-reduce`) and the FLV index (`trawl-media`).

use std::path::Path;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_media::MediaLane;
use trawl_reduce::{Accumulator, FileReducer, ReduceConfig};
use trawl_scan::{DigestLanes, Lane, LaneFactory, fill_cores};

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
            accumulator: None,
            media: true,
        };
        assert_eq!(
            scan(vec![Algorithm::Sha256], false).busy_cores(),
            cores == 1
        );
        assert_eq!(scan(vec![Algorithm::Sha256], true).busy_cores(), cores <= 2);
    }
}
