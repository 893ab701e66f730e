//! `trawl catalog report`: what the catalog holds, its last audit, and how old its
//! verifications are.

use std::io::Write;

use trawl_catalog::Lock;
use trawl_catalog::{Catalog, OpenMode, format_time};
use trawl_printer::human;

use crate::Outcome;
use crate::flags::lowargs::CatalogReportArgs;

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
    let list: Vec<&str> = match &a.list {
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
    let mut html = a
        .html
        .as_deref()
        .map(|p| super::super::output::Output::create_beside_catalog(p, &a.catalog))
        .transpose()?;
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    if let Some(h) = html.take() {
        super::write_html(h, &cat, &a.catalog)?;
    }
    let r = cat.report()?;
    let mut s = String::new();
    s.push_str(&format!(
        "catalog {} (schema {}, {} runs, {}; algorithms {})\n",
        a.catalog.display(),
        trawl_catalog::SCHEMA_VERSION,
        r.runs,
        human::bytes(r.catalog_bytes),
        cat.algorithms()?
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(",")
    ));
    for (_, root) in cat.roots()? {
        s.push_str(&format!("root {}\n", root.display()));
    }
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
            let counts: Vec<String> = l
                .counts
                .iter()
                .map(|(v, n)| format!("{} {n}", v.name()))
                .collect();
            s.push_str(&format!(
                "  {}; {} files, {} read\n",
                counts.join(", "),
                l.files_read,
                human::bytes(l.bytes_read)
            ));
        }
    }
    if let Some(id) = r.interrupted {
        match Lock::holder(&a.catalog) {
            Some(pid) => s.push_str(&format!("run {id} is running now (pid {pid})\n")),
            None => s.push_str(&format!(
                "run {id} was interrupted; the next audit of the same roots resumes it\n"
            )),
        }
    }
    let total: u64 = r.by_state.iter().map(|(_, n, _)| n).sum();
    s.push_str(&format!("registered files: {total}\n"));
    for (state, n, bytes) in &r.by_state {
        s.push_str(&format!(
            "  {state:<10} {n:>10}  {}\n",
            human::bytes(*bytes)
        ));
    }
    match &r.oldest_verified {
        Some((t, p)) => s.push_str(&format!(
            "oldest verification: {} ({})\n",
            format_time(*t),
            p.display()
        )),
        None => s.push_str("oldest verification: none\n"),
    }
    if r.never_verified > 0 {
        s.push_str(&format!("never verified: {}\n", r.never_verified));
    }
    cat.files_in_states(&list, &mut |root, rel, size, state| {
        let path = root.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel));
        let shown = path.display().to_string().escape_debug().to_string();
        s.push_str(&format!("{state:<11} {shown} ({size} bytes)\n"));
    })?;
    std::io::stdout().write_all(s.as_bytes())?;
    Ok(Outcome::Ok)
}
