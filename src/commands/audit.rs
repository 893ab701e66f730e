//! `trawl audit`: opens the catalog and the output, runs [`trawl_catalog::audit`], then prints
//! the run's events and summary and writes its JSON, both streamed from the catalog.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use trawl_catalog::{
    AuditOptions, AuditOutcome, AuditReport, Catalog, Local, Notice, OpenMode, Source, Verdict,
};
use trawl_printer::{AuditSummaryOf, ShownPaths, audit_event_line, audit_summary};
use trawl_report::{AuditEvent, AuditHead};

use super::output::Output;
use super::policy_run;
use crate::flags::hiargs::AuditPlan;
use crate::{Outcome, messages};

pub fn run(plan: AuditPlan, typed_roots: &[PathBuf]) -> anyhow::Result<Outcome> {
    run_with(plan, typed_roots, &mut Local)
}

/// Opens one of an audit's outputs: refused where it would replace a file inside a root (or
/// a root that is a file), or the catalog or one of SQLite's files beside it.
pub(crate) fn create_output(plan: &AuditPlan, path: &std::path::Path) -> anyhow::Result<Output> {
    super::output::apart(path, &plan.cfg.roots)?;
    Output::create_beside_catalog(path, &plan.catalog)
}

/// `trawl audit` of `s3://` roots: the walk and reads are the store's.
#[cfg(feature = "s3")]
pub fn objects(
    plan: AuditPlan,
    typed_roots: &[PathBuf],
    objects: &trawl_s3::ObjectSource,
) -> anyhow::Result<Outcome> {
    run_with(plan, typed_roots, &mut trawl_s3::AuditObjects::of(objects))
}

/// No object source exists in a build without the S3 client.
#[cfg(not(feature = "s3"))]
pub fn objects(
    _: AuditPlan,
    _: &[PathBuf],
    objects: &trawl_s3::ObjectSource,
) -> anyhow::Result<Outcome> {
    match *objects {}
}

/// `trawl audit` with its walk and reads done by `source` (a cluster's workers); the catalog,
/// the messages and the outputs stay here. `--metrics` is written at the end whatever
/// happened: the run's figures, or (a run that failed or was interrupted) success 0 and what
/// is known.
pub fn run_with(
    plan: AuditPlan,
    typed_roots: &[PathBuf],
    source: &mut dyn Source,
) -> anyhow::Result<Outcome> {
    super::output::distinct(&plan.output_paths())?;
    policy_run::check(&plan)?;
    let started = trawl_catalog::now_secs();
    let metrics = plan
        .metrics
        .as_deref()
        .map(|p| {
            super::output::outside("--metrics", p, &plan.cfg.roots)?;
            create_output(&plan, p)
        })
        .transpose()?;
    let also_exclude = metrics.as_ref().and_then(Output::identity);
    let done = audit_and_write(&plan, typed_roots, source, also_exclude);
    let Some(out) = metrics else {
        return done.map(|(outcome, _)| outcome);
    };
    match done {
        Ok((outcome, Some(m))) => super::metrics::write(out, &m).map(|()| outcome),
        // A policy run that read nothing (outside its window, or the catalog busy): the last
        // run's figures stand.
        Ok((Outcome::Ok, None)) => Ok(Outcome::Ok),
        other => {
            let m = super::metrics::of_failure(&plan.catalog, started);
            if let Err(e) = super::metrics::write(out, &m) {
                messages::error(format_args!("{}", crate::describe(&e)));
            }
            other.map(|(outcome, _)| outcome)
        }
    }
}

