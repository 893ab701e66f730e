//! `trawl catalog report|history|export|verify|upgrade|policy|due|schedule`: read-only
//! questions to an audit catalog, its upgrade, its policy and what is due against it, and the
//! timer that runs it, one module each (`units`: the timer's files and cron line as text).

mod due;
mod export;
mod history;
mod policy;
mod premis;
mod report;
mod schedule;
mod units;
mod upgrade;
mod verify;

use trawl_catalog::Catalog;
use trawl_printer::ShownPaths;

use crate::Outcome;
use crate::flags::lowargs::CatalogCommand;

pub fn run(c: CatalogCommand) -> anyhow::Result<Outcome> {
    match c {
        CatalogCommand::Report(a) => report::run(a),
        CatalogCommand::History(a) => history::run(a),
        CatalogCommand::Export(a) => export::run(a),
        CatalogCommand::Verify(a) => verify::run(a),
        CatalogCommand::Upgrade(a) => upgrade::run(a),
        CatalogCommand::Policy(a) => policy::run(a),
        CatalogCommand::Due(a) => due::run(a),
        CatalogCommand::Schedule(a) => schedule::run(a),
    }
}

pub(super) fn shown_as_is(cat: &Catalog) -> anyhow::Result<ShownPaths> {
    Ok(ShownPaths {
        roots: cat
            .roots()?
            .into_iter()
            .map(|(_, p)| (p.clone(), p))
            .collect(),
    })
}

/// Writes the catalog's HTML report (the collection over time) to `out`.
pub(crate) fn write_html(
    mut out: super::output::Output,
    cat: &Catalog,
    path: &std::path::Path,
) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    let view = cat.view(path, trawl_catalog::now_secs())?;
    let page = trawl_printer::html_catalog(&view);
    out.write_all(page.as_bytes())
        .with_context(|| format!("{}: cannot write", out.name()))?;
    out.commit()
}
