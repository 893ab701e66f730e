//! A shard's map (its files read once: digests and records as `trawl scan` keeps them, the
//! reduction folded into fingerprint batches per partition) and a partition's reduce (every
//! map's batches for it counted as one machine counts a key partition).

use std::path::PathBuf;

use trawl_engine::{Scan, ScanOptions, ScanOutcome};
use trawl_reduce::ReduceError;

use crate::{ClusterError, ScanWork};

/// What one shard's map returns: its report (no `files`, no reduction), its records exported,
/// its reduction totals, and one fingerprint batch set per partition.
pub struct MapResult {
    /// The shard's report (JSON).
    pub report: Vec<u8>,
    /// Its records, exported for the client's merge.
    pub records: Vec<u8>,
    /// Its reduction totals (JSON).
    pub totals: Vec<u8>,
    /// One fingerprint batch set per partition.
    pub partitions: Vec<Vec<u8>>,
}

/// Reads one shard's `files` into `partitions` fingerprint batch sets.
pub fn map(
    work: &ScanWork,
    files: Vec<PathBuf>,
    partitions: u32,
) -> Result<MapResult, ClusterError> {
    let opts = ScanOptions::new(work.cfg.clone(), work.algorithms.clone())
        .reduce(work.reduce.clone())
        .media(work.media)
        .count_links(work.count_links)
        .keep_records(work.keep_records)
        .record_memory(work.record_memory)
        .temp_dir(work.temp_dir.clone())
        .shard(files, partitions)?;
    let scan = Scan::new(opts);
    // Each map has its own token: a task that failed must not stop the next one.
    let stop = trawl_stop::Stop::new();
    let result = match scan.run(&stop, &trawl_scan::NoProgress, &mut |_| {})? {
        ScanOutcome::Finished(r) => r,
        ScanOutcome::Stopped(r) => return Err(ClusterError::Stopped(format!("{r:?}"))),
    };
    let map = scan.take_map().unwrap_or_default();
    // A map's output is a function of its files alone (a checkpoint of the same shard is the
    // same bytes every run): the run's time and memory, which the merge sets for the whole
    // run, are left out.
    let mut report = result.report;
    report.totals.seconds = 0.0;
    report.totals.bytes_per_second = 0.0;
    report.totals.peak_rss_bytes = None;
    let json = |what: &str, e: serde_json::Error| ClusterError::wire(what, e);
    Ok(MapResult {
        report: serde_json::to_vec(&report).map_err(|e| json("the shard's report", e))?,
        records: result.records.export().map_err(ClusterError::io(
            "cannot export the shard's records (--temp-dir)",
        ))?,
        totals: serde_json::to_vec(&map.totals).map_err(|e| json("the shard's totals", e))?,
        partitions: map.partitions,
    })
}

/// Why a partition could not be counted: the map (its place in the reduce's input) whose
/// batch was refused, and why, for the client to name that map's shard and worker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("map {map}: {reason}")]
pub struct ReduceFailure {
    /// The map's place in the reduce's input.
    pub map: usize,
    /// Why its batch was refused.
    pub reason: String,
}

/// Counts one partition from every map's batch set (in map order): the counts as JSON.
pub fn reduce(parts: &[&[u8]]) -> Result<Vec<u8>, ReduceFailure> {
    let r = trawl_reduce::reduce_partition(parts).map_err(|e| match e {
        ReduceError::Batch { map, source } => ReduceFailure {
            map,
            reason: source.to_string(),
        },
        ReduceError::Ways {
            map,
            found,
            expected,
        } => ReduceFailure {
            map,
            reason: format!(
                "its data is cut {found} ways, map 0's {expected}: made by another configuration"
            ),
        },
    })?;
    Ok(serde_json::to_vec(&r).expect("a partition's counts encode"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A default scan's work over `root`.
    pub(crate) fn work(root: &std::path::Path) -> ScanWork {
        ScanWork {
            cfg: trawl_scan::ScanConfig::new(vec![root.to_path_buf()]),
            algorithms: vec![trawl_digest::Algorithm::Sha256],
            reduce: Some(trawl_reduce::ReduceConfig::default()),
            media: false,
            count_links: false,
            record_memory: 1 << 20,
            temp_dir: Some(root.to_path_buf()),
            keep_records: false,
            list_files: false,
            duplicate_directories: false,
        }
    }

    /// A batch that is not one is refused naming its map, apart from the reason, so that the
    /// client can name the shard and the worker without reading words.
    #[test]
    fn a_bad_batch_is_refused_with_its_map_number() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("a"), vec![7u8; 10_000]).unwrap();
        let work = work(t.path());
        let m = map(&work, vec![t.path().join("a")], 2).unwrap();
        assert_eq!(m.partitions.len(), 2);
        let good = m.partitions[0].as_slice();
        assert!(reduce(&[good, good]).is_ok());
        let e = reduce(&[good, good, b"not a batch"]).unwrap_err();
        assert_eq!(e.map, 2);
        assert!(!e.reason.contains("map 2"), "{}", e.reason);
    }

    /// The same files give the same bytes every time (a shard's checkpoint is compared, and
    /// its size once moved from run to run with the time and memory the map recorded).
    #[test]
    fn a_maps_output_is_a_function_of_its_files_alone() {
        let t = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for i in 0..40u8 {
            let p = t.path().join(format!("f{i}"));
            std::fs::write(&p, vec![i; 20_000 + 997 * i as usize]).unwrap();
            files.push(p);
        }
        let work = work(t.path());
        let a = map(&work, files.clone(), 8).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = map(&work, files, 8).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&a.report),
            String::from_utf8_lossy(&b.report)
        );
        assert_eq!(a.records, b.records);
        assert_eq!(a.totals, b.totals);
        assert_eq!(a.partitions, b.partitions);
    }
}
