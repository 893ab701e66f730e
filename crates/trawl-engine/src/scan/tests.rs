//! Unit tests of a scan run: a shard's files and batches.

use super::*;
use trawl_reduce::ReduceConfig;
use trawl_scan::NoProgress;

fn finished(o: Result<ScanOutcome, ScanRunError>) -> Box<ScanResult> {
    match o.unwrap() {
        ScanOutcome::Finished(r) => r,
        ScanOutcome::Stopped(r) => panic!("stopped: {r:?}"),
    }
}

/// A shard reads exactly its files (a missing one is a failure), and its batches wait on
/// the scan for the caller that asks, once; a scan of the roots leaves none, and says how
/// often its readers waited.
#[test]
fn a_shard_reads_its_files_and_leaves_its_batches_on_the_scan() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().to_path_buf();
    std::fs::write(dir.join("a"), vec![7u8; 20_000]).unwrap();
    std::fs::write(dir.join("b"), b"not in the shard").unwrap();
    let opts = || {
        ScanOptions::new(ScanConfig::new(vec![dir.clone()]), vec![Algorithm::Sha256])
            .reduce(Some(ReduceConfig::default()))
    };
    let shard = opts()
        .shard(vec![dir.join("a"), dir.join("gone")], 4)
        .unwrap();
    let scan = Scan::new(shard);
    let r = finished(scan.run(&Stop::new(), &NoProgress, &mut |_| {}));
    assert_eq!((r.report.totals.files, r.report.totals.failed), (1, 1));
    assert_eq!(r.report.totals.bytes, 20_000);
    let map = scan.take_map().expect("a shard's batches");
    assert_eq!(map.partitions.len(), 4);
    assert!(scan.take_map().is_none(), "taken once");

    let whole = Scan::new(opts());
    let r = finished(whole.run(&Stop::new(), &NoProgress, &mut |_| {}));
    assert_eq!(r.report.totals.files, 2);
    assert!(whole.take_map().is_none());
    assert!(whole.contention().is_some());
    assert!(r.report.reduction.is_some());
}
