//! `--metrics FILE` (`audit`, `catalog report`): a run's figures in the Prometheus text format,
//! gathered from the catalog and written whole, so that node_exporter's textfile collector
//! never reads half a file.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use trawl_catalog::{Catalog, OpenMode, RunSummary, Verdict, now_secs};
use trawl_report::{AuditMetrics, VerdictFigures};

use super::output::Output;

/// The catalog's path as the `catalog` label gives it (a name that is not UTF-8 with U+FFFD:
/// the format's label values are UTF-8).
fn label(catalog: &Path) -> String {
    catalog.to_string_lossy().into_owned()
}

/// The figures of `run` as the catalog records it, with the collection's standing now.
pub fn of_run(cat: &Catalog, catalog: &Path, run: &RunSummary) -> anyhow::Result<AuditMetrics> {
    let bytes = cat.run_bytes(run.id)?;
    let verdicts = Verdict::ALL
        .iter()
        .map(|&v| {
            let files = run.count(v);
            let summed = bytes.iter().find(|(w, _)| *w == v).map(|(_, b)| *b);
            VerdictFigures {
                verdict: v.name().to_string(),
                files,
                // A verdict no path was given weighs nothing; one whose paths were only
                // counted (a metadata-only run's ok) is not known.
                bytes: if files == 0 {
                    Some(summed.unwrap_or(0))
                } else {
                    summed
                },
            }
        })
        .collect();
    let success = matches!(run.status.as_str(), "complete" | "partial");
    let mut m = AuditMetrics {
        catalog: label(catalog),
        run: Some(run.id),
        started: run.started,
        finished: run.finished,
        success,
        verdicts,
        files_read: Some(run.files_read),
        bytes_read: Some(run.bytes_read),
        not_read: Some(run.deferred),
        ..AuditMetrics::default()
    };
    standing(cat, &mut m)?;
    Ok(m)
}

/// Fills in what the catalog says of the collection as it stands.
fn standing(cat: &Catalog, m: &mut AuditMetrics) -> anyhow::Result<()> {
    let s = cat.standing(now_secs())?;
    m.last_success = s.last_success;
    m.oldest_verification_age = s.oldest_verified.map(|t| (now_secs() - t).max(0));
    m.never_verified = Some(s.never_verified);
    Ok(())
}

/// The figures of an audit that failed or was interrupted, started at `started`: its times,
/// success 0, and what the catalog (opened again to read, if it can be) says of the
/// collection.
pub fn of_failure(catalog: &Path, started: i64) -> AuditMetrics {
    let mut m = AuditMetrics {
        catalog: label(catalog),
        started,
        finished: Some(now_secs()),
        ..AuditMetrics::default()
    };
    if let Ok(cat) = Catalog::open(catalog, OpenMode::Read) {
        let _ = standing(&cat, &mut m);
    }
    m
}

/// Writes `m` to `out` and makes it visible.
pub fn write(mut out: Output, m: &AuditMetrics) -> anyhow::Result<()> {
    out.write_all(trawl_printer::metrics_text(m).as_bytes())
        .with_context(|| format!("{}: cannot write", out.name()))?;
    out.commit()
}
