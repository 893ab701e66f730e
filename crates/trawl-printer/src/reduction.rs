//! The data-reduction summary as a readable table, from the typed report.

use trawl_report::reduction::{DedupCounts, ReductionJson};

use crate::human;

fn ratio(v: Option<f64>) -> String {
    v.map(|r| format!("{r:.2}:1")).unwrap_or_else(|| "-".into())
}

/// `reduction` as a table.
pub fn table(r: &ReductionJson) -> String {
    let mut s = String::new();
    s.push_str("data reduction:\n");
    s.push_str(&format!(
        "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
        "dedup", "logical", "blocks", "unique", "zero blocks", "ratio"
    ));
    let mut row = |name: String, d: &DedupCounts| {
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
            name,
            human::bytes(d.logical_bytes),
            d.blocks,
            human::bytes(d.unique_bytes),
            d.zero_blocks,
            ratio(d.ratio)
        ));
    };
    for d in &r.dedup {
        row(format!("{} blocks", human::bytes(d.block_size)), &d.counts);
    }
    if let Some(c) = &r.cdc {
        row(format!("cdc ~{}", human::bytes(c.avg_size)), &c.counts);
    }
    if !r.compression.is_empty() {
        s.push_str(&format!(
            "  {:<18} {:>12} {:>12} {:>12} {:>10} {:>16}\n",
            "compression", "unit", "compressed", "allocated", "ratio", "dedup+compress"
        ));
        for c in &r.compression {
            s.push_str(&format!(
                "  {:<18} {:>12} {:>12} {:>12} {:>10} {:>16}\n",
                match c.level {
                    Some(l) => format!("{}:{l}", c.codec),
                    None => c.codec.clone(),
                },
                human::bytes(c.unit),
                human::bytes(c.compressed_bytes),
                human::bytes(c.allocated_bytes),
                ratio(c.ratio),
                ratio(c.combined_ratio)
            ));
        }
    }
    let top = r.top_files.as_deref().unwrap_or_default();
    if let Some(first) = top.first() {
        s.push_str(&format!(
            "  files contributing most duplicate bytes ({} blocks):\n  {:>12} {:>12}  path\n",
            human::bytes(first.block_size),
            "duplicate",
            "saved share"
        ));
        for t in top {
            s.push_str(&format!(
                "  {:>12} {:>12}  {}\n",
                human::bytes(t.duplicate_bytes),
                human::bytes(t.saved_bytes),
                t.path
            ));
        }
    }
    if r.hardlinks.names > 0 {
        s.push_str(&format!(
            "  hard links: {} more names of files already counted ({}), counted once (--count-links counts each)\n",
            r.hardlinks.names,
            human::bytes(r.hardlinks.bytes)
        ));
    }
    if let Some(note) = &r.top_files_note {
        s.push_str(&format!(
            "  files contributing most duplicate bytes: {note}\n"
        ));
    }
    s
}
