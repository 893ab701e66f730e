//! A shard's map result as the client merges it: from a worker, or read back from a
//! `--state` checkpoint on disk (which a damaged or planted file can make anything). Its
//! report, records and totals, as arbitrary bytes, merge or give an error, never a panic.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use trawl_cluster::{Merge, ScanWork, ShardPart};
use trawl_digest::Algorithm;
use trawl_scan::ScanConfig;

fn work() -> &'static ScanWork {
    static WORK: OnceLock<(tempfile::TempDir, ScanWork)> = OnceLock::new();
    &WORK
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let work = ScanWork {
                cfg: ScanConfig::new(vec!["/nonexistent".into()]),
                algorithms: vec![Algorithm::Sha256],
                reduce: Some(trawl_reduce::ReduceConfig::default()),
                media: false,
                count_links: false,
                record_memory: 1 << 20,
                temp_dir: Some(dir.path().to_path_buf()),
                keep_records: true,
                list_files: true,
                duplicate_directories: false,
                objects: None,
            };
            (dir, work)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    // Cut in three at the first two NUL bytes: report, records, totals.
    let mut it = data.splitn(3, |&b| b == 0);
    let (report, records, totals) = (
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    );
    let mut m = Merge::new(work());
    let _ = m.add(&ShardPart {
        report: report.to_vec(),
        records: records.to_vec(),
        totals: totals.to_vec(),
        worker: None,
    });
});
