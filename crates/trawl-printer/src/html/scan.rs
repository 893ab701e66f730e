//! A scan's report as HTML: headline figures, dedup against block size, reference counts,
//! compression, chunk and file size histograms, the files holding most duplicates, duplicate
//! groups, and every problem named. Several reports (`trawl report A.json B.json`) are drawn
//! one after the other under a table that sets their headline figures side by side.

use std::fmt::Write;

use trawl_report::breakdown::{Breakdown, Figures};
use trawl_report::reduction::{CompressionJson, DedupCounts, ReductionJson};
use trawl_report::scan::ScanReport;

use super::svg::{self, Mark};
use super::{Cell, bytes, card, esc, group_digits, num, page, table, text};
use crate::human;

/// Problems listed by name per kind; past it the page says how many more.
pub const PROBLEMS_SHOWN: usize = 1000;

/// `1.2345` -> `1.23x`.
fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

/// A ratio, with its interval and confidence when it is an estimate: `1.02x (0.97-1.09, 99%)`
/// (a point estimate is never shown alone).
fn estimate(r: Option<f64>, interval: Option<(f64, f64)>, confidence: Option<f64>) -> String {
    match (r, interval) {
        (Some(r), Some((lo, hi))) => {
            let hi = if hi >= f64::MAX / 2.0 {
                "inf".to_string()
            } else {
                format!("{hi:.2}")
            };
            format!(
                "{r:.2}x ({lo:.2}-{hi}, {:.0}%)",
                confidence.unwrap_or(0.99) * 100.0
            )
        }
        _ => ratio(r),
    }
}

/// Block sizes as people say them: `4K`, `128K`, `1M`.
fn size_label(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}K", n >> 10)
    } else {
        format!("{n}")
    }
}

