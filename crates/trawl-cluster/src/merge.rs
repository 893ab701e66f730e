//! The client's merge: the shards' parts taken one at a time as they arrive, then the report
//! `trawl scan` makes of the same files, from the parts, the partitions' counts and the walk.

use std::time::Instant;

use trawl_engine::RecordSink;
use trawl_engine::ScanResult;
use trawl_reduce::{MapTotals, PartitionResult};
use trawl_report::{ExcludedJson, FileJson, HardLinks, ScanReport, SizeHistogram};

use crate::{ClusterError, Listing, ScanWork};

/// A shard's map result as the client merges it.
pub struct ShardPart {
    /// The shard's report, as [`MapResult::report`](crate::MapResult::report).
    pub report: Vec<u8>,
    /// Its records, as [`MapResult::records`](crate::MapResult::records).
    pub records: Vec<u8>,
    /// Its totals, as [`MapResult::totals`](crate::MapResult::totals).
    pub totals: Vec<u8>,
    /// The worker that read it (named in its failures).
    pub worker: Option<String>,
}

/// A failure to find or open a file (`vanished`, `open`) met by worker `reader`, when another
/// worker listed the file: its message says that the two see the tree differently, naming
/// both.
fn seen_otherwise(f: &mut FileJson, reader: &str, listed_by: &impl Fn(&[u8]) -> Option<String>) {
    let Some(e) = f.error.as_mut() else { return };
    if e.kind != "vanished" && e.kind != "open" {
        return;
    }
    let name = match &f.path.path_hex {
        Some(h) => match hex::decode(h) {
            Ok(b) => b,
            Err(_) => return,
        },
        None => f.path.path.as_bytes().to_vec(),
    };
    let Some(lister) = listed_by(&name) else {
        return;
    };
    if lister == reader {
        return;
    }
    e.message = if e.kind == "vanished" && f.path.path.starts_with("s3://") {
        // Every worker asks the same store: the object went, or a worker is sent elsewhere.
        format!(
            "{}: listed by worker {lister}, not found by worker {reader}, which read its shard: \
             deleted since it was listed, or the workers reach the store differently (another \
             endpoint?)",
            f.path.path
        )
    } else if e.kind == "vanished" {
        format!(
            "{}: listed by worker {lister}, not found by worker {reader}, which read its shard: \
             the workers see the tree differently (another mount?), or it was deleted meanwhile",
            f.path.path
        )
    } else {
        format!(
            "{}, on worker {reader}; worker {lister} listed it: the workers see the tree \
             differently (permissions, another mount?)",
            e.message
        )
    };
}

/// The shards' parts merged so far.
pub struct Merge {
    work: ScanWork,
    sink: RecordSink,
    report: ScanReport,
    sizes: SizeHistogram,
    hardlinks: HardLinks,
    /// Each map's reduction totals, in map order (the partitions' attribution numbers maps by
    /// it).
    totals: Vec<MapTotals>,
}

impl Merge {
    /// An empty merge (its records wait in a spool past the record memory, as one machine's
    /// do).
    pub fn new(work: &ScanWork) -> Merge {
        Merge {
            sink: RecordSink::new(
                &work.spill_dir(),
                work.record_memory,
                work.keep_records,
                false,
            ),
            report: trawl_engine::empty_report(&work.cfg, &work.algorithms),
            sizes: SizeHistogram::default(),
            hardlinks: HardLinks::default(),
            totals: Vec::new(),
            work: work.clone(),
        }
    }

    /// Takes the next shard's part (in the order its map was reduced in).
    pub fn add(&mut self, part: &ShardPart) -> Result<(), ClusterError> {
        self.add_listed(part, |_| None)
    }

