//! A cluster scan's pieces, as the Python package calls them in-process: the plan parsed from
//! `trawl scan`'s own flags ([`ClusterPlan`]), one directory's listing (the distributed walk),
//! one shard's map (digests and records, fingerprints packed per partition), one partition's
//! reduce, and the outputs written from the merged parts exactly as `trawl scan` writes them.

pub mod audit;

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use clap::Parser;
use serde::{Deserialize, Serialize};
pub use trawl_engine::shards::{Shard, pack};
use trawl_engine::{Scan, ScanOptions, ScanOutcome, ScanResult};
use trawl_reduce::cluster::{MapTotals, PartitionResult};
use trawl_report::JsonPath;
pub use trawl_report::scan::FileJson;
use trawl_report::scan::{ErrorJson, ScanReport, SizeHistogram};
use trawl_walk::{SkipKind, WalkItem};

use crate::commands::scan::{Outputs, write};
use crate::flags::LowArgs;
use crate::flags::hiargs::ScanPlan;
use crate::flags::lowargs::Command;

/// `trawl scan`'s flags, checked for what a cluster can do.
pub struct ClusterPlan {
    plan: ScanPlan,
}

/// The outputs of a cluster scan, open (as temporary files) until written; dropped unwritten,
/// they leave nothing behind.
pub struct OpenOutputs(Outputs);

/// A directory's entries for the cluster's walk.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Listing {
    /// (path, size, device, inode, links) of each regular file.
    pub files: Vec<(PathBuf, u64, u64, u64, u64)>,
    /// Subdirectories to list next.
    pub dirs: Vec<PathBuf>,
    /// Entries not read (not regular files) and entries that could not be listed, as the
    /// report records them.
    pub skipped: Vec<FileJson>,
    pub failed: Vec<FileJson>,
}

/// What one shard's map returns: its report (no `files`, no reduction), its records exported,
/// its reduction totals, and one fingerprint batch set per partition.
pub struct MapResult {
    pub report: Vec<u8>,
    pub records: Vec<u8>,
    pub totals: Vec<u8>,
    pub partitions: Vec<Vec<u8>>,
}

/// A shard's map result as the client merges it.
pub struct ShardPart {
    pub report: Vec<u8>,
    pub records: Vec<u8>,
    pub totals: Vec<u8>,
}

impl ClusterPlan {
    /// Parses `trawl scan`'s arguments (without `trawl scan` itself); refuses what a cluster
    /// does not do yet, naming the flag.
    pub fn parse(args: Vec<OsString>) -> anyhow::Result<ClusterPlan> {
        let mut argv: Vec<OsString> = vec!["trawl".into(), "scan".into()];
        argv.extend(args);
        let invocation = crate::flags::hiargs::invocation(&argv[1..]);
        let low = LowArgs::try_parse_from(argv).map_err(|e| anyhow::anyhow!("{}", e.render()))?;
        let Command::Scan(a) = low.command else {
            bail!("not a scan");
        };
        let mut plan = ScanPlan::from_args(&a)?;
        plan.invocation = invocation;
        for (set, flag) in [
            (plan.jsonl.is_some(), "--jsonl"),
            (plan.ncdu.is_some(), "--ncdu"),
            (plan.duplicates.is_some(), "--duplicates"),
            (plan.media_index.is_some(), "--media-index"),
            (plan.cfg.walk.follow_links, "--follow"),
            (
                plan.reduce
                    .as_ref()
                    .and_then(|r| r.sample)
                    .is_some_and(|s| s < 1.0),
                "--sample",
            ),
        ] {
            if set {
                bail!("{flag}: not available in a cluster scan (trawl scan has it)");
            }
        }
        Ok(ClusterPlan { plan })
    }

    /// Whether the scan measures data reduction (else the maps ship no fingerprints).
    pub fn reducing(&self) -> bool {
        self.plan.reduce.is_some()
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.plan.cfg.roots
    }

    /// Opens the outputs (before any reading: a bad path costs nothing) and returns their
    /// (device, inode) so that the walk leaves them out.
    pub fn open_outputs(&self) -> anyhow::Result<(OpenOutputs, Vec<(u64, u64)>)> {
        let o = Outputs::open(&self.plan)?;
        let ids = o.identities();
        Ok((OpenOutputs(o), ids))
    }

    /// Root number `idx` looked at as the walk looks at a root: a file, something skipped, or
    /// a directory to list.
    pub fn list_root(&self, idx: usize) -> Listing {
        let root = &self.plan.cfg.roots[idx];
        let mut out = Listing::default();
        match std::fs::symlink_metadata(root) {
            Err(e) => out
                .failed
                .push(problem(root, None, Some(&e.to_string()), "io")),
            Ok(md) => {
                let target = if md.file_type().is_symlink() {
                    std::fs::metadata(root).ok()
                } else {
                    Some(md)
                };
                match target {
                    None => out
                        .skipped
                        .push(problem(root, Some(SkipKind::Symlink), None, "")),
                    Some(md) if md.is_file() => {
                        out.files
                            .push((root.clone(), md.len(), md.dev(), md.ino(), md.nlink()))
                    }
                    Some(md) if md.is_dir() => out.dirs.push(root.clone()),
                    Some(md) => out.skipped.push(problem(
                        root,
                        Some(SkipKind::of(&md.file_type())),
                        None,
                        "",
                    )),
                }
            }
        }
        out
    }

