//! The file-size histogram, the largest duplicate groups and every problem named.

use std::fmt::Write;

use trawl_report::scan::ScanReport;

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, esc, group_digits, num, table, text};
use crate::human;

use super::*;

pub(crate) fn file_sizes(out: &mut String, id: &str, r: &ScanReport) {
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

pub(crate) fn duplicates(out: &mut String, id: &str, r: &ScanReport) {
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

pub(crate) fn problems(out: &mut String, id: &str, r: &ScanReport) {
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