/// Runs the audit and writes its outputs: the outcome, and the run's figures where
/// `--metrics` asks for them (None for a run that was interrupted, or a policy run that read
/// nothing). `also_exclude`: another output's device and inode, left out of the walk.
fn audit_and_write(
    plan: &AuditPlan,
    typed_roots: &[PathBuf],
    source: &mut dyn Source,
    also_exclude: Option<(u64, u64)>,
) -> anyhow::Result<(Outcome, Option<trawl_report::AuditMetrics>)> {
    let apart = |p: &std::path::Path| create_output(plan, p);
    let json = plan.json.as_deref().map(apart).transpose()?;
    let html = plan.html.as_deref().map(apart).transpose()?;
    let Some(mut cat) = open_catalog(plan)? else {
        return Ok((Outcome::Ok, None));
    };
    let shown = ShownPaths {
        roots: plan
            .cfg
            .roots
            .iter()
            .cloned()
            .zip(typed_roots.iter().cloned())
            .collect(),
    };
    let exclude = json
        .iter()
        .chain(&html)
        .filter_map(Output::identity)
        .chain(also_exclude)
        .collect();
    let mut opts = audit_options(plan, &cat, exclude)?;
    let policy = match plan.policy {
        true => match policy_run::apply(plan, &cat, &mut opts)? {
            Some(p) => Some(p.every),
            None => return Ok((Outcome::Ok, None)),
        },
        false => None,
    };
    let bar = crate::progress::Bar::new(plan.quiet);
    let outcome = trawl_catalog::audit_with(
        &mut cat,
        &opts,
        source,
        &bar,
        &crate::stop::current(),
        &mut |n| notice(n, &shown),
    );
    drop(bar);
    let report = match outcome? {
        AuditOutcome::Finished(r) => r,
        AuditOutcome::Stopped(_) => return Ok((Outcome::Interrupted, None)),
    };
    let to_stdout = write_outputs(plan, &cat, &report, &shown, (json, html))?;
    if let Some(every) = policy {
        policy_run::left(plan, &cat, every, &report, !to_stdout)?;
    }
    let metrics = match &plan.metrics {
        Some(_) => {
            let mut m = super::metrics::of_run(&cat, &plan.catalog, &report.summary)?;
            if let Some(every) = policy {
                m.files_due = Some(cat.due_totals(trawl_catalog::now_secs(), every)?.files);
            }
            Some(m)
        }
        None => None,
    };
    let outcome = outcome_of(&report, plan.forget_missing);
    if let Some(n) = &plan.notify {
        let head = report.head(&plan.catalog, trawl_engine::peak_rss());
        n.send(&cat, &report, &head, outcome.code());
    }
    Ok((outcome, metrics))
}

/// After the run: its events on stdout, its JSON and the catalog's HTML page, then its
/// summary; whether the events went to stdout.
fn write_outputs(
    plan: &AuditPlan,
    cat: &Catalog,
    report: &AuditReport,
    shown: &ShownPaths,
    (json, html): (Option<Output>, Option<Output>),
) -> anyhow::Result<bool> {
    let head = report.head(&plan.catalog, trawl_engine::peak_rss());
    // The events, streamed from the catalog: as lines, then as JSON.
    let mut out = std::io::stdout().lock();
    let to_stdout = !plan.quiet && !json.as_ref().is_some_and(Output::is_stdout);
    if to_stdout {
        print_events(cat, report, shown, &mut out)?;
    }
    if let Some(j) = json {
        write_json(cat, report, &head, j)?;
    }
    if let Some(h) = html {
        super::catalog::write_html(h, cat, &plan.catalog)?;
    }
    if !plan.quiet {
        say_summary(plan, report, &head, to_stdout.then_some(&mut out));
    }
    Ok(to_stdout)
}

/// Says the run's summary: on stdout (`out`) after the events, else on stderr.
fn say_summary(
    plan: &AuditPlan,
    report: &AuditReport,
    head: &AuditHead,
    out: Option<&mut impl Write>,
) {
    let of = AuditSummaryOf {
        registration: report.registration,
        budget_spent: report.budget_spent,
        forget_missing: plan.forget_missing,
    };
    let s = audit_summary(head, of);
    let s = trawl_printer::terminal_text(&s);
    match out {
        // The summary is the last word: a reader gone loses it, not the exit code.
        Some(out) => {
            let _ = out.write_all(s.as_bytes()).and_then(|()| out.flush());
        }
        None => crate::messages::to_stderr(&s),
    }
}

/// Prints the run's events on `out`, one line each (a registration's new files left out, and
/// a no-download audit's ok ones: counted in the summary, listed in the JSON with their proof).
/// The first write error ends the lines; a reader gone (EPIPE) loses them, not the run.
fn print_events(
    cat: &Catalog,
    report: &AuditReport,
    shown: &ShownPaths,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut written: std::io::Result<()> = Ok(());
    cat.for_each_event(report.summary.id, &mut |ev| {
        let listed =
            ev.verdict != Verdict::Ok && !(report.registration && ev.verdict == Verdict::New);
        if written.is_err() || !listed {
            return;
        }
        let (from, detail) = (ev.other_path.as_deref(), ev.detail.as_deref());
        written = writeln!(
            out,
            "{}",
            audit_event_line(ev.verdict.name(), &ev.path, from, detail, shown)
        );
    })?;
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("stdout: cannot write"),
    }
}

/// Writes the run as JSON to `j`, its events streamed from the catalog.
fn write_json(
    cat: &Catalog,
    report: &AuditReport,
    head: &AuditHead,
    mut j: Output,
) -> anyhow::Result<()> {
    let algs = &report.algorithms;
    let mut each = |f: &mut dyn FnMut(&AuditEvent)| {
        cat.for_each_event(head.run, &mut |ev| f(&ev.to_report(algs)))
            .map_err(anyhow::Error::from)
    };
    trawl_printer::write_audit_json(&mut j, head, &mut each)
        .with_context(|| format!("{}: cannot write", j.name()))?;
    j.commit()
}