    /// Lists one directory of root number `idx`.
    pub fn list_dir(&self, idx: usize, dir: &Path) -> Listing {
        let opts = &self.plan.cfg.walk;
        let root_dev = if opts.one_file_system {
            std::fs::metadata(&self.plan.cfg.roots[idx])
                .ok()
                .map(|m| m.dev())
        } else {
            None
        };
        let l = trawl_walk::list_directory(idx, dir, opts, root_dev, &trawl_stop::Stop::new());
        let mut out = Listing {
            dirs: l.dirs,
            ..Listing::default()
        };
        for item in l.items {
            match item {
                WalkItem::File(f) => {
                    let nlink = std::fs::symlink_metadata(&f.path).map_or(1, |m| m.nlink());
                    out.files.push((f.path, f.size, f.dev, f.ino, nlink));
                }
                WalkItem::Skipped { path, kind } => {
                    out.skipped.push(problem(&path, Some(kind), None, ""))
                }
                WalkItem::Error(e) => {
                    let path = e.path().map(Path::to_path_buf).unwrap_or_default();
                    out.failed
                        .push(problem(&path, None, Some(&e.to_string()), "walk"))
                }
            }
        }
        out
    }

    /// Reads one shard's files: digests and records as `trawl scan` keeps them, the reduction
    /// folded into `partitions` fingerprint batches.
    pub fn map(&self, files: Vec<PathBuf>, partitions: u32) -> anyhow::Result<MapResult> {
        let p = &self.plan;
        let keep = p.json.is_some() || !p.manifests.is_empty() || p.html.is_some();
        let scan = Scan::new(ScanOptions {
            cfg: p.cfg.clone(),
            algorithms: p.algorithms.clone(),
            reduce: p.reduce.clone(),
            media: p.media,
            exclude: Vec::new(),
            count_links: p.count_links,
            file_records: false,
            keep_records: keep,
            record_memory: p.record_memory,
            temp_dir: p.temp_dir.clone(),
            media_indexes: false,
            duplicates: None,
            duplicate_directories: false,
            disk_usage: false,
            files: Some(files),
            map_partitions: Some(partitions),
        });
        // Each map has its own token: a task that failed must not stop the next one.
        let stop = trawl_stop::Stop::new();
        let result = match scan.run(&stop, &trawl_scan::NoProgress, &mut |_| {})? {
            ScanOutcome::Finished(r) => r,
            ScanOutcome::Stopped(r) => bail!("the shard's scan stopped: {r:?}"),
        };
        let map = result.map.unwrap_or_default();
        Ok(MapResult {
            report: serde_json::to_vec(&result.report)?,
            records: result.records.export()?,
            totals: serde_json::to_vec(&map.totals)?,
            partitions: map.partitions,
        })
    }

    /// The client's merge of the shards' parts, taken one at a time as they arrive (its
    /// records wait in a spool past `--memory`'s share, as one machine's do).
    pub fn merge(&self) -> Merge {
        let p = &self.plan;
        let spill = p.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        let keep = p.json.is_some() || !p.manifests.is_empty() || p.html.is_some();
        Merge {
            sink: trawl_engine::records::RecordSink::new(&spill, p.record_memory, keep, false),
            report: trawl_engine::scan::empty_report(&p.cfg, &p.algorithms),
            sizes: SizeHistogram::default(),
            hardlinks: Default::default(),
            totals: Vec::new(),
        }
    }

    /// Writes the outputs from the merged shards and every partition's counts as `trawl scan`
    /// does (its summary included); returns the exit code. `walk`: the listings' skipped and
    /// failed entries.
    pub fn finish(
        &self,
        outputs: OpenOutputs,
        merge: Merge,
        partitions: Vec<Vec<u8>>,
        walk: &Listing,
        started: Instant,
    ) -> u8 {
        let _run = crate::stop::begin_run();
        let written = self
            .result(merge, partitions, walk, started)
            .and_then(|result| write(outputs.0, &self.plan, result));
        crate::finish(written.unwrap_or_else(|e| {
            crate::messages::error(format_args!("{}", crate::describe(&e)));
            crate::Outcome::Trouble
        }))
    }