/// The whole page for one report or more (`names`: what each came from, for headings).
pub fn render(reports: &[(String, &ScanReport)]) -> String {
    let mut body = String::new();
    let title = match reports {
        [(name, _)] => format!("trawl scan report: {name}"),
        _ => format!("trawl scan reports ({})", reports.len()),
    };
    let _ = write!(body, "<h1>{}</h1>", esc(&title));
    if reports.len() > 1 {
        compare(&mut body, reports);
    }
    for (i, (name, r)) in reports.iter().enumerate() {
        let id = format!("r{i}");
        let _ = write!(body, r#"<section class="report" id="{id}">"#);
        if reports.len() > 1 {
            let _ = write!(body, "<h2>{}</h2>", esc(name));
        }
        one(&mut body, &id, r);
        body.push_str("</section>");
    }
    let _ = write!(
        body,
        "<footer>Made by trawl {}. One file, no network: the charts are inline SVG; hover a mark for its figures.</footer>",
        env!("CARGO_PKG_VERSION")
    );
    page(&title, &body)
}

/// Headline figures of several reports side by side.
fn compare(out: &mut String, reports: &[(String, &ScanReport)]) {
    out.push_str("<h2>Side by side</h2>");
    let head = ["report", "files", "bytes", "dedup", "combined", "failed"];
    let rows: Vec<Vec<Cell>> = reports
        .iter()
        .map(|(name, r)| {
            let red = r.reduction.as_ref();
            let dd = red.and_then(|x| x.dedup.first()).map(|d| &d.counts);
            let d = dd.and_then(|d| d.ratio);
            let d_shown = dd.map_or_else(
                || ratio(None),
                |x| {
                    estimate(
                        x.ratio,
                        x.ratio_interval(),
                        x.sample.as_ref().map(|s| s.confidence),
                    )
                },
            );
            let cc = red.and_then(|x| x.compression.first());
            let c = cc.and_then(|c| c.combined_ratio);
            let c_shown = cc.map_or_else(
                || ratio(None),
                |x| {
                    estimate(
                        x.combined_ratio,
                        x.combined_interval(),
                        x.combined_sample.as_ref().map(|s| s.confidence),
                    )
                },
            );
            vec![
                text(name.clone()),
                num(r.totals.files),
                bytes(r.totals.bytes),
                (d_shown, d),
                (c_shown, c),
                num(r.totals.failed),
            ]
        })
        .collect();
    table(out, "compare", &head, &rows, true);
}

fn one(out: &mut String, id: &str, r: &ScanReport) {
    let roots: Vec<&str> = r.roots.iter().map(|p| p.path.as_str()).collect();
    let _ = write!(
        out,
        r#"<p class="sub">{} &middot; digests: {} &middot; trawl {}{}</p>"#,
        esc(&roots.join(", ")),
        esc(&if r.algorithms.is_empty() {
            "none".to_string()
        } else {
            r.algorithms.join(", ")
        }),
        esc(&r.trawl_version),
        if r.cancelled {
            " &middot; cancelled"
        } else {
            ""
        }
    );
    headline(out, r);
    if let Some(red) = &r.reduction {
        reduction(out, id, red);
    } else {
        out.push_str(r#"<p class="note">No data reduction was measured (--no-reduce).</p>"#);
    }
    file_sizes(out, id, r);
    if let Some(b) = &r.breakdown {
        breakdown(out, id, b);
    }
    duplicates(out, id, r);
    if let Some(m) = &r.flv {
        media(out, id, m);
    }
    problems(out, id, r);
    let _ = write!(
        out,
        r#"<p class="note">Read with {} I/O on {} threads. Digests: {}.</p>"#,
        esc(&r.io),
        r.threads,
        esc(&r
            .digest_implementations
            .iter()
            .map(|(a, i)| format!("{a} by {i}"))
            .collect::<Vec<_>>()
            .join("; "))
    );
}

fn headline(out: &mut String, r: &ScanReport) {
    let t = &r.totals;
    out.push_str(r#"<div class="cards" id="headline">"#);
    card(
        out,
        "files",
        &group_digits(t.files),
        &format!("{} files read", t.files),
        false,
    );
    card(
        out,
        "read",
        &human::bytes(t.bytes),
        &format!("{} bytes", t.bytes),
        false,
    );
    card(
        out,
        "time",
        &human::duration(t.seconds),
        &format!("{:.3} s", t.seconds),
        false,
    );
    card(
        out,
        "rate",
        &human::rate(t.bytes, t.seconds),
        "bytes read per second",
        false,
    );
    if let Some(red) = &r.reduction {
        if let Some(d) = red.dedup.first() {
            card(
                out,
                &format!("dedup at {}", size_label(d.block_size)),
                &estimate(
                    d.counts.ratio,
                    d.counts.ratio_interval(),
                    d.counts.sample.as_ref().map(|s| s.confidence),
                ),
                "logical bytes over unique bytes",
                false,
            );
        }
        if let Some(c) = red.compression.first() {
            card(
                out,
                &format!("dedup + {}", codec_name(c)),
                &estimate(
                    c.combined_ratio,
                    c.combined_interval(),
                    c.combined_sample.as_ref().map(|s| s.confidence),
                ),
                "logical bytes over the allocated bytes of unique units: what an array that dedups and compresses would store",
                false,
            );
        }
    }
    card(
        out,
        "skipped",
        &group_digits(t.skipped),
        "not regular files",
        false,
    );
    card(
        out,
        "failed",
        &group_digits(t.failed),
        "could not be read",
        t.failed > 0,
    );
    out.push_str("</div>");
}

fn codec_name(c: &CompressionJson) -> String {
    match c.level {
        Some(l) => format!("{}-{l}", c.codec),
        None => c.codec.clone(),
    }
}

fn reduction(out: &mut String, id: &str, red: &ReductionJson) {
    out.push_str("<h2>Deduplication by block size</h2>");
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
                human::bytes(d.counts.unique_bytes),
                human::bytes(d.counts.logical_bytes)
            ),
        })
        .collect();
    // CDC's point sits where its average chunk size falls among the fixed sizes.
    let extra: Vec<(f64, Mark)> = red
        .cdc
        .iter()
        .map(|c| {
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
        })
        .collect();
    out.push_str(&svg::curve(
        &format!("{id}-dedup"),
        "Dedup ratio against block size (fixed blocks joined, CDC as a diamond)",
        "dedup ratio",
        &marks,
        &extra,
    ));
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
        out,
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
    );
    if red.dedup.iter().any(|d| d.counts.sample.is_some()) {
        out.push_str(r#"<p class="note">Estimated from a sample: error bars and ranges are 99% intervals.</p>"#);
    }
    if red.hardlinks.names > 0 {
        let _ = write!(
            out,
            r#"<p class="note">{} more names of hard-linked files ({}) are counted once, in no figure above.</p>"#,
            group_digits(red.hardlinks.names),
            human::bytes(red.hardlinks.bytes)
        );
    }
    references(out, id, red);
    compression(out, id, red);
    if let Some(c) = &red.cdc {
        out.push_str("<h2>CDC chunk sizes</h2>");
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
        out.push_str(&svg::bars(
            &format!("{id}-chunks"),
            "Chunks by length (power-of-two buckets)",
            "chunks",
            &marks,
        ));
    }
    top_files(out, id, red);
}

