//! `trawl scan`: opens the outputs, runs [`trawl_engine::Scan`], streams JSON Lines and
//! messages as files finish, then writes the manifests, the report and the summary.

use std::io::Write;
use std::ops::ControlFlow;

use anyhow::Context;
use trawl_catalog::{Catalog, OpenMode};
use trawl_engine::{Notice, Scan, ScanOptions, ScanOutcome, ScanResult};
use trawl_manifest::Format;
use trawl_walk::SkipKind;

use super::output::{Output, write_json, write_manifests};
use crate::failure::{AtPath, about};
use crate::flags::hiargs::ScanPlan;
use crate::flags::reads::ReusePlan;
use crate::stop::Reason;
use crate::{Outcome, messages};

/// A scan's destinations, opened before anything is read: a typo in an output path must not
/// cost a full read.
pub(crate) struct Outputs {
    manifests: Vec<(Format, Output)>,
    json: Option<Output>,
    jsonl: Option<Output>,
    html: Option<Output>,
    ncdu: Option<Output>,
    dups: Option<Output>,
}

impl Outputs {
    pub(crate) fn open(plan: &ScanPlan) -> anyhow::Result<Outputs> {
        // No output may be a root that is a file, nor replace a file inside a root.
        super::output::distinct(&plan.output_paths())?;
        // An output refused by the rules is its flag's value refused.
        let create = |flag: &'static str| {
            move |p: &std::path::Path| {
                Output::create_apart(p, &plan.cfg.roots).map_err(|e| about(e, flag))
            }
        };
        if let Some(dir) = &plan.media_index {
            super::output::dir_apart("--media-index", dir, &plan.cfg.roots)?;
        }
        let mut manifests: Vec<(Format, Output)> = Vec::new();
        for m in &plan.manifests {
            manifests.push((m.format.clone(), create("--manifest")(&m.path)?));
        }
        Ok(Outputs {
            manifests,
            json: plan.json.as_deref().map(create("--json")).transpose()?,
            jsonl: plan.jsonl.as_deref().map(create("--jsonl")).transpose()?,
            html: plan.html.as_deref().map(create("--html")).transpose()?,
            ncdu: plan.ncdu.as_deref().map(create("--ncdu")).transpose()?,
            dups: plan
                .duplicates
                .as_ref()
                .map(|(p, _)| create("--duplicates")(p))
                .transpose()?,
        })
    }

    fn all(&self) -> impl Iterator<Item = &Output> {
        self.manifests
            .iter()
            .map(|(_, o)| o)
            .chain(&self.json)
            .chain(&self.jsonl)
            .chain(&self.dups)
            .chain(&self.html)
            .chain(&self.ncdu)
    }

    /// The (device, inode) of each output: our own temporary outputs may sit inside the
    /// scanned tree, and are not part of it.
    pub(crate) fn identities(&self) -> Vec<(u64, u64)> {
        self.all().filter_map(Output::identity).collect()
    }
}

