//! The data-reduction summary as a readable table, from the typed report.

use crate::{human_bytes, human_ratio};
use trawl_report::{DedupCounts, ReductionJson};

/// How wide the ratio columns are: an estimate's interval takes more room.
fn ratio_width(r: &ReductionJson) -> usize {
    let sampled = r.dedup.iter().any(|d| d.counts.sample.is_some())
        || r.compression.iter().any(|c| c.sample.is_some());
    if sampled { 26 } else { 10 }
}

/// `reduction` as a table.
pub fn reduction_table(r: &ReductionJson) -> String {
    let mut s = String::new();
    let w = ratio_width(r);
    s.push_str("data reduction:\n");
    s.push_str(&format!(
        "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>w$}\n",
        "dedup", "logical", "blocks", "unique", "zero blocks", "ratio"
    ));
    let mut row = |name: String, d: &DedupCounts| {
        let conf = d.sample.as_ref().map(|x| x.confidence);
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>w$}\n",
            name,
            human_bytes(d.logical_bytes),
            d.blocks,
            human_bytes(d.unique_bytes),
            d.zero_blocks,
            human_ratio(d.ratio, d.ratio_interval(), conf)
        ));
    };
    for d in &r.dedup {
        row(format!("{} blocks", human_bytes(d.block_size)), &d.counts);
    }
    if let Some(c) = &r.cdc {
        row(format!("cdc ~{}", human_bytes(c.avg_size)), &c.counts);
    }
    compression_rows(r, w, &mut s);
    let top = r.top_files.as_deref().unwrap_or_default();
    if let Some(first) = top.first() {
        s.push_str(&format!(
            "  files contributing most duplicate bytes ({} blocks):\n  {:>12} {:>12}  path\n",
            human_bytes(first.block_size),
            "duplicate",
            "saved share"
        ));
        for t in top {
            s.push_str(&format!(
                "  {:>12} {:>12}  {}\n",
                human_bytes(t.duplicate_bytes),
                human_bytes(t.saved_bytes),
                t.path
            ));
        }
    }
    if r.hardlinks.names > 0 {
        s.push_str(&format!(
            "  hard links: {} more names of files already counted ({}), counted once (--count-links counts each)\n",
            r.hardlinks.names,
            human_bytes(r.hardlinks.bytes)
        ));
    }
    if let Some(note) = &r.top_files_note {
        s.push_str(&format!(
            "  files contributing most duplicate bytes: {note}\n"
        ));
    }
    s
}

/// The compression rows under their header, and the sample's note where the figures are
/// estimated.
fn compression_rows(r: &ReductionJson, w: usize, s: &mut String) {
    if !r.compression.is_empty() {
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>w$} {:>w2$}\n",
            "compression",
            "unit",
            "compressed",
            "allocated",
            "ratio",
            "dedup+compress",
            w2 = w.max(16)
        ));
        for c in &r.compression {
            let conf = c.sample.as_ref().map(|x| x.confidence);
            s.push_str(&format!(
                "  {:<18} {:>12} {:>12} {:>12} {:>w$} {:>w2$}\n",
                match c.level {
                    Some(l) => format!("{}:{l}", c.codec),
                    None => c.codec.clone(),
                },
                human_bytes(c.unit),
                human_bytes(c.compressed_bytes),
                human_bytes(c.allocated_bytes),
                human_ratio(c.ratio, c.ratio_interval(), conf),
                human_ratio(c.combined_ratio, c.combined_interval(), conf),
                w2 = w.max(16)
            ));
        }
    }
    if let Some(x) = r
        .dedup
        .iter()
        .find_map(|d| d.counts.sample.as_ref())
        .or_else(|| r.compression.iter().find_map(|c| c.sample.as_ref()))
    {
        s.push_str(&format!(
            "  (estimated from a {}% sample: the ranges are {:.0}% intervals)\n",
            x.rate * 100.0,
            x.confidence * 100.0
        ));
    }
}
