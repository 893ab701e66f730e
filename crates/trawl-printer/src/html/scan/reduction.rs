//! The data-reduction sections: dedup against block size, reference counts, compression, the
//! files holding most duplicates.

use maud::{Markup, html};
use trawl_report::{CompressionJson, DedupCounts, ReductionJson};

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, chart, group_digits, num, table, text};

use super::*;
use crate::human_bytes;

pub(crate) fn codec_name(c: &CompressionJson) -> String {
    match c.level {
        Some(l) => format!("{}-{l}", c.codec),
        None => c.codec.clone(),
    }
}

/// Every data-reduction section of one report.
pub(crate) fn reduction(id: &str, red: &ReductionJson) -> Markup {
    html! {
        (dedup(id, red))
        (references(id, red))
        (compression(id, red))
        @if let Some(c) = &red.cdc { (chunk_sizes(id, c)) }
        (top_files(id, red))
    }
}

/// Dedup against block size: the curve (CDC as a diamond) and the table.
fn dedup(id: &str, red: &ReductionJson) -> Markup {
    html! {
        h2 { "Deduplication by block size" }
        (chart(dedup_curve(id, red)))
        (dedup_table(id, red))
        @if red.dedup.iter().any(|d| d.counts.sample.is_some()) {
            p.note { "Estimated from a sample: error bars and ranges are 99% intervals." }
        }
        @if red.hardlinks.names > 0 {
            p.note {
                (group_digits(red.hardlinks.names)) " more names of hard-linked files ("
                (human_bytes(red.hardlinks.bytes)) ") are counted once, in no figure above."
            }
        }
    }
}

/// The dedup ratio against block size, CDC's point as a diamond.
fn dedup_curve(id: &str, red: &ReductionJson) -> String {
    let marks: Vec<Mark> = red
        .dedup
        .iter()
        .map(|d| Mark {
            label: size_label(d.block_size),
            value: d.counts.ratio.unwrap_or(0.0),
            interval: d.counts.ratio_interval(),
            data: vec![
                ("block-size", d.block_size.to_string()),
                (
                    "ratio",
                    d.counts.ratio.map_or("null".into(), |r| r.to_string()),
                ),
                ("unique-bytes", d.counts.unique_bytes.to_string()),
            ],
            title: format!(
                "{} blocks: {} ({} unique of {})",
                size_label(d.block_size),
                estimate(
                    d.counts.ratio,
                    d.counts.ratio_interval(),
                    d.counts.sample.as_ref().map(|s| s.confidence)
                ),
                human_bytes(d.counts.unique_bytes),
                human_bytes(d.counts.logical_bytes)
            ),
        })
        .collect();
    let extra: Vec<(f64, Mark)> = red.cdc.iter().map(|c| cdc_point(red, c)).collect();
    svg::curve(
        &format!("{id}-dedup"),
        "Dedup ratio against block size (fixed blocks joined, CDC as a diamond)",
        "dedup ratio",
        &marks,
        &extra,
    )
}

/// A row per block size, and CDC's.
fn dedup_table(id: &str, red: &ReductionJson) -> Markup {
    let mut rows: Vec<Vec<Cell>> = red
        .dedup
        .iter()
        .map(|d| dedup_row(size_label(d.block_size), d.block_size, &d.counts))
        .collect();
    if let Some(c) = &red.cdc {
        rows.push(dedup_row(
            format!(
                "CDC {} ({}-{})",
                size_label(c.avg_size),
                size_label(c.min_size),
                size_label(c.max_size)
            ),
            c.avg_size,
            &c.counts,
        ));
    }
    table(
        &format!("{id}-dedup-table"),
        &[
            "blocks",
            "logical",
            "blocks read",
            "unique blocks",
            "unique bytes",
            "zero bytes",
            "ratio",
        ],
        &rows,
        false,
    )
}

/// CDC's point on the dedup curve: where its average chunk size falls among the fixed sizes.
fn cdc_point(red: &ReductionJson, c: &trawl_report::CdcJson) -> (f64, Mark) {
    let l = (c.avg_size as f64).log2();
    let sizes: Vec<f64> = red
        .dedup
        .iter()
        .map(|d| (d.block_size as f64).log2())
        .collect();
    let pos = match sizes.iter().position(|s| *s >= l) {
        _ if sizes.is_empty() => 0.0,
        Some(0) => 0.0,
        Some(i) => (i - 1) as f64 + (l - sizes[i - 1]) / (sizes[i] - sizes[i - 1]),
        None => (sizes.len() - 1) as f64,
    };
    (
        pos,
        Mark {
            label: format!("CDC {}", size_label(c.avg_size)),
            value: c.counts.ratio.unwrap_or(0.0),
            interval: c.counts.ratio_interval(),
            data: vec![
                ("avg-size", c.avg_size.to_string()),
                (
                    "ratio",
                    c.counts.ratio.map_or("null".into(), |r| r.to_string()),
                ),
                ("unique-bytes", c.counts.unique_bytes.to_string()),
            ],
            title: format!(
                "content-defined chunks, {} average: {}",
                size_label(c.avg_size),
                estimate(
                    c.counts.ratio,
                    c.counts.ratio_interval(),
                    c.counts.sample.as_ref().map(|s| s.confidence)
                )
            ),
        },
    )
}