/// The catalog, opened for writing (created with `--init`; a policy audit's must exist), an
/// upgrade said; None where a policy audit finds it in use (said: it ends there).
fn open_catalog(plan: &AuditPlan) -> anyhow::Result<Option<Catalog>> {
    let mode = if plan.init {
        OpenMode::Init
    } else if plan.policy {
        OpenMode::Upgrade
    } else {
        OpenMode::Write
    };
    let cat = match Catalog::open(&plan.catalog, mode) {
        Err(e) if policy_run::in_use(plan, &e) => return Ok(None),
        r => r?,
    };
    if let Some(v) = cat.upgraded_from() {
        messages::warning(format_args!(
            "{}: catalog upgraded from schema {v} to {}",
            plan.catalog.display(),
            trawl_catalog::SCHEMA_VERSION
        ));
    }
    Ok(Some(cat))
}

/// The exit code an audit's findings give: a difference for corrupt or missing files (but
/// not for missing files forgotten as asked, `forget_missing`: deletions the user accepted),
/// trouble for unreadable ones or a failed listing, not checked (3, as `verify` and `check`
/// say it) for objects a no-download audit could not compare and nothing worse.
fn outcome_of(report: &AuditReport, forget_missing: bool) -> Outcome {
    let s = &report.summary;
    let missing = if forget_missing {
        0
    } else {
        s.count(Verdict::Missing)
    };
    if s.count(Verdict::Corrupt) + missing > 0 {
        Outcome::Difference
    } else if report.trouble || s.count(Verdict::Unreadable) > 0 {
        Outcome::Trouble
    } else if s.count(Verdict::Uncompared) > 0 {
        Outcome::Unchecked
    } else {
        Outcome::Ok
    }
}

/// What the catalog's audit is asked to do, from the plan; `exclude`: the outputs' device and
/// inode, left out of the walk.
fn audit_options(
    plan: &AuditPlan,
    cat: &Catalog,
    exclude: Vec<(u64, u64)>,
) -> anyhow::Result<AuditOptions> {
    let mut opts = AuditOptions {
        scan: plan.cfg.clone(),
        algorithms: plan.algorithms.clone(),
        mode: if plan.no_download {
            trawl_catalog::AuditMode::Stored
        } else if plan.metadata_only {
            trawl_catalog::AuditMode::Metadata
        } else {
            trawl_catalog::AuditMode::Full
        },
        older_than: plan.older_than,
        max_bytes: plan.max_bytes,
        max_time: plan.max_time,
        forget_missing: plan.forget_missing,
        invocation: plan.invocation.clone(),
        temp_dir: plan.temp_dir.clone(),
        exclude,
    };
    // An OCFL root's new catalog computes what OCFL inventories give: sha512. A prefix's
    // computes the CRC64NVME too that S3 keeps for every new object, so that a no-download
    // audit has a checksum to compare.
    if opts.algorithms.is_none() && cat.algorithms()?.is_empty() {
        use trawl_digest::Algorithm;
        if plan.ocfl {
            opts.algorithms = Some(vec![Algorithm::Sha512]);
        } else if plan.objects.is_some() {
            opts.algorithms = Some(vec![Algorithm::Sha256, Algorithm::Crc64Nvme]);
        }
    }
    Ok(opts)
}

/// What the audit says on the way, as messages.
fn notice(n: Notice<'_>, shown: &ShownPaths) {
    match n {
        Notice::Resumed { run } => messages::warning(format_args!(
            "audit run {run} was interrupted; resuming it (files it already checked are not read again)"
        )),
        Notice::Skipped { path, kind } => messages::warning(format_args!(
            "{}: skipped: {}",
            shown.path(path),
            kind.describe()
        )),
        Notice::Failed(e) => messages::error(format_args!("{e}")),
        Notice::Corrupt { path, detail } => {
            messages::error(format_args!("{}: CORRUPT: {detail}", shown.path(path)))
        }
        Notice::WithinRegistered { root, registered } => messages::warning(format_args!(
            "{}: inside the registered root {}; auditing {} (its files are registered once)",
            shown.path(root),
            registered.display(),
            registered.display()
        )),
        Notice::ContainsRegistered { root, registered } => messages::warning(format_args!(
            "{}: holds the registered root {}, which is audited as itself",
            shown.path(root),
            registered.display()
        )),
    }
}