pub fn run(plan: ScanPlan) -> anyhow::Result<Outcome> {
    let mut outputs = Outputs::open(&plan)?;
    let exclude = outputs.identities();
    let bar = crate::progress::Bar::new(plan.quiet);
    let scan = Scan::new(scan_options(&plan, bar.is_drawn(), exclude)?);
    let stop = crate::stop::current();
    let began = std::time::Instant::now();
    let mut lines = Lines {
        jsonl: outputs.jsonl.take(),
        failed: None,
        stop: &stop,
    };
    let outcome = scan.run(&stop, &bar, &mut |n| lines.notice(n));
    drop(bar);
    let Lines { jsonl, failed, .. } = lines;
    if let Some(e) = failed {
        return Err(match jsonl.as_ref() {
            Some(out) => out.error(e, "cannot write"),
            None => anyhow::Error::new(e),
        });
    }
    let result = match outcome? {
        ScanOutcome::Finished(r) => r,
        // Dropping the outputs removes their temporary files.
        ScanOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    if std::env::var_os("TRAWL_CONTENTION").is_some()
        && let Some(c) = scan.contention()
    {
        // For measurements (bench/scaling.py): how often a reader waited on another.
        crate::messages::to_stderr(&format!(
            "contention: {} batches, {} found their partition busy, {} slots found busy, \
             {} files numbered, {} found the name log busy\n",
            c.batches, c.busy, c.slot_busy, c.named, c.names_busy
        ));
    }
    outputs.jsonl = jsonl;
    let stats = plan.stats.then(|| Stats {
        stages: scan.stages().clone(),
        began,
    });
    write(outputs, &plan, *result, stats.as_ref())
}

/// `--stats`: the scan's stages, and when it began.
pub(crate) struct Stats {
    stages: std::sync::Arc<trawl_scan::Stages>,
    began: std::time::Instant,
}

/// Where the CPU went, taken once: the caller's thread's output work counted up to now (its
/// `clock` stopped), as the JSON report holds it and `--stats` prints it.
fn take_stages(
    stats: Option<&Stats>,
    clock: &mut Option<trawl_scan::ThreadClock<'_>>,
) -> Option<trawl_report::StagesJson> {
    drop(clock.take());
    stats.map(|s| trawl_engine::stages_report(&s.stages, s.began.elapsed().as_secs_f64()))
}

/// What the engine is asked to do, from the plan; `metadata`: the walk finds sizes (for a
/// drawn bar's totals); `exclude`: the outputs' device and inode.
fn scan_options(
    plan: &ScanPlan,
    metadata: bool,
    exclude: Vec<(u64, u64)>,
) -> anyhow::Result<ScanOptions> {
    let mut cfg = plan.cfg.clone();
    cfg.walk.metadata = metadata;
    let keep = !plan.manifests.is_empty() || plan.html.is_some();
    let o = ScanOptions::new(cfg, plan.algorithms.clone());
    let o = match &plan.objects {
        Some(l) => o.listing(l.clone()),
        None => o,
    };
    let o = o.reduce(plan.reduce.clone()).media(plan.media);
    let o = match &plan.reuse {
        Some(r) => o.reuse(known(plan, r)?)?,
        None => o,
    };
    Ok(o.media_indexes(plan.media_index.is_some())
        .exclude(exclude)
        .count_links(plan.count_links)
        .list_files(plan.json.is_some())
        .keep_records(keep)
        .disk_usage(plan.ncdu.is_some())
        .duplicate_directories(plan.json.is_some() || plan.html.is_some())
        .record_memory(plan.record_memory)
        .temp_dir(plan.temp_dir.clone())
        .duplicates(plan.duplicates.as_ref().map(|(_, a)| *a))?)
}

/// `--reuse`: the files the catalog can vouch for under the roots, from the catalog opened
/// read-only (an audit writing it meanwhile is no matter: the rows are read in one
/// transaction). A catalog that records none of a digest asked for is said: every file is
/// read.
fn known(plan: &ScanPlan, r: &ReusePlan) -> anyhow::Result<std::sync::Arc<trawl_scan::Known>> {
    // Opening a FIFO or a device would block or read a stream: a catalog is a regular file.
    if let Ok(md) = std::fs::metadata(&r.catalog)
        && !md.is_file()
    {
        let path = r.catalog.clone();
        return Err(trawl_catalog::CatalogError::NotRegular { path }.into());
    }
    let cat = Catalog::open(&r.catalog, OpenMode::Read)?;
    let theirs = cat.algorithms()?;
    let lacking: Vec<&str> = plan
        .algorithms
        .iter()
        .filter(|a| !theirs.contains(a))
        .map(|a| a.name())
        .collect();
    if !lacking.is_empty() {
        let has: Vec<&str> = theirs.iter().map(|a| a.name()).collect();
        messages::warning(format_args!(
            "--reuse {}: the catalog records no {} digest (it records {}): every file is read",
            r.catalog.display(),
            lacking.join(", "),
            if has.is_empty() {
                "none".to_string()
            } else {
                has.join(", ")
            },
        ));
    }
    let known = cat.known(
        &plan.cfg.roots,
        &plan.algorithms,
        r.ignore_inode,
        r.ignore_ctime,
    )?;
    Ok(std::sync::Arc::new(known))
}

/// What a scan says as files finish: its messages, and each file's JSON line (`--jsonl`).
struct Lines<'a> {
    /// Where the JSON lines go.
    jsonl: Option<Output>,
    /// The first write to `jsonl` that failed; no line is written after it.
    failed: Option<std::io::Error>,
    /// The run's token, requested once a line cannot be written.
    stop: &'a crate::stop::Stop,
}

