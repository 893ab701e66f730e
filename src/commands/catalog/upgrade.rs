//! `trawl catalog upgrade`: brings a catalog written by an older trawl to this trawl's schema.

use std::io::Write;

use trawl_catalog::{Catalog, OpenMode, SCHEMA_VERSION};

use crate::Outcome;
use crate::flags::lowargs::CatalogUpgradeArgs;

pub fn run(a: CatalogUpgradeArgs) -> anyhow::Result<Outcome> {
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let before = size(&a.catalog);
    let cat = Catalog::open(&a.catalog, OpenMode::Upgrade)?;
    let mut out = std::io::stdout().lock();
    match cat.upgraded_from() {
        Some(v) => writeln!(
            out,
            "{}: upgraded from schema {v} to {SCHEMA_VERSION} ({} -> {})",
            a.catalog.display(),
            trawl_printer::human_bytes(before),
            trawl_printer::human_bytes(size(&a.catalog)),
        )?,
        None => writeln!(
            out,
            "{}: schema {SCHEMA_VERSION} already; nothing to do",
            a.catalog.display()
        )?,
    }
    Ok(Outcome::Ok)
}
