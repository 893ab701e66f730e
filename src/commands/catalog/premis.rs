//! `trawl catalog export --format premis|premis-jsonl`: the catalog's registered files and the
//! checks it keeps of them as PREMIS 3.0, streamed from the catalog into the output.

use std::io::Write;

use anyhow::Context;
use trawl_catalog::Catalog;
use trawl_printer::{PremisFormat, PremisWriter};

use crate::commands::output::Output;

/// The PREMIS layout `--format` names, if it names one.
pub(super) fn format(name: &str) -> Option<PremisFormat> {
    match name {
        "premis" => Some(PremisFormat::Xml),
        "premis-jsonl" => Some(PremisFormat::JsonLines),
        _ => None,
    }
}

/// Writes the record to `out`: the files (XML only), then the checks, then the agent. The
/// XML is refused, before anything is written, for a catalog that registers no file: the
/// schema wants at least one object (the JSON Lines, events alone, may be empty).
pub(super) fn write(cat: &Catalog, format: PremisFormat, out: &mut Output) -> anyhow::Result<()> {
    if matches!(format, PremisFormat::Xml) && !cat.has_fixity_object()? {
        anyhow::bail!(
            "{}: registers no file, and a PREMIS document holds at least one object (--format premis-jsonl writes the events alone)",
            cat.path().display()
        );
    }
    let name = out.name();
    let cannot = || format!("{name}: cannot write");
    let mut w = PremisWriter::begin(
        &mut *out as &mut dyn Write,
        format,
        env!("CARGO_PKG_VERSION"),
    )
    .with_context(cannot)?;
    cat.for_each_fixity_object(&mut |o| w.object(o))?
        .with_context(cannot)?;
    cat.for_each_fixity_check(&mut |c| w.event(c))?
        .with_context(cannot)?;
    w.finish().with_context(cannot)?;
    Ok(())
}