fn dedup_row(label: String, size: u64, c: &DedupCounts) -> Vec<Cell> {
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
fn references(out: &mut String, id: &str, red: &ReductionJson) {
    let Some(d) = red.dedup.first() else {
        return;
    };
    let _ = write!(
        out,
        "<h2>Reference counts ({} blocks)</h2>",
        size_label(d.block_size)
    );
    let label = |b: &trawl_report::reduction::RefBucket| match b.to {
        Some(t) if t == b.from => t.to_string(),
        Some(t) => format!("{}-{t}", b.from),
        None => format!("{}+", b.from),
    };
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
    out.push_str(&svg::bars(
        &format!("{id}-refs"),
        "Distinct blocks by how many times they are referenced",
        "distinct blocks",
        &marks,
    ));
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
    table(out, &format!("{id}-refs-table"), &head, &rows, false);
    out.push_str(r#"<p class="note">Zero blocks are counted apart (thin provisioning) and are in no bucket.</p>"#);
}

fn compression(out: &mut String, id: &str, red: &ReductionJson) {
    if red.compression.is_empty() {
        return;
    }
    out.push_str("<h2>Compression</h2>");
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
                title: format!("{name}: {} {what}", human::bytes(v)),
            });
        }
    }
    out.push_str(&svg::bars(
        &format!("{id}-compression"),
        "Logical, compressed and allocated bytes per codec (allocated: rounded up to sectors)",
        "bytes",
        &marks,
    ));
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
        out,
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
    );
    if let Some(c) = red.compression.first() {
        let _ = write!(
            out,
            r#"<p class="note">Units of {} are compressed one by one; a unit is stored compressed only if it shrinks by {:.1}% or more, and takes whole {}-byte sectors. {} compressed by {}.</p>"#,
            size_label(c.unit),
            c.threshold * 100.0,
            c.sector,
            esc(&codec_name(c)),
            esc(&c.implementation)
        );
    }
}

