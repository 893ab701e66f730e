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
    let mut opts = ScanOptions::new(work.cfg.clone(), work.algorithms.clone());
    if let Some(o) = &work.objects {
        // Objects: each name looked up in the store and read from it.
        opts = opts.listing(o.clone());
    }
    let opts = opts
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
    report.totals.peak_anon_bytes = None;
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
    use crate::bytes;

    /// A default scan's work over `root`.
    pub(crate) fn work(root: &std::path::Path) -> ScanWork {
        ScanWork {
            cfg: trawl_scan::ScanConfig::new(vec![root.to_path_buf()]),
            objects: None,
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

    /// A map's whole output (report, records, totals, every partition's batches) is a function
    /// of its files: the same at any number of threads and files read at once, whatever the
    /// order the files are listed in, a hard link's names included (a map computed again after
    /// its worker was lost must give what the reducers already counted).
    #[test]
    fn a_maps_output_is_the_same_at_any_threads_and_io_depth() {
        use proptest::prelude::*;
        use trawl_scan::IoDepth;

        let sizes = proptest::collection::vec((0u8..5, 0usize..150_000), 2..24);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 6,
            failure_persistence: None,
            ..ProptestConfig::default()
        });
        runner
            .run(&(sizes, any::<u64>()), |(specs, seed)| {
                let t = tempfile::tempdir().unwrap();
                let mut files = Vec::new();
                let mut x = seed | 1;
                for (i, (pattern, size)) in specs.iter().enumerate() {
                    // Five contents repeated across files (duplicates within the shard), each
                    // file's tail its own.
                    let mut data: Vec<u8> = (0..*size)
                        .map(|j| {
                            (j as u64).wrapping_mul(*pattern as u64 + 7) as u8 ^ (j >> 12) as u8
                        })
                        .collect();
                    for _ in 0..100 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        data.push(x as u8);
                    }
                    let p = t.path().join(format!("d{}/f{i:02}.bin", i % 3));
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, &data).unwrap();
                    files.push(p);
                }
                // A hard link whose name sorts after and one before its first listed name.
                std::fs::create_dir_all(t.path().join("d2")).unwrap();
                std::fs::hard_link(&files[0], t.path().join("d2/zz-link.bin")).unwrap();
                std::fs::hard_link(&files[1], t.path().join("a-link.bin")).unwrap();
                files.push(t.path().join("d2/zz-link.bin"));
                files.push(t.path().join("a-link.bin"));
                let mut work = work(t.path());
                let mut reduce = trawl_reduce::ReduceConfig {
                    top_files: 5,
                    cdc_avg: Some(16 << 10),
                    breakdown: Some(trawl_reduce::BreakdownConfig {
                        depth: 1,
                        roots: vec![bytes(t.path())],
                    }),
                    ..trawl_reduce::ReduceConfig::default()
                };
                reduce.temp_dir = Some(t.path().to_path_buf());
                work.reduce = Some(reduce);
                work.keep_records = true;
                let run = |threads: usize, depth: IoDepth, files: Vec<PathBuf>| {
                    let mut w = work.clone();
                    w.cfg.threads = threads;
                    w.cfg.io_depth = depth;
                    map(&w, files, 16).unwrap()
                };
                let first = run(1, IoDepth::Fixed(1), files.clone());
                let mut reversed = files.clone();
                reversed.reverse();
                for (threads, depth, files) in [
                    (2, IoDepth::Fixed(8), files.clone()),
                    (4, IoDepth::Auto, files.clone()),
                    (3, IoDepth::Fixed(2), reversed),
                ] {
                    let m = run(threads, depth, files);
                    // The report names the threads it was asked for; nothing else may differ.
                    let mut report: serde_json::Value = serde_json::from_slice(&m.report).unwrap();
                    report["threads"] = 1.into();
                    let want: serde_json::Value = serde_json::from_slice(&first.report).unwrap();
                    prop_assert!(want == report, "reports differ at -j{threads}");
                    prop_assert!(first.records == m.records, "records differ at -j{threads}");
                    prop_assert_eq!(
                        String::from_utf8_lossy(&first.totals),
                        String::from_utf8_lossy(&m.totals)
                    );
                    prop_assert!(
                        first.partitions == m.partitions,
                        "batches differ at -j{threads}"
                    );
                }
                // The hard links are counted under their first names in byte order.
                let totals: trawl_reduce::MapTotals =
                    serde_json::from_slice(&first.totals).unwrap();
                let has = |n: &str| totals.files.iter().any(|f| f.ends_with(n));
                prop_assert!(has("/a-link.bin") && !has("/f01.bin"), "{:?}", totals.files);
                prop_assert!(
                    has("/d0/f00.bin") && !has("zz-link.bin"),
                    "{:?}",
                    totals.files
                );
                Ok(())
            })
            .unwrap();
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