impl Lines<'_> {
    fn notice(&mut self, n: Notice<'_>) {
        let file;
        let record = match n {
            Notice::File(rec) if self.jsonl.is_some() => {
                file = trawl_engine::file_json(rec);
                &file
            }
            Notice::File(_) => return,
            Notice::Skipped { path, kind, record } => {
                if kind != SkipKind::Symlink {
                    let why = kind.describe();
                    messages::warning(format_args!("{}: skipped: {why}", path.display()));
                }
                record
            }
            Notice::Failed { error, record } => {
                messages::error(format_args!("{error}"));
                record
            }
            Notice::MediaProblem { path, problem } => {
                return messages::warning(format_args!("{}: {problem}", path.display()));
            }
            Notice::MediaFailed { message } => return messages::warning(format_args!("{message}")),
        };
        if let (Some(out), None) = (self.jsonl.as_mut(), self.failed.as_ref()) {
            let r = serde_json::to_writer(&mut *out, record)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            if let Err(e) = r {
                self.failed = Some(e);
                self.stop.request(Reason::OutputFailed);
            }
        }
    }
}

/// Writes a finished scan's manifests, media indexes, duplicate groups, report, ncdu export,
/// HTML page and summary (and with `stats`, where the CPU went); the outcome from what it found.
// long: every output in the order they are written.
pub(crate) fn write(
    outputs: Outputs,
    plan: &ScanPlan,
    mut result: ScanResult,
    stats: Option<&Stats>,
) -> anyhow::Result<Outcome> {
    let mut clock = stats.map(|s| s.stages.clock(trawl_scan::Stage::Output));
    let stdout_taken = outputs.all().any(Output::is_stdout);
    let Outputs {
        manifests,
        mut json,
        mut jsonl,
        mut html,
        mut ncdu,
        mut dups,
    } = outputs;
    if let (Some(u), Some(r)) = (result.report.reuse.as_mut(), &plan.reuse) {
        u.catalog = r.catalog.display().to_string();
        u.rule = r.rule();
    }
    let records = &mut result.records;
    let ControlFlow::Continue(unwritable) = write_manifests(
        manifests,
        &mut |f| records.for_each_entry(|e| f(e)),
        &plan.algorithms,
        plan.zero,
        &plan.invocation,
        hashdeep_base(&plan.cfg.roots),
    )?
    else {
        return Ok(Outcome::Interrupted);
    };
    if let Some(dir) = &plan.media_index {
        write_media_indexes(dir, &result)?;
    }
    if let (Some(out), Some(d)) = (dups.take(), result.duplicates.as_ref()) {
        write_duplicates(out, plan, d)?;
    }
    if let Some(out) = json.take() {
        // The report holds the figures up to its own writing.
        result.report.stages = take_stages(stats, &mut clock);
        write_report(out, &mut result.report)?;
    }
    if let Some(out) = jsonl.take() {
        out.commit()?;
    }
    if let Some(mut out) = ncdu.take() {
        super::ncdu::write(&mut out, &result.records, &plan.cfg.roots[0])?;
        out.commit()?;
    }
    if let Some(out) = html.take() {
        write_page(out, plan, &mut result.report)?;
    }
    // The summary's figure is the process's peak with every output written.
    peaks(&mut result.report);
    if !plan.quiet {
        say_summary(&result, stdout_taken)?;
    }
    let stages = result.report.stages.take();
    if let Some(s) = stages.or_else(|| take_stages(stats, &mut clock)) {
        say(&trawl_printer::stages_table(&s), stdout_taken)?;
    }
    let trouble = !result.report.failed.is_empty() || unwritable > 0;
    Ok(if trouble {
        Outcome::Trouble
    } else {
        Outcome::Ok
    })
}

/// Writes the JSON report to `out`. Its memory figure is the peak so far: the files that
/// follow are read back from the records within their budget.
fn write_report(mut out: Output, report: &mut trawl_report::ScanReport) -> anyhow::Result<()> {
    peaks(report);
    write_json(&mut out, report)?;
    out.commit()
}

/// Sets the report's memory figures to the process's peaks so far.
fn peaks(report: &mut trawl_report::ScanReport) {
    report.totals.peak_rss_bytes = trawl_engine::peak_rss();
    report.totals.peak_anon_bytes = trawl_engine::peak_anon();
}

