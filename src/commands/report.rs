//! `trawl report`: saved JSON reports rendered as one HTML page, so that a long scan's report is
//! never lost and two scans can be set side by side.

use std::io::Write;

use anyhow::{Context, bail};
use trawl_report::ScanReport;

use super::output::Output;
use crate::Outcome;
use crate::flags::lowargs::ReportArgs;

pub fn run(a: ReportArgs) -> anyhow::Result<Outcome> {
    let mut out = Output::create_apart(&a.html, &a.reports)?;
    let mut reports = Vec::new();
    for p in &a.reports {
        let f = std::fs::File::open(p).with_context(|| format!("{}: cannot open", p.display()))?;
        // The `files` list (maybe millions of entries) is read past, not kept.
        let r: ScanReport = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, f))
            .with_context(|| {
                format!(
                    "{}: not a scan report (made by trawl scan --json)",
                    p.display()
                )
            })?;
        if r.schema_version > trawl_report::SCHEMA_VERSION {
            bail!(
                "{}: report schema {} is newer than this trawl reads ({})",
                p.display(),
                r.schema_version,
                trawl_report::SCHEMA_VERSION
            );
        }
        reports.push((p.display().to_string(), r));
    }
    let named: Vec<(String, &ScanReport)> = reports.iter().map(|(n, r)| (n.clone(), r)).collect();
    let page = trawl_printer::html_scan(&named);
    out.write_all(page.as_bytes())
        .with_context(|| format!("{}: cannot write", out.name()))?;
    out.commit()?;
    Ok(Outcome::Ok)
}
