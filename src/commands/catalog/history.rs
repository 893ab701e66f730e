//! `trawl catalog history PATH`: a file's registration and every event it had.

use std::io::Write;
use std::path::PathBuf;

use anyhow::bail;
use trawl_catalog::{Catalog, OpenMode, format_time};
use trawl_printer::audit_event_line;

use super::shown_as_is;
use crate::Outcome;
use crate::flags::lowargs::CatalogHistoryArgs;

pub fn run(a: CatalogHistoryArgs) -> anyhow::Result<Outcome> {
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let shown = shown_as_is(&cat)?;
    let algs = cat.algorithms()?;
    let mut out = String::new();
    let mut found = false;
    for (root, rel) in cat.locate(&a.path)? {
        let row = cat.file_row(root, &rel)?;
        let events = cat.history(root, &rel)?;
        if row.is_none() && events.is_empty() {
            continue;
        }
        found = true;
        let full = full_path(&cat, root, &rel)?;
        out.push_str(&format!("{}\n", shown.path(&full)));
        if let Some((size, digests, state, present, version, first, verified)) = row {
            out.push_str(&format!(
                "  registered: {state}{}, {size} bytes, version {version}, first seen {}, last verified {}\n",
                if present { "" } else { " (not present)" },
                format_time(first),
                verified.map(format_time).unwrap_or_else(|| "never".into())
            ));
            for (alg, d) in trawl_catalog::split_digests(&algs, &digests) {
                out.push_str(&format!("  {}: {}\n", alg.name(), hex::encode(d)));
            }
        }
        if events.is_empty() {
            out.push_str("  no events: ok in every audit since it was registered\n");
        }
        for ev in &events {
            out.push_str(&format!(
                "  run {:<4} {}  {}\n",
                ev.run,
                format_time(ev.started),
                audit_event_line(
                    ev.verdict.name(),
                    &ev.path,
                    ev.other_path.as_deref(),
                    ev.detail.as_deref(),
                    &shown
                )
            ));
        }
    }
    if !found {
        bail!(
            "{}: not in catalog {}",
            a.path.display(),
            a.catalog.display()
        );
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(Outcome::Ok)
}

/// The path of the file `rel` below the root numbered `root`.
fn full_path(cat: &Catalog, root: i64, rel: &[u8]) -> anyhow::Result<PathBuf> {
    let root_path = cat
        .roots()?
        .into_iter()
        .find(|(i, _)| *i == root)
        .map(|(_, p)| p)
        .unwrap_or_default();
    Ok(root_path.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel)))
}
