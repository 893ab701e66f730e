//! `Scan`: one read pass over the roots with digests, data reduction and the FLV index, folded
//! into a [`ScanReport`]. Files are reported as they finish ([`Notice`]), so that a caller can
//! stream them (JSON Lines) and show problems at once; the report comes at the end.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use trawl_digest::Algorithm;
use trawl_media::{FlvIndex, MediaOutput};
use trawl_reduce::{Contention, Counter, FileReduce, MapOutput};
use trawl_report::{
    ErrorJson, ExcludedTally, FileJson, FileList, HardLinks, JsonPath, MediaReport, MediaTotals,
    SCHEMA_VERSION, ScanReport, SizeHistogram, Totals,
};
use trawl_scan::{Event, FileRecord, Input, Progress, ScanConfig, ScanError, Stages};
use trawl_stop::{Reason, Stop};
use trawl_walk::SkipKind;

use crate::duplicates::{DuplicateSink, Duplicates};
use crate::lanes::ScanLanes;
use crate::names::media_index_name;
use crate::options::ScanOptions;
use crate::records::{RecordSink, Records, StoredFile};
use media::{flv_row, flv_summary, keyframe_times, take_media};

/// What happens on the way, on the caller's thread, as it happens.
#[derive(Debug)]
pub enum Notice<'a> {
    /// A file read to its end; [`file_json`] makes the record a JSON Lines stream carries.
    File(&'a FileRecord),
    /// Not a regular file, or a symbolic link not followed (the record carries `skipped`).
    Skipped {
        /// The entry.
        path: &'a Path,
        /// What it is.
        kind: SkipKind,
        /// Its record in the report.
        record: &'a FileJson,
    },
    /// A file or directory that could not be read (the record carries `error`).
    Failed {
        /// What failed, naming the path.
        error: &'a ScanError,
        /// Its record in the report.
        record: &'a FileJson,
    },
    /// Something odd in an FLV file (the index is still written, up to where it stops).
    MediaProblem {
        /// The file.
        path: &'a Path,
        /// What is odd.
        problem: &'a trawl_media::FlvProblem,
    },
    /// A file that looked like FLV could not be indexed.
    MediaFailed {
        /// What went wrong, naming the file.
        message: &'a str,
    },
}

/// A scan that ran to its end.
#[derive(Debug)]
pub struct ScanResult {
    /// The report (without `files` unless listed; see [`ScanOptions::list_files`]).
    pub report: ScanReport,
    /// Every file read, sorted by path (bytes).
    pub records: Records,
    /// Each FLV file indexed, with its full index (with [`ScanOptions::media_indexes`]).
    pub media: Vec<(PathBuf, usize, FlvIndex)>,
    /// The fingerprint index passed its memory bound and spilled to disk.
    pub spilled: bool,
    /// The roots as given (what manifest names are made relative to).
    pub roots: Vec<PathBuf>,
    /// The groups of equal files (with [`ScanOptions::duplicates`]).
    pub duplicates: Option<Duplicates>,
}

/// How a scan ended.
#[derive(Debug)]
pub enum ScanOutcome {
    /// Every file was read or named as failed.
    Finished(Box<ScanResult>),
    /// Stopped by the token; nothing is complete.
    Stopped(Reason),
}