    /// [`Merge::add`], with `listed_by` saying which worker listed a file (by its name's bytes
    /// as reports spell them, see [`Walk::listed_by`](crate::Walk::listed_by)): a file the
    /// worker that read the shard could not find or open, listed by another worker, is said to
    /// be seen differently by the two, both named (a directory one cannot read, another
    /// mount), where it would read as vanished or closed to the reader alone.
    pub fn add_listed(
        &mut self,
        part: &ShardPart,
        listed_by: impl Fn(&[u8]) -> Option<String>,
    ) -> Result<(), ClusterError> {
        let i = self.totals.len();
        let mut r: ScanReport = serde_json::from_slice(&part.report)
            .map_err(|e| ClusterError::wire(format!("shard {i}: its report"), e))?;
        let t: MapTotals = serde_json::from_slice(&part.totals)
            .map_err(|e| ClusterError::wire(format!("shard {i}: its totals"), e))?;
        self.sink
            .import(&part.records)
            .map_err(|e| ClusterError::wire(format!("shard {i}: its records"), e))?;
        let report = &mut self.report;
        report.totals.files += r.totals.files;
        report.totals.bytes += r.totals.bytes;
        report.skipped.extend(r.skipped);
        FileJson::met_by(&mut r.failed, part.worker.as_deref());
        if let Some(reader) = part.worker.as_deref() {
            for f in &mut r.failed {
                seen_otherwise(f, reader, &listed_by);
            }
        }
        report.failed.extend(r.failed);
        for b in &r.file_sizes {
            self.sizes.add_bucket(b);
        }
        if let Some(f) = r.flv {
            match &mut report.flv {
                None => report.flv = Some(f),
                Some(m) => m.merge(f),
            }
        }
        if let Some(red) = r.reduction {
            self.hardlinks.names += red.hardlinks.names;
            self.hardlinks.bytes += red.hardlinks.bytes;
        }
        self.totals.push(t);
        Ok(())
    }

    /// The scan's result from the merged shards, every partition's counts (in order) and the
    /// walk's skipped and failed entries; its seconds counted from `started`.
    pub fn finish(
        self,
        partitions: &[Vec<u8>],
        walk: &Listing,
        started: Instant,
    ) -> Result<ScanResult, ClusterError> {
        let parts: Vec<PartitionResult> = partitions
            .iter()
            .enumerate()
            .map(|(i, b)| {
                serde_json::from_slice(b)
                    .map_err(|e| ClusterError::wire(format!("partition {i}'s counts"), e))
            })
            .collect::<Result<_, _>>()?;
        let Merge {
            work,
            sink,
            mut report,
            sizes,
            hardlinks,
            totals,
        } = self;
        let records = sink.finish(&work.cfg.roots).map_err(ClusterError::io(
            "cannot keep the merged records (--temp-dir)",
        ))?;
        walk_problems(&mut report, walk);
        report.excluded = excluded(&work, walk);
        report.file_sizes = sizes.buckets();
        timed(&mut report, started);
        if let Some(cfg) = &work.reduce {
            let (mut red, breakdown) = trawl_reduce::assemble(cfg, &totals, &parts).map_err(
                ClusterError::io("cannot break the figures down (--temp-dir)"),
            )?;
            red.hardlinks = hardlinks;
            report.reduction = Some(red);
            report.breakdown = breakdown;
        }
        duplicate_directories(&work, &records, &mut report)?;
        if work.list_files {
            report.files = records.file_list().map_err(ClusterError::io(
                "cannot list the merged records (--temp-dir)",
            ))?;
        }
        Ok(ScanResult {
            report,
            records,
            media: Vec::new(),
            spilled: false,
            roots: work.cfg.roots.clone(),
            duplicates: None,
        })
    }
}

/// What the user's rules left out: the rules, and what the walk found they matched.
fn excluded(work: &ScanWork, walk: &Listing) -> Option<ExcludedJson> {
    let rules = &work.cfg.walk.excluding;
    (!rules.is_empty()).then(|| ExcludedJson {
        patterns: rules.patterns().to_vec(),
        if_present: rules
            .if_present_bytes()
            .into_iter()
            .map(trawl_report::JsonPath::from_bytes)
            .collect(),
        ..walk.excluded.clone()
    })
}

/// The directories whose contents are the same, from the merged records, where asked for
/// and a digest compares them.
fn duplicate_directories(
    work: &ScanWork,
    records: &trawl_engine::Records,
    report: &mut ScanReport,
) -> Result<(), ClusterError> {
    if work.duplicate_directories
        && let Some(alg) = trawl_engine::comparing_digest(&work.algorithms)
    {
        let groups = trawl_engine::duplicate_directories(
            records,
            &work.cfg.roots,
            alg,
            &work.spill_dir(),
            work.record_memory,
        )
        .map_err(ClusterError::io("cannot compare directories (--temp-dir)"))?;
        report
            .breakdown
            .get_or_insert_with(Default::default)
            .duplicate_directories = Some(groups);
    }
    Ok(())
}

