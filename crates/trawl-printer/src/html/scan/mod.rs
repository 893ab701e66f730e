//! A scan's report as HTML: headline figures, dedup against block size, reference counts,
//! compression, chunk and file size histograms, the files holding most duplicates, duplicate
//! groups, and every problem named. Several reports (`trawl report A.json B.json`) are drawn
//! one after the other under a table that sets their headline figures side by side.
//!
//! This module draws the page and its headline; the sections are drawn by `reduction`,
//! `files`, `breakdown` and `media`.

use maud::{Markup, html};
use trawl_report::ScanReport;

use crate::html::{Cell, bytes, card, group_digits, num, page, table, text};
use crate::{human_bytes, human_duration, human_estimate, human_rate};

mod breakdown;
mod files;
mod media;
mod reduction;

use {breakdown::*, files::*, media::*, reduction::*};

/// Problems listed by name per kind; past it the page says how many more.
pub const PROBLEMS_SHOWN: usize = 1000;

/// `1.2345` -> `1.23x`.
pub(crate) fn ratio(r: Option<f64>) -> String {
    human_estimate(r, None, None, "x")
}

/// A ratio, with its interval and confidence when it is an estimate: `1.02x (0.97-1.09, 99%)`
/// (a point estimate is never shown alone).
pub(crate) fn estimate(
    r: Option<f64>,
    interval: Option<(f64, f64)>,
    confidence: Option<f64>,
) -> String {
    human_estimate(r, interval, confidence, "x")
}

/// Block sizes as people say them: `4K`, `128K`, `1M`.
pub(crate) fn size_label(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{}K", n >> 10)
    } else {
        format!("{n}")
    }
}

/// The whole page for one report or more (`names`: what each came from, for headings).
pub fn html_scan(reports: &[(String, &ScanReport)]) -> String {
    let title = match reports {
        [(name, _)] => format!("trawl scan report: {name}"),
        _ => format!("trawl scan reports ({})", reports.len()),
    };
    let body = html! {
        h1 { (title) }
        @if reports.len() > 1 { (compare(reports)) }
        @for (i, (name, r)) in reports.iter().enumerate() {
            @let id = format!("r{i}");
            section.report id=(id) {
                @if reports.len() > 1 { h2 { (name) } }
                (one(&id, r))
            }
        }
        footer {
            "Made by trawl " (env!("CARGO_PKG_VERSION"))
            ". One file, no network: the charts are inline SVG; hover a mark for its figures."
        }
    };
    page(&title, body)
}

/// Headline figures of several reports side by side.
pub(crate) fn compare(reports: &[(String, &ScanReport)]) -> Markup {
    let (dedup_sizes, codecs) = compared(reports);
    let mut head: Vec<String> = vec!["report".into(), "files".into(), "bytes".into()];
    head.extend(
        dedup_sizes
            .iter()
            .map(|s| format!("dedup at {}", size_label(*s))),
    );
    head.extend(codecs.iter().map(|c| format!("dedup + {c}")));
    head.push("failed".into());
    let rows: Vec<Vec<Cell>> = reports
        .iter()
        .map(|(name, r)| compare_row(name, r, &dedup_sizes, &codecs))
        .collect();
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    html! {
        h2 { "Side by side" }
        (table("compare", &head, &rows, true))
        p.note { "dedup: logical bytes over unique bytes at the smallest block size measured; dedup + a codec: what an array that dedups and compresses would store (the combined ratio)." }
    }
}

/// The block sizes and codecs the reports measured, in their order.
fn compared(reports: &[(String, &ScanReport)]) -> (Vec<u64>, Vec<String>) {
    // A column per block size and codec the reports measured, named: reports made with other
    // settings are not compared under one word.
    let mut dedup_sizes: Vec<u64> = Vec::new();
    let mut codecs: Vec<String> = Vec::new();
    for (_, r) in reports {
        if let Some(red) = &r.reduction {
            if let Some(d) = red.dedup.first()
                && !dedup_sizes.contains(&d.block_size)
            {
                dedup_sizes.push(d.block_size);
            }
            for c in &red.compression {
                let name = codec_name(c);
                if !codecs.contains(&name) {
                    codecs.push(name);
                }
            }
        }
    }
    (dedup_sizes, codecs)
}