/// Why a scan could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ScanRunError {
    /// The fingerprint index could not spill.
    #[error("{}: cannot write the fingerprint spill files (--temp-dir): {source}", dir.display())]
    Spill {
        /// Where spills go.
        dir: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
    /// The reduction failed to fold a file in, and kept no error that says why.
    #[error("{}: the data reduction failed to fold a file in (--temp-dir)", dir.display())]
    Folding {
        /// Where spills go.
        dir: PathBuf,
    },
    /// The records could not wait on disk.
    #[error("{}: cannot keep the scan's records (--temp-dir): {source}", dir.display())]
    Records {
        /// Where records wait.
        dir: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
}

/// A scan, ready to run.
pub struct Scan {
    opts: ScanOptions,
    /// What the last run left beside its result: a map's batches, the readers' contention.
    aside: Mutex<Aside>,
}

/// What a run leaves beside its result, for the callers that ask.
#[derive(Default)]
struct Aside {
    map: Option<MapOutput>,
    contention: Option<Contention>,
}

impl Scan {
    /// A scan of `opts`; its threads count their CPU time in stages of its own
    /// ([`Scan::stages`]).
    pub fn new(mut opts: ScanOptions) -> Scan {
        let stages = Arc::new(Stages::default());
        opts.cfg.stages = stages.clone();
        opts.cfg.walk.stages = stages.clone();
        if let Some(r) = opts.reduce.as_mut() {
            r.stages = stages;
        }
        Scan {
            opts,
            aside: Mutex::new(Aside::default()),
        }
    }

    /// Where this scan's threads count their CPU time and waits, by stage: the caller adds
    /// what it does after (its outputs, [`Stage::Output`](trawl_scan::Stage::Output)).
    pub fn stages(&self) -> &Arc<Stages> {
        &self.opts.cfg.stages
    }

    /// A map's batches and totals, after a run of a [`ScanOptions::shard`] (once).
    pub fn take_map(&self) -> Option<MapOutput> {
        self.aside
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .take()
    }

    /// After a run with a reduction: how often readers folding files in found a partition or
    /// a slot busy (for measurements).
    pub fn contention(&self) -> Option<Contention> {
        self.aside
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contention
    }

    /// Reads everything once. `notice` is called on this thread; a caller that cannot keep up
    /// with what it is told (an output failed) requests `stop` with a reason.
    pub fn run(
        &self,
        stop: &Stop,
        progress: &dyn Progress,
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> Result<ScanOutcome, ScanRunError> {
        let o = &self.opts;
        let start = Instant::now();
        // This thread takes the readers' results in and makes the report.
        let _clock = o.cfg.stages.clock(trawl_scan::Stage::Merge);
        let _watch = crate::memory::Watch::start();
        let reduce_cfg = o.reduce.clone().map(|mut r| {
            if r.threads == 0 {
                r.threads = o.cfg.threads;
            }
            Arc::new(r)
        });
        let counter = reduce_cfg.clone().map(|c| {
            Arc::new(match o.map_partitions {
                Some(p) => Counter::mapping(c, p),
                None => Counter::new(c),
            })
        });
        let lanes = ScanLanes {
            digests: o.algorithms.clone(),
            reduce: reduce_cfg,
            counter: counter.clone(),
            media: o.media,
            links: (o.reduce.is_some() && !o.count_links).then(|| {
                let naming = o.reduce.as_ref().is_some_and(|r| r.attributing());
                Arc::new(crate::lanes::Links::new(naming, &spill_dir(o)))
            }),
        };
        let mut collected = Collected::new(o, counter, stop);
        let mut sink = |ev| collected.event(ev, notice);
        match (&o.listing, &o.files) {
            (Some(l), Some(f)) => {
                trawl_scan::scan_named(&o.cfg, &**l, f, &lanes, progress, stop, &mut sink);
            }
            (Some(l), None) => {
                trawl_scan::scan_listing(&o.cfg, &**l, &lanes, progress, stop, &mut sink);
            }
            (None, Some(f)) => {
                trawl_scan::scan(&o.cfg, Input::Files(f), &lanes, progress, stop, &mut sink)
            }
            (None, None) => {
                trawl_scan::scan(&o.cfg, Input::Walk, &lanes, progress, stop, &mut sink)
            }
        }
        let links = lanes.links.clone();
        drop(lanes);
        let (outcome, aside) = collected.finish(links, start)?;
        *self.aside.lock().unwrap_or_else(|e| e.into_inner()) = aside;
        Ok(outcome)
    }
}

/// Where records, failures and files wait on disk: `--temp-dir`, or the reduction's, or the
/// system's.
fn spill_dir(o: &ScanOptions) -> PathBuf {
    o.temp_dir
        .clone()
        .or_else(|| o.reduce.as_ref().and_then(|r| r.temp_dir.clone()))
        .unwrap_or_else(std::env::temp_dir)
}

/// What a scan's events add up to, as they come (on the caller's thread), and the report made
/// of it at the end.
struct Collected<'a> {
    o: &'a ScanOptions,
    stop: &'a Stop,
    counter: Option<Arc<Counter>>,
    sink: RecordSink,
    dups: Option<DuplicateSink>,
    record_err: Option<std::io::Error>,
    media: Vec<(PathBuf, usize, FlvIndex)>,
    media_totals: MediaTotals,
    flv: Option<MediaReport>,
    bytes: u64,
    sizes: SizeHistogram,
    skipped: Vec<FileJson>,
    failed: Vec<FileJson>,
    excluded: ExcludedTally,
    counter_failed: bool,
}

impl<'a> Collected<'a> {
    fn new(o: &'a ScanOptions, counter: Option<Arc<Counter>>, stop: &'a Stop) -> Collected<'a> {
        Collected {
            o,
            stop,
            counter,
            sink: RecordSink::new(
                &spill_dir(o),
                o.record_memory,
                o.keep_records || o.file_records,
                o.disk_usage,
            ),
            dups: o
                .duplicates
                .map(|a| DuplicateSink::new(&spill_dir(o), o.record_memory, a)),
            record_err: None,
            media: Vec::new(),
            media_totals: MediaTotals::default(),
            flv: None,
            bytes: 0,
            sizes: SizeHistogram::default(),
            skipped: Vec::new(),
            failed: Vec::new(),
            excluded: ExcludedTally::default(),
            counter_failed: false,
        }
    }

    fn event(&mut self, ev: Event, notice: &mut dyn FnMut(Notice<'_>)) {
        match ev {
            Event::File(rec) if self.o.exclude.contains(&(rec.dev, rec.ino)) => {}
            Event::File(rec) => self.file(rec, notice),
            Event::Skipped { path, kind } => {
                let record = problem_json(&path, Some(kind), None);
                notice(Notice::Skipped {
                    path: &path,
                    kind,
                    record: &record,
                });
                self.skipped.push(record);
            }
            Event::Failed(e) => {
                let record = problem_json(
                    e.path().unwrap_or(Path::new("")),
                    None,
                    Some(ErrorJson {
                        kind: e.kind().to_string(),
                        message: e.to_string(),
                        worker: None,
                    }),
                );
                notice(Notice::Failed {
                    error: &e,
                    record: &record,
                });
                self.failed.push(record);
            }
            // Counted, and named up to a bound; in no output but the report's `excluded`.
            Event::Excluded(x) => self.excluded.add(
                &x.path,
                x.kind.name(),
                x.size,
                x.why.pattern(),
                x.why.holds(),
            ),
        }
    }

    /// A file read to its end: its record kept, its FLV index taken, its problems said.
    fn file(&mut self, mut rec: FileRecord, notice: &mut dyn FnMut(Notice<'_>)) {
        // The reduction lane folded the file in on the thread that read it; if that failed (a
        // spill could not be written), the scan stops.
        if let Some(acc) = self.counter.as_ref()
            && acc.failed()
            && !self.counter_failed
        {
            self.counter_failed = true;
            self.stop.request(Reason::Failed);
        }
        keep_digests_and_index(&mut rec, notice);
        notice(Notice::File(&rec));
        self.bytes += rec.size;
        self.sizes.add(rec.size);
        let m = take_media(&mut rec);
        if let Some(Ok(i)) = &m {
            self.media_totals.files += 1;
            self.media_totals.keyframes += i.keyframes.len() as u64;
            self.media_totals.with_problems += u64::from(!i.problems.is_empty());
        }
        if let Some(m) = &m {
            self.flv
                .get_or_insert_with(MediaReport::default)
                .add(flv_row(&rec, m), &keyframe_times(m));
        }
        if self.record_err.is_none()
            && let Err(e) = self
                .sink
                .add(&rec, m.as_ref().map(flv_summary))
                .and_then(|()| self.dups.as_mut().map_or(Ok(()), |d| d.add(&rec)))
        {
            self.record_err = Some(e);
            self.stop.request(Reason::Failed);
        }
        if self.o.media_indexes
            && let Some(Ok(i)) = m
        {
            self.media.push((rec.path, rec.root, i));
        }
    }

    /// The scan's result: the counts settled, the records sorted, the report made.
    fn finish(
        mut self,
        links: Option<Arc<crate::lanes::Links>>,
        start: Instant,
    ) -> Result<(ScanOutcome, Aside), ScanRunError> {
        let o = self.o;
        let (spill, records_err) = (spill_error(o), records_error(o));
        if let Some(a) = self.counter.as_ref()
            && a.failed()
        {
            return Err(match a.finish() {
                Err(source) => spill(source),
                Ok(()) => ScanRunError::Folding { dir: spill_dir(o) },
            });
        }
        if let Some(source) = self.record_err.take() {
            return Err(records_err(source));
        }
        if let Some(r) = self.stop.reason() {
            return Ok((ScanOutcome::Stopped(r), Aside::default()));
        }
        if let Some(a) = self.counter.as_ref() {
            if let Some(k) = &links {
                k.settle(a).map_err(spill)?;
            }
            a.finish().map_err(spill)?;
        }
        // The attribution and the settling at the end are part of the scan's time.
        let seconds = start.elapsed().as_secs_f64();
        self.report(links.as_deref(), seconds)
    }

    /// The report of a scan that ran to its end, its records sorted and its lists in path
    /// order, and what it leaves aside.
    fn report(
        self,
        links: Option<&crate::lanes::Links>,
        seconds: f64,
    ) -> Result<(ScanOutcome, Aside), ScanRunError> {
        let (o, acc, flv) = (self.o, self.counter, self.flv);
        let (mut media, mut skipped, mut failed) = (self.media, self.skipped, self.failed);
        let records_err = records_error(o);
        let records = self.sink.finish(&o.cfg.roots).map_err(records_err)?;
        media.sort_by(|a, b| a.0.as_os_str().as_bytes().cmp(b.0.as_os_str().as_bytes()));
        FileJson::in_path_order(&mut skipped);
        FileJson::in_path_order(&mut failed);
        let duplicates = self
            .dups
            .map(DuplicateSink::finish)
            .transpose()
            .map_err(records_err)?;
        let breakdown = breakdown(o, acc.as_deref(), &records)?;
        let map = acc.as_ref().and_then(|a| a.take_map());
        let (reduction, spilled) = reduction(acc.as_deref(), links);
        let report = ScanReport {
            totals: totals(&records, self.bytes, (&skipped, &failed), seconds),
            reduction,
            cancelled: false,
            file_sizes: self.sizes.buckets(),
            files: if o.file_records {
                records.file_list().map_err(records_err)?
            } else {
                FileList::default()
            },
            media: self.media_totals,
            flv: flv.map(|mut f| {
                f.listed.sort_by(|a, b| a.path.cmp(&b.path));
                f
            }),
            breakdown,
            duplicates: duplicates.as_ref().map(|d| d.summary.clone()),
            excluded: excluded_report(&o.cfg.walk.excluding, self.excluded),
            reuse: o
                .cfg
                .known
                .as_deref()
                .map(|k| reuse_report(k, records.len())),
            skipped,
            failed,
            ..empty_report(&o.cfg, &o.algorithms)
        };
        let outcome = ScanOutcome::Finished(Box::new(ScanResult {
            report,
            records,
            media,
            spilled,
            roots: o.cfg.roots.clone(),
            duplicates,
        }));
        let aside = Aside {
            map,
            contention: acc.as_ref().map(|a| a.contention()),
        };
        Ok((outcome, aside))
    }
}

/// A record's outputs kept to its digests and FLV index (the reduction's product dropped),
/// what the index found odd, or why it failed, told.
fn keep_digests_and_index(rec: &mut FileRecord, notice: &mut dyn FnMut(Notice<'_>)) {
    rec.outputs.retain(|out| {
        if out.other::<FileReduce>().is_some() {
            return false;
        }
        match out.other::<MediaOutput>() {
            None => true,
            Some(None) => false,
            Some(Some(Ok(i))) => {
                for p in &i.problems {
                    notice(Notice::MediaProblem {
                        path: &rec.path,
                        problem: p,
                    });
                }
                true
            }
            Some(Some(Err(e))) => {
                notice(Notice::MediaFailed { message: e });
                true
            }
        }
    });
}

/// A finished scan's totals: the files read (`records`) and their `bytes`, the entries
/// skipped and failed, the time taken and the memory at its peak.
fn totals(
    records: &Records,
    bytes: u64,
    (skipped, failed): (&[FileJson], &[FileJson]),
    seconds: f64,
) -> Totals {
    Totals {
        files: records.len(),
        bytes,
        skipped: skipped.len() as u64,
        failed: failed.len() as u64,
        seconds,
        bytes_per_second: if seconds > 0.0 {
            bytes as f64 / seconds
        } else {
            0.0
        },
        peak_rss_bytes: crate::peak_rss(),
        peak_anon_bytes: crate::peak_anon(),
    }
}

/// The report's `reuse`: what `known` gave of the scan's `files` (the catalog and the rule are
/// the caller's to say).
fn reuse_report(known: &trawl_scan::Known, files: u64) -> trawl_report::ReuseJson {
    let c = known.counts();
    trawl_report::ReuseJson {
        taken: c.taken,
        read: files.saturating_sub(c.taken),
        changed: c.changed,
        ..Default::default()
    }
}

/// The report's `excluded` from what the walk left out: None when no rule was given.
pub fn excluded_report(
    rules: &trawl_walk::Exclusion,
    tally: ExcludedTally,
) -> Option<trawl_report::ExcludedJson> {
    (!rules.is_empty()).then(|| tally.finish(rules.patterns(), &rules.if_present_bytes()))
}

/// A spill file's error, naming where spills go.
fn spill_error(o: &ScanOptions) -> impl Fn(std::io::Error) -> ScanRunError + Copy + '_ {
    move |source| ScanRunError::Spill {
        dir: spill_dir(o),
        source,
    }
}

/// A record file's error, naming where records wait.
fn records_error(o: &ScanOptions) -> impl Fn(std::io::Error) -> ScanRunError + Copy + '_ {
    move |source| ScanRunError::Records {
        dir: spill_dir(o),
        source,
    }
}

/// The breakdowns, with the directories of equal content when an output shows them.
fn breakdown(
    o: &ScanOptions,
    acc: Option<&Counter>,
    records: &Records,
) -> Result<Option<trawl_report::Breakdown>, ScanRunError> {
    let records_err = records_error(o);
    let mut breakdown = acc.as_ref().and_then(|a| a.breakdown());
    if o.duplicate_directories
        && (o.keep_records || o.file_records)
        && let Some(alg) = crate::duplicates::comparing_digest(&o.algorithms)
    {
        let groups =
            crate::dupdirs::find(records, &o.cfg.roots, alg, &spill_dir(o), o.record_memory)
                .map_err(records_err)?;
        breakdown
            .get_or_insert_with(Default::default)
            .duplicate_directories = Some(groups);
    }
    Ok(breakdown)
}

/// The reduction's report, hard links counted apart, and whether its indexes spilled.
fn reduction(
    acc: Option<&Counter>,
    links: Option<&crate::lanes::Links>,
) -> (Option<trawl_report::ReductionJson>, bool) {
    match acc {
        Some(a) => {
            let mut r = a.report();
            if let Some(k) = links {
                r.hardlinks = HardLinks {
                    names: k.names.load(Ordering::Relaxed),
                    bytes: k.bytes.load(Ordering::Relaxed),
                };
            }
            (Some(r), a.spilled())
        }
        None => (None, false),
    }
}

impl ScanResult {
    /// Each FLV file indexed (with [`ScanOptions::media_indexes`]), with where its index goes
    /// under `--media-index`.
    pub fn media_indexes(&self) -> Vec<(PathBuf, &FlvIndex)> {
        self.media
            .iter()
            .map(|(p, root, i)| (media_index_name(p, &self.roots, *root), i))
            .collect()
    }
}

/// A report of nothing yet: what the scan was asked (roots, digests, I/O, threads), every
/// count zero. A cluster's client fills one from its parts.
pub fn empty_report(cfg: &ScanConfig, algorithms: &[Algorithm]) -> ScanReport {
    ScanReport {
        schema_version: SCHEMA_VERSION,
        trawl_version: env!("CARGO_PKG_VERSION").to_string(),
        roots: cfg.roots.iter().map(|r| JsonPath::new(r)).collect(),
        algorithms: algorithms.iter().map(|a| a.name().to_string()).collect(),
        digest_implementations: algorithms
            .iter()
            .map(|a| (a.name().to_string(), a.implementation()))
            .collect(),
        io: format!("{:?}", cfg.io).to_lowercase(),
        threads: cfg.threads,
        totals: Totals::default(),
        reduction: None,
        cancelled: false,
        file_sizes: Vec::new(),
        files: FileList::default(),
        media: MediaTotals::default(),
        flv: None,
        breakdown: None,
        duplicates: None,
        excluded: None,
        reuse: None,
        stages: None,
        skipped: Vec::new(),
        failed: Vec::new(),
    }
}

/// One file read, as a report record.
pub fn file_json(rec: &FileRecord) -> FileJson {
    let flv = rec
        .outputs
        .iter()
        .find_map(|o| o.other::<MediaOutput>().and_then(Option::as_ref))
        .map(flv_summary);
    StoredFile::of(rec, flv).to_json()
}

fn problem_json(path: &Path, skipped: Option<SkipKind>, error: Option<ErrorJson>) -> FileJson {
    FileJson {
        path: JsonPath::shown(path),
        size: None,
        mtime: None,
        digests: Default::default(),
        skipped: skipped.map(|k| k.name().to_string()),
        error,
        flv: None,
    }
}

mod media;

#[cfg(test)]
mod tests;