/// Writes the duplicate groups `d` to `out`: JSON where its name ends in `.json`, else text.
fn write_duplicates(
    mut out: Output,
    plan: &ScanPlan,
    d: &trawl_engine::Duplicates,
) -> anyhow::Result<()> {
    let json_format = plan
        .duplicates
        .as_ref()
        .is_some_and(|(p, _)| p.extension().is_some_and(|e| e == "json"));
    super::duplicates::write(&mut out, d, &plan.cfg.roots, json_format)?;
    out.commit()
}

/// Says the scan's summary: on stdout, or on stderr where an output took stdout.
fn say_summary(result: &ScanResult, stdout_taken: bool) -> anyhow::Result<()> {
    let s = trawl_printer::scan_summary(
        &result.report,
        trawl_printer::Spilled {
            fingerprints: result.spilled,
            records: result.records.spilled(),
            failures_named_above: stdout_taken || crate::messages::stderr_is_stdout(),
        },
    );
    say(&trawl_printer::terminal_text(&s), stdout_taken)
}

/// Says `s` on stdout, or on stderr where an output took stdout.
fn say(s: &str, stdout_taken: bool) -> anyhow::Result<()> {
    if stdout_taken {
        crate::messages::to_stderr(s);
        Ok(())
    } else {
        // The summary is the last word: a reader gone loses it, not the exit code; a
        // stdout that cannot be written (a full disk) is an error.
        crate::messages::to_stdout(s)
    }
}

/// Makes the directories of `rel` under `dir` one at a time, each a directory of its own:
/// a component (or the index file's name) that is a symbolic link is refused, not followed,
/// so that no index is written outside `dir`.
fn beneath_index_dir(dir: &std::path::Path, rel: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    use trawl_read::{DirAt, EntryKind as Kind};
    std::fs::create_dir_all(dir).with_context(|| AtPath::new(dir, "cannot create"))?;
    let mut at = DirAt::open(dir).with_context(|| AtPath::new(dir, "cannot open"))?;
    let mut here = dir.to_path_buf();
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    for (i, c) in parts.iter().enumerate() {
        here.push(c);
        let last = i + 1 == parts.len();
        let name = c.as_bytes();
        let kind = at
            .kind(name)
            .with_context(|| AtPath::new(&here, "cannot look at"))?;
        match (kind, last) {
            (Some(Kind::Symlink), _) => anyhow::bail!(
                "{}: a symbolic link inside --media-index: not followed, no index written through it",
                here.display()
            ),
            (_, true) => {}
            (None, false) => {
                match at.mkdir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => {
                        return Err(e).with_context(|| AtPath::new(&here, "cannot create"));
                    }
                }
                at = at
                    .dir(name)
                    .with_context(|| AtPath::new(&here, "cannot open"))?;
            }
            (Some(_), false) => {
                at = at
                    .dir(name)
                    .with_context(|| AtPath::new(&here, "not a directory"))?;
            }
        }
    }
    Ok(())
}

/// Each FLV file's keyframe index under `--media-index DIR`.
fn write_media_indexes(dir: &std::path::Path, result: &ScanResult) -> anyhow::Result<()> {
    for (name, index) in result.media_indexes() {
        let target = dir.join(&name);
        beneath_index_dir(dir, &name)?;
        let mut out = Output::create(&target)?;
        let doc = trawl_report::IndexFile::new(vec![index]);
        write_json(&mut out, &doc)?;
        out.commit()?;
    }
    Ok(())
}

/// The report as one HTML page, titled by the roots, its memory figures the peaks so far.
fn write_page(
    mut out: Output,
    plan: &ScanPlan,
    report: &mut trawl_report::ScanReport,
) -> anyhow::Result<()> {
    peaks(report);
    let name = plan
        .cfg
        .roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>();
    let page = trawl_printer::html_scan(&[(name.join(", "), report)]);
    out.write_all(page.as_bytes())
        .map_err(|e| out.error(e, "cannot write"))?;
    out.commit()?;
    Ok(())
}

/// The directory hashdeep names start with: `.` for one directory root, whose files are named
/// as `cd ROOT && hashdeep -r -l .` names them (`./a`), the rule of every hashdeep file trawl
/// writes; none for several roots or a file (their names are the paths as walked already).
fn hashdeep_base(roots: &[std::path::PathBuf]) -> Option<Vec<u8>> {
    match roots {
        [r] if trawl_engine::directory_root(r) => Some(b".".to_vec()),
        _ => None,
    }
}