/// The walk's skipped and failed entries joined to the shards', in path order as one machine
/// gives them, and counted.
fn walk_problems(report: &mut ScanReport, walk: &Listing) {
    let mut skipped = walk.skipped.clone();
    skipped.append(&mut report.skipped);
    FileJson::in_path_order(&mut skipped);
    report.skipped = skipped;
    let mut failed = walk.failed.clone();
    failed.append(&mut report.failed);
    FileJson::in_path_order(&mut failed);
    report.failed = failed;
    report.totals.skipped = report.skipped.len() as u64;
    report.totals.failed = report.failed.len() as u64;
}

/// The scan's seconds from `started`, its rate, and this process's peak memory.
fn timed(report: &mut ScanReport, started: Instant) {
    let seconds = started.elapsed().as_secs_f64();
    report.totals.seconds = seconds;
    report.totals.bytes_per_second = if seconds > 0.0 {
        report.totals.bytes as f64 / seconds
    } else {
        0.0
    };
    report.totals.peak_rss_bytes = trawl_engine::peak_rss();
    report.totals.peak_anon_bytes = trawl_engine::peak_anon();
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_report::{ErrorJson, JsonPath};

    fn failed(kind: &str, message: &str) -> FileJson {
        FileJson {
            path: JsonPath::from_bytes(b"/t/d/f"),
            size: None,
            mtime: None,
            digests: Default::default(),
            skipped: None,
            error: Some(ErrorJson {
                kind: kind.into(),
                message: message.into(),
                worker: Some("b (tcp://h:2)".into()),
            }),
            flv: None,
        }
    }

    /// A file one worker listed and another could not find or open is said to be seen
    /// differently by the two, both named; by the same worker, or failing otherwise, it is
    /// said as one machine says it.
    #[test]
    fn a_file_listed_by_one_worker_and_not_read_by_another_names_both() {
        let by = |lister: &'static str| {
            move |name: &[u8]| (name == b"/t/d/f").then(|| lister.to_string())
        };
        let mut f = failed("vanished", "/t/d/f: vanished before it could be read");
        seen_otherwise(&mut f, "b (tcp://h:2)", &by("a (tcp://h:1)"));
        let m = f.error.unwrap().message;
        assert!(
            m.starts_with(
                "/t/d/f: listed by worker a (tcp://h:1), not found by worker b (tcp://h:2)"
            ),
            "{m}"
        );
        assert!(m.contains("the workers see the tree differently"), "{m}");
        let mut f = failed(
            "open",
            "/t/d/f: cannot open: Permission denied (os error 13)",
        );
        seen_otherwise(&mut f, "b (tcp://h:2)", &by("a (tcp://h:1)"));
        assert_eq!(
            f.error.unwrap().message,
            "/t/d/f: cannot open: Permission denied (os error 13), on worker b (tcp://h:2); \
             worker a (tcp://h:1) listed it: the workers see the tree differently (permissions, \
             another mount?)"
        );
        // An object the store no longer has.
        let by_s3 = |name: &[u8]| (name == b"s3://b/p/f").then(|| "a (tcp://h:1)".to_string());
        let mut f = failed("vanished", "s3://b/p/f: vanished before it could be read");
        f.path = JsonPath::from_bytes(b"s3://b/p/f");
        seen_otherwise(&mut f, "b (tcp://h:2)", &by_s3);
        let m = f.error.unwrap().message;
        assert!(
            m.starts_with("s3://b/p/f: listed by worker a (tcp://h:1), not found by worker b")
                && m.contains("deleted since it was listed"),
            "{m}"
        );
        for (kind, lister) in [("open", "b (tcp://h:2)"), ("read", "a (tcp://h:1)")] {
            let mut f = failed(kind, "as it was");
            seen_otherwise(&mut f, "b (tcp://h:2)", &by(lister));
            assert_eq!(f.error.unwrap().message, "as it was");
        }
    }
}
