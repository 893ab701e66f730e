//! `trawl catalog report`: what the catalog holds, its last audit, and how old its
//! verifications are.

use std::io::Write;
use std::path::{Path, PathBuf};

use trawl_catalog::Lock;
use trawl_catalog::{Catalog, OpenMode, Verdict, format_time};

use crate::Outcome;
use crate::commands::output::Output;
use crate::flags::lowargs::CatalogReportArgs;

/// `--metrics FILE`, opened (refused where it is the catalog, one of its files, inside one of
/// its roots, or `--html`'s).
fn metrics_output(a: &CatalogReportArgs, cat: &Catalog) -> anyhow::Result<Option<Output>> {
    let Some(p) = a.metrics.as_deref() else {
        return Ok(None);
    };
    if let Some(h) = a.html.as_deref() {
        crate::commands::output::distinct(&[("--html", h), ("--metrics", p)])?;
    }
    Output::create_for_catalog("--metrics", p, &a.catalog, cat).map(Some)
}

/// The states a registered file can be in.
const STATES: [&str; 8] = [
    "corrupt",
    "missing",
    "modified",
    "unreadable",
    "new",
    "moved",
    "ok",
    "removed",
];

pub fn run(a: CatalogReportArgs) -> anyhow::Result<Outcome> {
    let list = states(a.list.as_deref())?;
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let metrics = metrics_output(&a, &cat)?;
    let mut html = a
        .html
        .as_deref()
        .map(|p| Output::create_for_catalog("--html", p, &a.catalog, &cat))
        .transpose()?;
    if let Some(h) = html.take() {
        super::write_html(h, &cat, &a.catalog)?;
    }
    let r = cat.report()?;
    if let Some(out) = metrics {
        let Some(last) = &r.last_run else {
            anyhow::bail!(
                "{}: no audit yet: --metrics has no run to describe",
                a.catalog.display()
            );
        };
        let m = crate::commands::metrics::of_run(&cat, &a.catalog, last)?;
        crate::commands::metrics::write(out, &m)?;
    }
    let mut s = header(&cat, &a.catalog, r.runs, r.catalog_bytes)?;
    match &r.last_run {
        None => s.push_str("no audit yet\n"),
        Some(l) => {
            s.push_str(&format!(
                "last audit: run {} ({}, {}), started {}{}\n",
                l.id,
                l.mode,
                l.status,
                format_time(l.started),
                l.finished
                    .map(|f| format!(", finished {}", format_time(f)))
                    .unwrap_or_default()
            ));
            // `uncompared` only where there are any: only a no-download audit gives it.
            let counts: Vec<String> = l
                .counts
                .iter()
                .filter(|(v, n)| *v != Verdict::Uncompared || *n > 0)
                .map(|(v, n)| format!("{} {n}", v.name()))
                .collect();
            s.push_str(&format!(
                "  {}; {} files, {} read\n",
                counts.join(", "),
                l.files_read,
                trawl_printer::human_bytes(l.bytes_read)
            ));
            if l.mode == "stored" {
                s.push_str(&format!(
                    "  a stored (no-download) audit proves: {}\n",
                    trawl_report::audit_mode_proves(&l.mode)
                ));
            }
        }
    }
    if let Some(id) = r.interrupted {
        s.push_str(&interrupted(&a.catalog, id));
    }
    by_state(&mut s, &r.by_state);
    verified(&mut s, r.oldest_verified.as_ref(), r.never_verified);
    cat.files_in_states(&list, &mut |root, rel, size, state| {
        let path = root.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel));
        let shown = path.display().to_string().escape_debug().to_string();
        s.push_str(&format!("{state:<11} {shown} ({size} bytes)\n"));
    })?;
    std::io::stdout().write_all(s.as_bytes())?;
    Ok(Outcome::Ok)
}

/// The states `--list` names (comma-separated), each checked to be one.
fn states(list: Option<&str>) -> anyhow::Result<Vec<&str>> {
    let list: Vec<&str> = match list {
        None => Vec::new(),
        Some(l) => l
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect(),
    };
    if let Some(bad) = list.iter().find(|s| !STATES.contains(s)) {
        anyhow::bail!("--list {bad}: not a state ({})", STATES.join(", "));
    }
    Ok(list)
}

/// The report's first lines: the catalog, its schema, runs, size and algorithms, then each
/// root.
fn header(cat: &Catalog, catalog: &Path, runs: u64, bytes: u64) -> anyhow::Result<String> {
    let mut s = format!(
        "catalog {} (schema {}, {} runs, {}; algorithms {})\n",
        catalog.display(),
        cat.schema_version()?,
        runs,
        trawl_printer::human_bytes(bytes),
        cat.algorithms()?
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(",")
    );
    for (_, root) in cat.roots()? {
        s.push_str(&format!("root {}\n", root.display()));
    }
    Ok(s)
}

/// The line about run `id`, not finished: running now (its lock held), or interrupted.
fn interrupted(catalog: &Path, id: i64) -> String {
    match Lock::holder(catalog) {
        Some(pid) => format!("run {id} is running now (pid {pid})\n"),
        None => format!("run {id} was interrupted; the next audit of the same roots resumes it\n"),
    }
}

/// The registered files, in all and by state (count and bytes).
fn by_state(s: &mut String, by_state: &[(String, u64, u64)]) {
    let total: u64 = by_state.iter().map(|(_, n, _)| n).sum();
    s.push_str(&format!("registered files: {total}\n"));
    for (state, n, bytes) in by_state {
        s.push_str(&format!(
            "  {state:<10} {n:>10}  {}\n",
            trawl_printer::human_bytes(*bytes)
        ));
    }
}

/// The oldest verification (its time and file), and how many files were never verified.
fn verified(s: &mut String, oldest: Option<&(i64, PathBuf)>, never: u64) {
    match oldest {
        Some((t, p)) => s.push_str(&format!(
            "oldest verification: {} ({})\n",
            format_time(*t),
            p.display()
        )),
        None => s.push_str("oldest verification: none\n"),
    }
    if never > 0 {
        s.push_str(&format!("never verified: {never}\n"));
    }
}
