//! `trawl audit`: opens the catalog and the output, runs [`trawl_catalog::audit`], then prints
//! the run's events and summary and writes its JSON, both streamed from the catalog.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use trawl_catalog::query::Event as CatEvent;
use trawl_catalog::{AuditOptions, AuditOutcome, AuditReport, Catalog, Notice, OpenMode, Verdict};
use trawl_digest::Algorithm;
use trawl_printer::audit::{Shown, event_line, summary};
use trawl_report::JsonPath;
use trawl_report::audit::{AuditEvent, AuditHead, Digests};

use super::output::Output;
use crate::flags::hiargs::AuditPlan;
use crate::stop::STOP;
use crate::{Outcome, messages};

pub fn run(plan: AuditPlan, typed_roots: &[PathBuf]) -> anyhow::Result<Outcome> {
    let mut json = plan.json.as_deref().map(Output::create).transpose()?;
    let mode = if plan.init {
        OpenMode::Init
    } else {
        OpenMode::Write
    };
    let mut cat = Catalog::open(&plan.catalog, mode)?;
    let roots = plan.cfg.roots.clone();
    let shown = Shown {
        roots: roots
            .iter()
            .cloned()
            .zip(typed_roots.iter().cloned())
            .collect(),
    };
    let opts = AuditOptions {
        scan: plan.cfg.clone(),
        algorithms: plan.algorithms.clone(),
        mode: if plan.metadata_only {
            trawl_catalog::AuditMode::Metadata
        } else {
            trawl_catalog::AuditMode::Full
        },
        older_than: plan.older_than,
        max_bytes: plan.max_bytes,
        max_time: plan.max_time,
        forget_missing: plan.forget_missing,
        invocation: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
    };
    let bar = crate::progress::Bar::new(plan.quiet);
    let outcome = trawl_catalog::audit(&mut cat, &opts, &bar, &STOP, &mut |n| match n {
        Notice::Resumed { run } => messages::warning(format_args!(
            "audit run {run} was interrupted; resuming it (files it already checked are not read again)"
        )),
        Notice::Skipped { path, kind } => messages::warning(format_args!(
            "{}: skipped: {}",
            shown.path(path),
            kind.describe()
        )),
        Notice::Failed(e) => messages::error(format_args!("{e}")),
        Notice::Corrupt { path } => messages::error(format_args!(
            "{}: CORRUPT: content changed but size and mtime did not",
            shown.path(path)
        )),
    });
    drop(bar);
    let report = match outcome? {
        AuditOutcome::Finished(r) => r,
        AuditOutcome::Stopped(_) => return Ok(Outcome::Interrupted),
    };
    let head = head(&plan, &report, trawl_engine::peak_rss());

    // The events, streamed from the catalog: as lines, then as JSON.
    let mut out = std::io::stdout().lock();
    let to_stdout = !plan.quiet && !json.as_ref().is_some_and(Output::is_stdout);
    if to_stdout {
        cat.for_each_event(report.summary.id, &mut |ev| {
            if report.registration && ev.verdict == Verdict::New {
                return;
            }
            let (from, detail) = (ev.other_path.as_deref(), ev.detail.as_deref());
            let _ = writeln!(
                out,
                "{}",
                event_line(ev.verdict.name(), &ev.path, from, detail, &shown)
            );
        })?;
    }
    if let Some(mut j) = json.take() {
        write_json(&mut j, &cat, &head, &report.algorithms)
            .with_context(|| format!("{}: cannot write", j.name()))?;
        j.commit()?;
    }
    if !plan.quiet {
        let s = summary(&head, report.registration, report.budget_spent);
        if to_stdout {
            out.write_all(s.as_bytes())?;
        } else {
            eprint!("{s}");
        }
    }
    let s = &report.summary;
    Ok(
        if s.count(Verdict::Corrupt) + s.count(Verdict::Missing) > 0 {
            Outcome::Difference
        } else if report.trouble || s.count(Verdict::Unreadable) > 0 {
            Outcome::Trouble
        } else {
            Outcome::Ok
        },
    )
}

fn head(plan: &AuditPlan, r: &AuditReport, rss: Option<u64>) -> AuditHead {
    let s = &r.summary;
    AuditHead {
        algorithms: r.algorithms.iter().map(|a| a.name().to_string()).collect(),
        bytes_read: s.bytes_read,
        catalog: JsonPath::new(&plan.catalog),
        chain_digest: s.chain_digest.as_ref().map(hex::encode),
        counts: s
            .counts
            .iter()
            .map(|(v, n)| (v.name().to_string(), *n))
            .collect(),
        files_read: s.files_read,
        mode: s.mode.clone(),
        not_read: s.deferred,
        peak_rss_bytes: rss,
        roots: plan.cfg.roots.iter().map(|r| JsonPath::new(r)).collect(),
        run: s.id,
        schema_version: trawl_report::SCHEMA_VERSION,
        seconds: r.seconds,
        status: s.status.clone(),
        trawl_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The digests of an event, split by algorithm.
fn digests(algs: &[Algorithm], d: &Option<Vec<u8>>) -> Option<Digests> {
    let d = d.as_ref()?;
    let mut m = BTreeMap::new();
    let mut off = 0;
    for a in algs {
        let n = a.output_len();
        if off + n <= d.len() {
            m.insert(a.name().to_string(), hex::encode(&d[off..off + n]));
        }
        off += n;
    }
    Some(m)
}

fn event(algs: &[Algorithm], ev: &CatEvent) -> AuditEvent {
    AuditEvent {
        actual: digests(algs, &ev.actual),
        detail: ev.detail.clone(),
        expected: digests(algs, &ev.expected),
        moved_from: ev.other_path.as_ref().map(|p| JsonPath::new(p)),
        path: JsonPath::new(&ev.path),
        size: ev.size,
        state: ev.verdict.name().to_string(),
    }
}

/// The audit's JSON: the head, then the events written one by one from the catalog (one line
/// each), so that memory stays flat whatever the run's size.
fn write_json(
    out: &mut Output,
    cat: &Catalog,
    head: &AuditHead,
    algs: &[Algorithm],
) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(head)?;
    // Reopen the object to append the events array.
    out.write_all(&text.as_bytes()[..text.len() - 2])?;
    out.write_all(b",\n  \"events\": [")?;
    let mut first = true;
    let mut err: Option<std::io::Error> = None;
    cat.for_each_event(head.run, &mut |ev| {
        if err.is_some() {
            return;
        }
        let r = out
            .write_all(if first { b"\n    " } else { b",\n    " })
            .and_then(|()| {
                serde_json::to_writer(&mut *out, &event(algs, &ev)).map_err(std::io::Error::from)
            });
        first = false;
        if let Err(e) = r {
            err = Some(e);
        }
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    out.write_all(b"\n  ]\n}\n")?;
    Ok(())
}