/// Content-defined chunks by length.
fn chunk_sizes(id: &str, c: &trawl_report::CdcJson) -> Markup {
    let marks: Vec<Mark> = c
        .chunk_sizes
        .iter()
        .map(|b| Mark {
            label: size_label(b.from),
            value: b.chunks as f64,
            interval: None,
            data: vec![
                ("from", b.from.to_string()),
                ("to", b.to.to_string()),
                ("chunks", b.chunks.to_string()),
            ],
            title: format!(
                "{} chunks of {}-{} bytes",
                group_digits(b.chunks),
                b.from,
                b.to - 1
            ),
        })
        .collect();
    html! {
        h2 { "CDC chunk sizes" }
        (chart(svg::bars(
            &format!("{id}-chunks"),
            "Chunks by length (power-of-two buckets)",
            "chunks",
            &marks,
        )))
    }
}

pub(crate) fn dedup_row(label: String, size: u64, c: &DedupCounts) -> Vec<Cell> {
    let r = estimate(
        c.ratio,
        c.ratio_interval(),
        c.sample.as_ref().map(|s| s.confidence),
    );
    vec![
        (label, Some(size as f64)),
        bytes(c.logical_bytes),
        num(c.blocks),
        num(c.unique_blocks),
        bytes(c.unique_bytes),
        bytes(c.zero_bytes),
        (r, c.ratio),
    ]
}

/// The reference-count histogram of the smallest block size, as `zdb -S` prints its DDT
/// histogram: distinct blocks per bucket, and the references to them.
pub(crate) fn references(id: &str, red: &ReductionJson) -> Markup {
    let Some(d) = red.dedup.first() else {
        return html! {};
    };
    html! {
        h2 { "Reference counts (" (size_label(d.block_size)) " blocks)" }
        (chart(references_bars(id, d)))
        (references_table(id, d))
        p.note { "Zero blocks are counted apart (thin provisioning) and are in no bucket." }
    }
}

/// A reference-count bucket's name: `3`, `4-7`, `1024+`.
fn ref_label(b: &trawl_report::RefBucket) -> String {
    match b.to {
        Some(t) if t == b.from => t.to_string(),
        Some(t) => format!("{}-{t}", b.from),
        None => format!("{}+", b.from),
    }
}

/// Distinct blocks by how many times they are referenced.
fn references_bars(id: &str, d: &trawl_report::DedupJson) -> String {
    let label = ref_label;
    let marks: Vec<Mark> = d
        .counts
        .references
        .iter()
        .map(|b| Mark {
            label: label(b),
            value: b.blocks as f64,
            interval: None,
            data: vec![
                ("from", b.from.to_string()),
                ("to", b.to.map_or("null".into(), |t| t.to_string())),
                ("blocks", b.blocks.to_string()),
                ("referenced-blocks", b.referenced_blocks.to_string()),
                (
                    "stored-bytes",
                    b.stored_bytes.map_or("null".into(), |v| v.to_string()),
                ),
                (
                    "logical-bytes",
                    b.logical_bytes.map_or("null".into(), |v| v.to_string()),
                ),
            ],
            title: format!(
                "{} distinct blocks referenced {} times ({} references)",
                group_digits(b.blocks),
                label(b),
                group_digits(b.referenced_blocks)
            ),
        })
        .collect();
    svg::bars(
        &format!("{id}-refs"),
        "Distinct blocks by how many times they are referenced",
        "distinct blocks",
        &marks,
    )
}

/// A row per bucket: distinct blocks and references, and their bytes where known.
fn references_table(id: &str, d: &trawl_report::DedupJson) -> Markup {
    let label = ref_label;
    let with_bytes = d.counts.references.iter().all(|b| b.stored_bytes.is_some());
    let rows: Vec<Vec<Cell>> = d
        .counts
        .references
        .iter()
        .map(|b| {
            let mut r = vec![
                (label(b), Some(b.from as f64)),
                num(b.blocks),
                num(b.referenced_blocks),
            ];
            if with_bytes {
                r.push(bytes(b.stored_bytes.unwrap_or(0)));
                r.push(bytes(b.logical_bytes.unwrap_or(0)));
            }
            r
        })
        .collect();
    let mut head = vec![
        "referenced",
        "distinct blocks (stored)",
        "references (logical)",
    ];
    if with_bytes {
        head.extend(["stored bytes", "logical bytes"]);
    }
    table(&format!("{id}-refs-table"), &head, &rows, false)
}