fn top_files(out: &mut String, id: &str, red: &ReductionJson) {
    out.push_str("<h2>Files holding most duplicate data</h2>");
    match &red.top_files {
        Some(top) if !top.is_empty() => {
            let rows: Vec<Vec<Cell>> = top
                .iter()
                .map(|f| {
                    vec![
                        text(f.path.clone()),
                        bytes(f.duplicate_bytes),
                        bytes(f.saved_bytes),
                    ]
                })
                .collect();
            table(
                out,
                &format!("{id}-top-files"),
                &["file", "duplicate bytes", "share of the saving"],
                &rows,
                true,
            );
        }
        Some(_) => out.push_str(r#"<p class="note">No block occurs twice.</p>"#),
        None => {
            let _ = write!(
                out,
                r#"<p class="note">{}</p>"#,
                esc(red.top_files_note.as_deref().unwrap_or("Not computed."))
            );
        }
    }
}

fn file_sizes(out: &mut String, id: &str, r: &ScanReport) {
    if r.file_sizes.is_empty() {
        return;
    }
    out.push_str("<h2>File sizes</h2>");
    let label = |from: u64| {
        if from == 0 {
            "0".to_string()
        } else {
            human::bytes(from)
        }
    };
    let files: Vec<Mark> = r
        .file_sizes
        .iter()
        .map(|b| Mark {
            label: label(b.from),
            value: b.files as f64,
            interval: None,
            data: vec![
                ("from", b.from.to_string()),
                ("to", b.to.to_string()),
                ("files", b.files.to_string()),
                ("bytes", b.bytes.to_string()),
            ],
            title: format!(
                "{} files of {} to {} bytes ({})",
                group_digits(b.files),
                b.from,
                b.to.saturating_sub(1),
                human::bytes(b.bytes)
            ),
        })
        .collect();
    out.push_str(&svg::bars(
        &format!("{id}-file-sizes"),
        "Files by size (power-of-two buckets)",
        "files",
        &files,
    ));
    let bytes_marks: Vec<Mark> = r
        .file_sizes
        .iter()
        .map(|b| Mark {
            label: label(b.from),
            value: b.bytes as f64,
            interval: None,
            data: vec![("from", b.from.to_string()), ("bytes", b.bytes.to_string())],
            title: format!(
                "{} in files of {} to {} bytes",
                human::bytes(b.bytes),
                b.from,
                b.to.saturating_sub(1)
            ),
        })
        .collect();
    out.push_str(&svg::bars(
        &format!("{id}-file-bytes"),
        "Bytes by file size (where the data is)",
        "bytes",
        &bytes_marks,
    ));
}

fn duplicates(out: &mut String, id: &str, r: &ScanReport) {
    let Some(d) = &r.duplicates else {
        return;
    };
    out.push_str("<h2>Duplicate files</h2>");
    let _ = write!(
        out,
        r#"<p id="{id}-dup-summary" data-groups="{}" data-redundant-files="{}" data-redundant-bytes="{}">{} groups of equal files ({}, by {}); removing all copies but one would free {} in {} files.</p>"#,
        d.groups,
        d.redundant_files,
        d.redundant_bytes,
        group_digits(d.groups),
        human::bytes(d.bytes),
        esc(&d.algorithm),
        human::bytes(d.redundant_bytes),
        group_digits(d.redundant_files)
    );
    if d.top.is_empty() {
        return;
    }
    let rows: Vec<Vec<Cell>> = d
        .top
        .iter()
        .map(|g| {
            let mut names = g.files.join("\n");
            if g.count as usize > g.files.len() {
                let _ = write!(names, "\n... {} more", g.count as usize - g.files.len());
            }
            vec![
                text(names),
                bytes(g.size),
                num(g.count),
                bytes(g.redundant_bytes()),
            ]
        })
        .collect();
    table(
        out,
        &format!("{id}-dup-groups"),
        &["files", "size", "copies", "redundant"],
        &rows,
        true,
    );
}

fn problems(out: &mut String, id: &str, r: &ScanReport) {
    if r.failed.is_empty() && r.skipped.is_empty() {
        return;
    }
    out.push_str("<h2>Problems</h2>");
    for (what, list) in [("Could not be read", &r.failed), ("Skipped", &r.skipped)] {
        if list.is_empty() {
            continue;
        }
        let _ = write!(out, "<h3>{what} ({})</h3>", group_digits(list.len() as u64));
        let rows: Vec<Vec<Cell>> = list
            .iter()
            .take(PROBLEMS_SHOWN)
            .map(|f| {
                let why = match (&f.error, &f.skipped) {
                    (Some(e), _) => format!("{}: {}", e.kind, e.message),
                    (None, Some(s)) => s.clone(),
                    _ => String::new(),
                };
                vec![text(f.path.path.clone()), text(why)]
            })
            .collect();
        table(
            out,
            &format!(
                "{id}-{}",
                if what == "Skipped" {
                    "skipped"
                } else {
                    "failed"
                }
            ),
            &["path", "why"],
            &rows,
            true,
        );
        if list.len() > PROBLEMS_SHOWN {
            let _ = write!(
                out,
                r#"<p class="note">... and {} more (all are in the JSON report).</p>"#,
                list.len() - PROBLEMS_SHOWN
            );
        }
    }
}

/// The figures of a breakdown row as table cells (after its name).
fn figure_cells(f: &Figures) -> Vec<Cell> {
    let stored = if f.allocated_bytes > 0 {
        let r = f.bytes as f64 / f.allocated_bytes as f64;
        (
            format!("{} ({r:.2}x)", human::bytes(f.allocated_bytes)),
            Some(r),
        )
    } else {
        text("-")
    };
    vec![
        num(f.files),
        bytes(f.bytes),
        bytes(f.bytes.saturating_sub(f.duplicate_bytes)),
        bytes(f.duplicate_bytes),
        bytes(f.saved_bytes),
        stored,
    ]
}

const FIGURE_HEADS: [&str; 6] = [
    "files",
    "bytes",
    "unique",
    "duplicate",
    "dedup saves",
    "stored compressed",
];

fn breakdown(out: &mut String, id: &str, b: &Breakdown) {
    if !b.directories.is_empty() {
        let _ = write!(
            out,
            "<h2>By directory ({} level{} below the root)</h2>",
            b.depth,
            if b.depth == 1 { "" } else { "s" }
        );
        let tiles: Vec<svg::Tile> = b
            .directories
            .iter()
            .take(200)
            .map(|d| svg::Tile {
                label: d.path.clone(),
                value: d.figures.bytes as f64,
                shade: if d.figures.bytes > 0 {
                    d.figures.duplicate_bytes as f64 / d.figures.bytes as f64
                } else {
                    0.0
                },
                data: vec![
                    ("path", d.path.clone()),
                    ("bytes", d.figures.bytes.to_string()),
                    ("duplicate-bytes", d.figures.duplicate_bytes.to_string()),
                ],
                title: format!(
                    "{}: {} in {} files, {} duplicate",
                    d.path,
                    human::bytes(d.figures.bytes),
                    group_digits(d.figures.files),
                    human::bytes(d.figures.duplicate_bytes)
                ),
            })
            .collect();
        out.push_str(&svg::treemap(
            &format!("{id}-dirs-map"),
            "Directories by bytes (area); the more of a directory is duplicate, the more orange",
            &tiles,
        ));
        let mut rows: Vec<Vec<Cell>> = b
            .directories
            .iter()
            .map(|d| {
                let mut r = vec![text(d.path.clone())];
                r.extend(figure_cells(&d.figures));
                r
            })
            .collect();
        if let Some(o) = &b.other_directories {
            let mut r = vec![text(format!(
                "({} more directories)",
                group_digits(b.other_directory_count)
            ))];
            r.extend(figure_cells(o));
            rows.push(r);
        }
        let mut head = vec!["directory"];
        head.extend(FIGURE_HEADS);
        table(out, &format!("{id}-dirs"), &head, &rows, true);
        out.push_str(r#"<p class="note">Duplicate: bytes of 4 KiB blocks found more than once in the scan (in the directory or anywhere else); unique: the rest (blocks found once, and zero blocks); dedup saves: the directory's share of what dedup saves; stored compressed: what the first codec stores, unit by unit, and the ratio to the bytes. A second name of a hard-linked file is not counted again.</p>"#);
    }
    if !b.types.is_empty() {
        out.push_str("<h2>By type</h2>");
        let marks: Vec<Mark> = b
            .types
            .iter()
            .take(20)
            .map(|t| Mark {
                label: type_label(&t.extension, &t.format),
                value: t.figures.bytes as f64,
                interval: None,
                data: vec![
                    ("extension", t.extension.clone()),
                    ("format", t.format.clone()),
                    ("bytes", t.figures.bytes.to_string()),
                    ("compressed-format", t.compressed_format.to_string()),
                ],
                title: format!(
                    "{}: {} in {} files{}",
                    type_label(&t.extension, &t.format),
                    human::bytes(t.figures.bytes),
                    group_digits(t.figures.files),
                    if t.compressed_format {
                        " (already compressed)"
                    } else {
                        ""
                    }
                ),
            })
            .collect();
        out.push_str(&svg::bars(
            &format!("{id}-types-chart"),
            "Bytes by type (the 20 largest)",
            "bytes",
            &marks,
        ));
        let rows: Vec<Vec<Cell>> = b
            .types
            .iter()
            .map(|t| {
                let mut r = vec![
                    text(if t.extension.is_empty() {
                        "(none)".to_string()
                    } else {
                        t.extension.clone()
                    }),
                    text(if t.format.is_empty() {
                        "-".to_string()
                    } else {
                        t.format.clone()
                    }),
                    text(if t.compressed_format { "yes" } else { "" }),
                ];
                r.extend(figure_cells(&t.figures));
                r
            })
            .collect();
        let mut head = vec!["extension", "format (first bytes)", "compressed already"];
        head.extend(FIGURE_HEADS);
        table(out, &format!("{id}-types"), &head, &rows, true);
    }
    if let Some(groups) = &b.duplicate_directories {
        out.push_str("<h2>Duplicate directories</h2>");
        if groups.is_empty() {
            out.push_str(r#"<p class="note">No two directories hold the same files.</p>"#);
        } else {
            let rows: Vec<Vec<Cell>> = groups
                .iter()
                .map(|g| {
                    let mut names = g.directories.join("\n");
                    if g.count as usize > g.directories.len() {
                        let _ = write!(
                            names,
                            "\n... {} more",
                            g.count as usize - g.directories.len()
                        );
                    }
                    vec![
                        text(names),
                        num(g.files),
                        bytes(g.bytes),
                        num(g.count),
                        bytes(g.bytes * (g.count - 1)),
                    ]
                })
                .collect();
            table(
                out,
                &format!("{id}-dup-dirs"),
                &[
                    "directories",
                    "files each",
                    "bytes each",
                    "copies",
                    "redundant",
                ],
                &rows,
                true,
            );
            out.push_str(r#"<p class="note">Equal: the same names holding files of equal digests, all the way down (directories with no file are not compared). A group inside a listed one is not listed again.</p>"#);
        }
    }
}

fn type_label(ext: &str, format: &str) -> String {
    match (ext.is_empty(), format.is_empty()) {
        (true, true) => "(no extension)".into(),
        (false, true) => format!(".{ext}"),
        (true, false) => format.to_string(),
        (false, false) => format!(".{ext} {format}"),
    }
}

fn seconds(s: f64) -> String {
    if s >= 60.0 {
        human::duration(s)
    } else {
        format!("{s:.2} s")
    }
}

fn media(out: &mut String, id: &str, m: &trawl_report::media::MediaReport) {
    out.push_str("<h2>Media (FLV)</h2>");
    let _ = write!(
        out,
        r#"<p id="{id}-media-summary" data-files="{}" data-keyframes="{}">{} FLV files, {} of video, {} keyframes; {} with problems, {} that could not be indexed.</p>"#,
        m.files,
        m.keyframes,
        group_digits(m.files),
        human::duration(m.duration),
        group_digits(m.keyframes),
        m.with_problems,
        m.failed
    );
    let label = |b: &trawl_report::media::IntervalBucket| match b.to {
        Some(t) => format!("{}-{} s", b.from, t),
        None => format!("{}+ s", b.from),
    };
    let marks: Vec<Mark> = m
        .intervals
        .iter()
        .map(|b| Mark {
            label: label(b),
            value: b.intervals as f64,
            interval: None,
            data: vec![
                ("from", b.from.to_string()),
                ("to", b.to.map_or("null".into(), |t| t.to_string())),
                ("intervals", b.intervals.to_string()),
            ],
            title: format!(
                "{} keyframe intervals of {}",
                group_digits(b.intervals),
                label(b)
            ),
        })
        .collect();
    out.push_str(&svg::bars(
        &format!("{id}-keyframe-intervals"),
        "Time between keyframes (a player seeks no finer than this)",
        "intervals",
        &marks,
    ));
    let rows: Vec<Vec<Cell>> = m
        .listed
        .iter()
        .map(|f| {
            let video = match (&f.video_codec, f.width, f.height) {
                (Some(c), Some(w), Some(h)) => format!("{c} {w}x{h}"),
                (Some(c), _, _) => c.clone(),
                _ => "-".into(),
            };
            let notes = match &f.error {
                Some(e) => e.clone(),
                None => f.problems.join("; "),
            };
            vec![
                text(f.path.clone()),
                (seconds(f.duration), Some(f.duration)),
                num(f.keyframes),
                (f.max_interval.map_or("-".into(), seconds), f.max_interval),
                text(video),
                text(f.audio_codec.clone().unwrap_or_else(|| "-".into())),
                bytes(f.size),
                text(notes),
            ]
        })
        .collect();
    table(
        out,
        &format!("{id}-flv"),
        &[
            "file",
            "duration",
            "keyframes",
            "longest interval",
            "video",
            "audio",
            "size",
            "problems",
        ],
        &rows,
        true,
    );
    if m.files as usize > m.listed.len() {
        let _ = write!(
            out,
            r#"<p class="note">The first {} files are listed; all are counted above.</p>"#,
            m.listed.len()
        );
    }
}
