//! The breakdown by directory (treemap and table), by type, and the directories with equal
//! content.

use std::fmt::Write;

use maud::{Markup, html};
use trawl_report::{Breakdown, Figures, TypeRow};

use crate::html::svg::{self, Mark};
use crate::html::{Cell, bytes, chart, group_digits, num, table, text};
use crate::human_bytes;

/// The directories the page draws and lists, the largest first: the page stays small whatever
/// the tree (the JSON report keeps more).
const DIRECTORIES_SHOWN: usize = 100;

/// The figures of a breakdown row as table cells (after its name).
pub(crate) fn figure_cells(f: &Figures) -> Vec<Cell> {
    let stored = if f.allocated_bytes > 0 {
        let r = f.bytes as f64 / f.allocated_bytes as f64;
        (
            format!("{} ({r:.2}x)", human_bytes(f.allocated_bytes)),
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

pub(crate) const FIGURE_HEADS: [&str; 6] = [
    "files",
    "bytes",
    "unique",
    "duplicate",
    "dedup saves",
    "stored compressed",
];

/// Where the bytes, the duplicates and the compressible data are: by directory, by type, and
/// the directories with equal content.
pub(crate) fn breakdown(id: &str, b: &Breakdown) -> Markup {
    html! {
        @if !b.directories.is_empty() { (by_directory(id, b)) }
        @if !b.types.is_empty() { (by_type(id, b)) }
        @if let Some(groups) = &b.duplicate_directories { (equal_directories(id, groups)) }
    }
}

fn by_directory(id: &str, b: &Breakdown) -> Markup {
    {
        let tiles: Vec<svg::Tile> = b
            .directories
            .iter()
            .take(DIRECTORIES_SHOWN)
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
                    human_bytes(d.figures.bytes),
                    group_digits(d.figures.files),
                    human_bytes(d.figures.duplicate_bytes)
                ),
            })
            .collect();
        let map = svg::treemap(
            &format!("{id}-dirs-map"),
            "Directories by bytes (area); the more of a directory is duplicate, the more orange",
            &tiles,
        );
        let rows: Vec<Vec<Cell>> = b
            .directories
            .iter()
            .take(DIRECTORIES_SHOWN)
            .map(|d| {
                let mut r = vec![text(d.path.clone())];
                r.extend(figure_cells(&d.figures));
                r
            })
            .collect();
        // The rest, counted: the JSON report lists the directories the breakdown keeps.
        let not_listed =
            b.directories.len().saturating_sub(DIRECTORIES_SHOWN) as u64 + b.other_directory_count;

        let mut head = vec!["directory"];
        head.extend(FIGURE_HEADS);
        html! {
            h2 { "By directory (" (b.depth) " level" @if b.depth != 1 { "s" } " below the root)" }
            (chart(map))
            (table(&format!("{id}-dirs"), &head, &rows, true))
            @if not_listed > 0 {
                p.note { "The " (rows.len()) " largest directories; " (group_digits(not_listed)) " more are in the JSON report (the smallest of them summed as other_directories)." }
            }
            p.note { "Duplicate: bytes of 4 KiB blocks found more than once in the scan (in the directory or anywhere else); unique: the rest (blocks found once, and zero blocks); dedup saves: the directory's share of what dedup saves; stored compressed: what the first codec stores, unit by unit, and its ratio to the files' bytes (their logical size, not the blocks they occupy on disk now). A second name of a hard-linked file is not counted again." }
        }
    }
}

/// The type rows of the page: one per extension, the formats its files' first bytes showed
/// listed in it (the JSON report keeps a row per extension and format: `.py` files with a
/// `#!` line and without were two rows of one type), the most bytes first.
fn types_by_extension(b: &Breakdown) -> Vec<(TypeRow, &'static str)> {
    let mut rows: Vec<TypeRow> = Vec::new();
    let mut compressed: Vec<(bool, bool)> = Vec::new(); // (any, all)
    for t in &b.types {
        match rows.iter().position(|r| r.extension == t.extension) {
            Some(i) => {
                let r = &mut rows[i];
                r.figures.add(&t.figures);
                if !t.format.is_empty() && !r.format.split(", ").any(|f| f == t.format) {
                    if !r.format.is_empty() {
                        r.format.push_str(", ");
                    }
                    r.format.push_str(&t.format);
                }
                compressed[i].0 |= t.compressed_format;
                compressed[i].1 &= t.compressed_format;
            }
            None => {
                rows.push(t.clone());
                compressed.push((t.compressed_format, t.compressed_format));
            }
        }
    }
    let already: Vec<&'static str> = compressed
        .iter()
        .map(|c| match c {
            (_, true) => "yes",
            (true, false) => "some",
            (false, _) => "",
        })
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|a, b| {
        rows[*b]
            .figures
            .bytes
            .cmp(&rows[*a].figures.bytes)
            .then_with(|| rows[*a].extension.cmp(&rows[*b].extension))
    });
    order
        .into_iter()
        .map(|i| (rows[i].clone(), already[i]))
        .collect()
}

fn by_type(id: &str, b: &Breakdown) -> Markup {
    {
        let types = types_by_extension(b);
        let marks: Vec<Mark> = types
            .iter()
            .take(20)
            .map(|(t, already)| Mark {
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
                    human_bytes(t.figures.bytes),
                    group_digits(t.figures.files),
                    match *already {
                        "yes" => " (already compressed)",
                        "some" => " (some already compressed)",
                        _ => "",
                    }
                ),
            })
            .collect();
        let bars = svg::bars(
            &format!("{id}-types-chart"),
            "Bytes by type (the 20 largest)",
            "bytes",
            &marks,
        );
        let rows: Vec<Vec<Cell>> = types
            .iter()
            .map(|(t, already)| {
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
                    text(already.to_string()),
                ];
                r.extend(figure_cells(&t.figures));
                r
            })
            .collect();
        let mut head = vec!["extension", "format (first bytes)", "compressed already"];
        head.extend(FIGURE_HEADS);
        html! {
            h2 { "By type" }
            (chart(bars))
            (table(&format!("{id}-types"), &head, &rows, true))
        }
    }
}

fn equal_directories(id: &str, groups: &[trawl_report::DuplicateDirectories]) -> Markup {
    {
        if groups.is_empty() {
            html! {
                h2 { "Duplicate directories" }
                p.note { "No two directories hold the same files." }
            }
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
            let t = table(
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
            html! {
                h2 { "Duplicate directories" }
                (t)
                p.note { "Equal: the same names holding files of equal digests, all the way down (directories with no file are not compared). A group inside a listed one is not listed again." }
            }
        }
    }
}

pub(crate) fn type_label(ext: &str, format: &str) -> String {
    match (ext.is_empty(), format.is_empty()) {
        (true, true) => "(no extension)".into(),
        (false, true) => format!(".{ext}"),
        (true, false) => format.to_string(),
        (false, false) => format!(".{ext} {format}"),
    }
}