/// One report's row: its totals, dedup at each block size and each codec's combined ratio.
fn compare_row(name: &str, r: &ScanReport, dedup_sizes: &[u64], codecs: &[String]) -> Vec<Cell> {
    let red = r.reduction.as_ref();
    let mut row = vec![
        text(name.to_string()),
        num(r.totals.files),
        bytes(r.totals.bytes),
    ];
    for s in dedup_sizes {
        let dd = red
            .and_then(|x| x.dedup.first())
            .filter(|d| d.block_size == *s)
            .map(|d| &d.counts);
        row.push(dd.map_or_else(
            || (ratio(None), None),
            |x| {
                (
                    estimate(
                        x.ratio,
                        x.ratio_interval(),
                        x.sample.as_ref().map(|s| s.confidence),
                    ),
                    x.ratio,
                )
            },
        ));
    }
    for name in codecs {
        let cc = red.and_then(|x| x.compression.iter().find(|c| codec_name(c) == *name));
        row.push(cc.map_or_else(
            || (ratio(None), None),
            |x| {
                (
                    estimate(
                        x.combined_ratio,
                        x.combined_interval(),
                        x.combined_sample.as_ref().map(|s| s.confidence),
                    ),
                    x.combined_ratio,
                )
            },
        ));
    }
    row.push(num(r.totals.failed));
    row
}

/// One report's sections.
pub(crate) fn one(id: &str, r: &ScanReport) -> Markup {
    let roots: Vec<&str> = r.roots.iter().map(|p| p.path.as_str()).collect();
    let digests = if r.algorithms.is_empty() {
        "none".to_string()
    } else {
        r.algorithms.join(", ")
    };
    let implementations = r
        .digest_implementations
        .iter()
        .map(|(a, i)| format!("{a} by {i}"))
        .collect::<Vec<_>>()
        .join("; ");
    html! {
        p.sub {
            (roots.join(", ")) " \u{b7} digests: " (digests) " \u{b7} trawl " (r.trawl_version)
            @if r.cancelled { " \u{b7} cancelled" }
        }
        (headline(r))
        @if let Some(red) = &r.reduction {
            (reduction(id, red))
        } @else {
            p.note { "No data reduction was measured (--no-reduce)." }
        }
        (file_sizes(id, r))
        @if let Some(b) = &r.breakdown { (breakdown(id, b)) }
        (duplicates(id, r))
        @if let Some(m) = &r.flv { (media(id, m)) }
        (problems(id, r))
        p.note { "Read with " (r.io) " I/O on " (r.threads) " threads. Digests: " (implementations) "." }
    }
}

/// The headline figures, as cards.
pub(crate) fn headline(r: &ScanReport) -> Markup {
    let t = &r.totals;
    let red = r.reduction.as_ref();
    html! {
        div.cards id="headline" {
            (card("files", &group_digits(t.files), &format!("{} files read", t.files), false))
            (card("read", &human_bytes(t.bytes), &format!("{} bytes", t.bytes), false))
            (card("time", &human_duration(t.seconds), &format!("{:.3} s", t.seconds), false))
            (card("rate", &human_rate(t.bytes, t.seconds), "bytes read per second", false))
            @if let Some(d) = red.and_then(|x| x.dedup.first()) {
                (card(
                    &format!("dedup at {}", size_label(d.block_size)),
                    &estimate(
                        d.counts.ratio,
                        d.counts.ratio_interval(),
                        d.counts.sample.as_ref().map(|s| s.confidence),
                    ),
                    "logical bytes over unique bytes",
                    false,
                ))
            }
            // Every codec's combined figure: the first is not the best (lz4 1.61x beside
            // zstd's 1.96x).
            @for c in red.map_or(&[][..], |x| &x.compression[..]) {
                (card(
                    &format!("dedup + {}", codec_name(c)),
                    &estimate(
                        c.combined_ratio,
                        c.combined_interval(),
                        c.combined_sample.as_ref().map(|s| s.confidence),
                    ),
                    "logical bytes over the allocated bytes of unique units: what an array that dedups and compresses would store",
                    false,
                ))
            }
            (card("skipped", &group_digits(t.skipped), "not regular files", false))
            (card("failed", &group_digits(t.failed), "could not be read", t.failed > 0))
        }
    }
}
