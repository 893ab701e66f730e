//! The file-size histogram, the largest duplicate groups and every problem named.

use std::fmt::Write;

use maud::{Markup, html};
use trawl_report::ScanReport;

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, chart, group_digits, num, table, text};

use super::*;
use crate::{human_bytes, human_count};

/// Files and bytes by file size.
pub(crate) fn file_sizes(id: &str, r: &ScanReport) -> Markup {
    if r.file_sizes.is_empty() {
        return html! {};
    }
    html! {
        h2 { "File sizes" }
        (chart(files_by_size(id, r)))
        (chart(bytes_by_size(id, r)))
    }
}

/// A size bucket's name: its lower bound (`0` for empty files).
fn bucket_label(from: u64) -> String {
    if from == 0 {
        "0".to_string()
    } else {
        human_bytes(from)
    }
}

/// Files by size.
fn files_by_size(id: &str, r: &ScanReport) -> String {
    let files: Vec<Mark> = r
        .file_sizes
        .iter()
        .map(|b| Mark {
            label: bucket_label(b.from),
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
                human_bytes(b.bytes)
            ),
        })
        .collect();
    svg::bars(
        &format!("{id}-file-sizes"),
        "Files by size (power-of-two buckets)",
        "files",
        &files,
    )
}

/// Bytes by file size: where the data is.
fn bytes_by_size(id: &str, r: &ScanReport) -> String {
    let bytes_marks: Vec<Mark> = r
        .file_sizes
        .iter()
        .map(|b| Mark {
            label: bucket_label(b.from),
            value: b.bytes as f64,
            interval: None,
            data: vec![("from", b.from.to_string()), ("bytes", b.bytes.to_string())],
            title: format!(
                "{} in files of {} to {} bytes",
                human_bytes(b.bytes),
                b.from,
                b.to.saturating_sub(1)
            ),
        })
        .collect();
    svg::bars(
        &format!("{id}-file-bytes"),
        "Bytes by file size (where the data is)",
        "bytes",
        &bytes_marks,
    )
}

/// The groups of equal files (with `--duplicates`): a summary, and the largest groups.
pub(crate) fn duplicates(id: &str, r: &ScanReport) -> Markup {
    let Some(d) = &r.duplicates else {
        return html! {};
    };
    let summary = html! {
        h2 { "Duplicate files" }
        p id=(format!("{id}-dup-summary")) data-groups=(d.groups)
            data-redundant-files=(d.redundant_files) data-redundant-bytes=(d.redundant_bytes) {
            (group_digits(d.groups)) " groups of equal files (" (human_bytes(d.bytes)) ", by "
            (d.algorithm) "); removing all copies but one would free "
            (human_bytes(d.redundant_bytes)) " in " (group_digits(d.redundant_files)) " files."
        }
    };
    if d.top.is_empty() {
        return summary;
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
    html! {
        (summary)
        (table(
            &format!("{id}-dup-groups"),
            &["files", "size", "copies", "redundant"],
            &rows,
            true,
        ))
    }
}

/// Every file that could not be read, by name (the first ones), under "Problems"; the entries
/// not read by design (links not followed, special files) counted by kind, and named in a
/// table folded away: a tree's symbolic links are not its problems.
pub(crate) fn problems(id: &str, r: &ScanReport) -> Markup {
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for f in &r.skipped {
        let k = f.skipped.clone().unwrap_or_default();
        match kinds.iter_mut().find(|(n, _)| *n == k) {
            Some((_, c)) => *c += 1,
            None => kinds.push((k, 1)),
        }
    }
    html! {
        @if !r.failed.is_empty() {
            h2 { "Problems" }
            h3 { "Could not be read (" (group_digits(r.failed.len() as u64)) ")" }
            (table(&format!("{id}-failed"), &["path", "why"], &problem_rows(&r.failed), true))
            @if let Some(n) = not_shown(&r.failed) {
                p.note { "... and " (n) " more (all are in the JSON report)." }
            }
        }
        @if !r.skipped.is_empty() {
            h2 { "Not read, by design" }
            p {
                (kinds.iter().map(|(k, n)| skipped_said(k, *n)).collect::<Vec<_>>().join("; ")) "."
            }
            details {
                summary { "Each of them (" (group_digits(r.skipped.len() as u64)) ")" }
                (table(&format!("{id}-skipped"), &["path", "what"], &problem_rows(&r.skipped), true))
                @if let Some(n) = not_shown(&r.skipped) {
                    p.note { "... and " (n) " more (all are in the JSON report)." }
                }
            }
        }
    }
}

/// A row per file shown (the first [`PROBLEMS_SHOWN`]): its path and why.
fn problem_rows(list: &[trawl_report::FileJson]) -> Vec<Vec<Cell>> {
    list.iter()
        .take(PROBLEMS_SHOWN)
        .map(|f| {
            let why = match (&f.error, &f.skipped) {
                (Some(e), _) => format!("{}: {}", e.kind, e.message),
                (None, Some(s)) => s.clone(),
                _ => String::new(),
            };
            vec![text(f.path.readable()), text(why)]
        })
        .collect()
}

/// How many of `list` are not shown, if any.
fn not_shown(list: &[trawl_report::FileJson]) -> Option<usize> {
    (list.len() > PROBLEMS_SHOWN).then(|| list.len() - PROBLEMS_SHOWN)
}

/// `n` entries skipped of kind `k`, as the page says it.
fn skipped_said(k: &str, n: usize) -> String {
    let n = n as u64;
    match k {
        "symlink" => format!(
            "{} (not followed: --follow reads what they point to)",
            human_count(n, "symbolic link", "symbolic links")
        ),
        "symlink-loop" => human_count(n, "link loop", "link loops"),
        "fifo" => human_count(n, "FIFO", "FIFOs"),
        "socket" => human_count(n, "socket", "sockets"),
        "block-device" | "char-device" => human_count(n, "device", "devices"),
        _ => format!("{n} {k}"),
    }
}