/// Logical, compressed and allocated bytes per codec, and the ratios.
pub(crate) fn compression(id: &str, red: &ReductionJson) -> Markup {
    if red.compression.is_empty() {
        return html! {};
    }
    html! {
        h2 { "Compression" }
        (chart(compression_bars(id, red)))
        (compression_table(id, red))
        (compression_notes(red))
    }
}

/// The bars of logical, compressed and allocated bytes per codec.
fn compression_bars(id: &str, red: &ReductionJson) -> String {
    let mut marks = Vec::new();
    for c in &red.compression {
        let name = codec_name(c);
        for (what, v) in [
            ("logical", c.logical_bytes),
            ("compressed", c.compressed_bytes),
            ("allocated", c.allocated_bytes),
        ] {
            marks.push(Mark {
                label: format!("{name} {what}"),
                value: v as f64,
                interval: (what == "allocated")
                    .then(|| c.sample.as_ref().map(|s| (s.low as f64, s.high as f64)))
                    .flatten(),
                data: vec![
                    ("codec", name.clone()),
                    ("kind", what.to_string()),
                    ("bytes", v.to_string()),
                ],
                title: format!("{name}: {} {what}", human_bytes(v)),
            });
        }
    }
    svg::bars(
        &format!("{id}-compression"),
        "Logical, compressed and allocated bytes per codec (allocated: rounded up to sectors)",
        "bytes",
        &marks,
    )
}

/// The table of bytes and ratios per codec.
fn compression_table(id: &str, red: &ReductionJson) -> Markup {
    let rows: Vec<Vec<Cell>> = red
        .compression
        .iter()
        .map(|c| {
            vec![
                text(codec_name(c)),
                text(format!("{} / {}", size_label(c.unit), size_label(c.sector))),
                bytes(c.logical_bytes),
                bytes(c.compressed_bytes),
                bytes(c.allocated_bytes),
                (
                    estimate(
                        c.ratio,
                        c.ratio_interval(),
                        c.sample.as_ref().map(|s| s.confidence),
                    ),
                    c.ratio,
                ),
                (
                    estimate(
                        c.combined_ratio,
                        c.combined_interval(),
                        c.combined_sample.as_ref().map(|s| s.confidence),
                    ),
                    c.combined_ratio,
                ),
            ]
        })
        .collect();
    table(
        &format!("{id}-compression-table"),
        &[
            "codec",
            "unit / sector",
            "logical",
            "compressed",
            "allocated",
            "ratio",
            "with dedup",
        ],
        &rows,
        false,
    )
}

/// How the units are compressed and stored, and why a ratio may be under 1x.
fn compression_notes(red: &ReductionJson) -> Markup {
    html! {
        @if let Some(c) = red.compression.first() {
            p.note {
                "Units of " (size_label(c.unit)) " are compressed one by one; a unit is stored compressed only if it shrinks by "
                (format!("{:.1}", c.threshold * 100.0)) "% or more, and takes whole " (c.sector)
                "-byte sectors. " (codec_name(c)) " compressed by " (c.implementation) "."
            }
        }
        @if red.compression.iter().any(|c| c.ratio.is_some_and(|r| r < 1.0)) {
            p.note.under-one {
                "A ratio under 1x means the data would take more room stored this way than it holds: "
                "every stored unit is rounded up to whole sectors, so a tree of small files (each "
                "smaller than a sector) is mostly rounding. The allocated column counts it; "
                code { "--sector" } " sets the sector to the storage's own."
            }
        }
    }
}

/// The files holding most duplicate data, or why there are none.
pub(crate) fn top_files(id: &str, red: &ReductionJson) -> Markup {
    html! {
        h2 { "Files holding most duplicate data" }
        @match &red.top_files {
            Some(top) if !top.is_empty() => {
                @let rows: Vec<Vec<Cell>> = top
                    .iter()
                    .map(|f| vec![text(f.path.clone()), bytes(f.duplicate_bytes), bytes(f.saved_bytes)])
                    .collect();
                (table(
                    &format!("{id}-top-files"),
                    &["file", "duplicate bytes", "share of the saving"],
                    &rows,
                    true,
                ))
            }
            Some(_) => p.note { "No block occurs twice." },
            None => p.note { (red.top_files_note.as_deref().unwrap_or("Not computed.")) },
        }
    }
}