    fn result(
        &self,
        merge: Merge,
        partitions: Vec<Vec<u8>>,
        walk: &Listing,
        started: Instant,
    ) -> anyhow::Result<ScanResult> {
        let p = &self.plan;
        let spill = p.temp_dir.clone().unwrap_or_else(std::env::temp_dir);
        let parts: Vec<PartitionResult> = partitions
            .iter()
            .enumerate()
            .map(|(i, b)| serde_json::from_slice(b).with_context(|| format!("partition {i}")))
            .collect::<anyhow::Result<_>>()?;
        let Merge {
            sink,
            mut report,
            sizes,
            hardlinks,
            totals,
        } = merge;
        let records = sink
            .finish(&p.cfg.roots)
            .context("cannot keep the merged records (--temp-dir)")?;
        // The walk's problems first, as one machine meets them.
        let mut skipped = walk.skipped.clone();
        skipped.append(&mut report.skipped);
        report.skipped = skipped;
        let mut failed = walk.failed.clone();
        failed.append(&mut report.failed);
        report.failed = failed;
        report.file_sizes = sizes.buckets();
        report.totals.skipped = report.skipped.len() as u64;
        report.totals.failed = report.failed.len() as u64;
        let seconds = started.elapsed().as_secs_f64();
        report.totals.seconds = seconds;
        report.totals.bytes_per_second = if seconds > 0.0 {
            report.totals.bytes as f64 / seconds
        } else {
            0.0
        };
        report.totals.peak_rss_bytes = trawl_engine::peak_rss();
        if let Some(cfg) = &p.reduce {
            let (mut red, breakdown) = trawl_reduce::cluster::assemble(cfg, &totals, &parts)
                .context("cannot break the figures down (--temp-dir)")?;
            red.hardlinks = hardlinks;
            report.reduction = Some(red);
            report.breakdown = breakdown;
        }
        if p.json.is_some() || p.html.is_some() {
            if let Some(alg) = trawl_engine::duplicates::comparing_digest(&p.algorithms) {
                let groups = trawl_engine::dupdirs::find(
                    &records,
                    &p.cfg.roots,
                    alg,
                    &spill,
                    p.record_memory,
                )
                .context("cannot compare directories (--temp-dir)")?;
                report
                    .breakdown
                    .get_or_insert_with(Default::default)
                    .duplicate_directories = Some(groups);
            }
            if p.json.is_some() {
                report.files = records.file_list()?;
            }
        }
        Ok(ScanResult {
            report,
            records,
            media: Vec::new(),
            spilled: false,
            roots: p.cfg.roots.clone(),
            duplicates: None,
            map: None,
            contention: None,
        })
    }
}

/// The shards' parts merged so far (see [`ClusterPlan::merge`]).
pub struct Merge {
    sink: trawl_engine::records::RecordSink,
    report: ScanReport,
    sizes: SizeHistogram,
    hardlinks: trawl_report::reduction::HardLinks,
    /// Each map's reduction totals, in map order (the partitions' attribution numbers maps by
    /// it).
    totals: Vec<MapTotals>,
}

impl Merge {
    /// Takes the next shard's part (in the order its map was reduced in).
    pub fn add(&mut self, part: &ShardPart) -> anyhow::Result<()> {
        let i = self.totals.len();
        let r: ScanReport =
            serde_json::from_slice(&part.report).with_context(|| format!("shard {i}: report"))?;
        let t: MapTotals =
            serde_json::from_slice(&part.totals).with_context(|| format!("shard {i}: totals"))?;
        self.sink
            .import(&part.records)
            .with_context(|| format!("shard {i}: records"))?;
        let report = &mut self.report;
        report.totals.files += r.totals.files;
        report.totals.bytes += r.totals.bytes;
        report.skipped.extend(r.skipped);
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
}

/// A report record for an entry not read.
fn problem(path: &Path, kind: Option<SkipKind>, error: Option<&str>, error_kind: &str) -> FileJson {
    FileJson {
        path: JsonPath::shown(path),
        size: None,
        mtime: None,
        digests: Default::default(),
        skipped: kind.map(|k| k.name().to_string()),
        error: error.map(|m| ErrorJson {
            kind: error_kind.to_string(),
            message: m.to_string(),
        }),
        flv: None,
    }
}

/// The version of the formats a cluster's tasks exchange: every worker must run the same.
pub fn wire_version() -> String {
    format!(
        "trawl {} batch {} audit 2",
        env!("CARGO_PKG_VERSION"),
        trawl_reduce::batch::BATCH_VERSION
    )
}

/// Report records (a listing's skipped or failed entries) as a JSON array.
pub fn records_json(v: &[FileJson]) -> Result<Vec<u8>, String> {
    serde_json::to_vec(v).map_err(|e| e.to_string())
}

/// The walk's skipped and failed entries from the listings' JSON arrays.
pub fn walk_problems(skipped: &[Vec<u8>], failed: &[Vec<u8>]) -> anyhow::Result<Listing> {
    let mut out = Listing::default();
    for (from, to) in [(skipped, &mut out.skipped), (failed, &mut out.failed)] {
        for b in from {
            let v: Vec<FileJson> = serde_json::from_slice(b).context("a listing's records")?;
            to.extend(v);
        }
    }
    Ok(out)
}

/// Counts one partition from every map's batch set (in map order): the counts as JSON, or
/// the reason they could not be read, naming the map.
pub fn reduce(parts: &[&[u8]]) -> Result<Vec<u8>, String> {
    let r = trawl_reduce::cluster::reduce_partition(parts).map_err(|e| e.to_string())?;
    serde_json::to_vec(&r).map_err(|e| e.to_string())
}
