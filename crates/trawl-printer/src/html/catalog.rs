//! A catalog's collection over time as HTML: the verdicts of every audit run, how old the
//! verifications are, the files by state, the files that want attention (named), and the
//! chain head an auditor records.

use std::fmt::Write;

use trawl_report::audit::{CatalogView, STATES};

use super::svg::{self, Mark, Series};
use super::{Cell, card, esc, num, page, table, text};
use crate::human;

/// `2026-11-25 06:53:30` (UTC) from seconds since the epoch.
fn when(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

/// The whole page.
pub fn render(v: &CatalogView) -> String {
    let mut out = String::new();
    let title = format!("trawl catalog report: {}", v.catalog.path);
    let _ = write!(out, "<h1>{}</h1>", esc(&title));
    let roots: Vec<&str> = v.roots.iter().map(|r| r.path.as_str()).collect();
    let _ = write!(
        out,
        r#"<p class="sub">{} &middot; digests: {} &middot; catalog schema {}, {} &middot; as of {} UTC</p>"#,
        esc(&roots.join(", ")),
        esc(&v.algorithms.join(", ")),
        v.schema,
        human::bytes(v.catalog_bytes),
        when(v.now)
    );
    let registered: u64 = v.by_state.iter().map(|(_, n, _)| n).sum();
    let never = v.verification_age.first().map_or(0, |b| b.files);
    out.push_str(r#"<div class="cards" id="headline">"#);
    card(
        &mut out,
        "registered files",
        &registered.to_string(),
        "files the catalog knows",
        false,
    );
    card(
        &mut out,
        "audit runs",
        &v.runs.len().to_string(),
        "runs recorded",
        false,
    );
    card(
        &mut out,
        "want attention",
        &v.problem_count.to_string(),
        "corrupt, missing, modified or unreadable",
        v.problem_count > 0,
    );
    card(
        &mut out,
        "never verified",
        &never.to_string(),
        "present files never read by an audit",
        never > 0,
    );
    if let Some(last) = v.runs.last() {
        card(
            &mut out,
            "last audit",
            &when(last.started)[..10],
            &format!("run {} ({}, {})", last.run, last.mode, last.status),
            last.status != "complete",
        );
    }
    out.push_str("</div>");

    out.push_str("<h2>Verdicts per run</h2>");
    let labels: Vec<String> = v.runs.iter().map(|r| format!("#{}", r.run)).collect();
    let count = |r: &trawl_report::audit::RunRow, s: &str| {
        r.counts.iter().find(|(k, _)| k == s).map_or(0, |(_, n)| *n)
    };
    let class = |s: &str| match s {
        "ok" => "bar",
        "corrupt" => "s-corrupt",
        "modified" => "s-modified",
        "missing" => "s-missing",
        "new" => "s-new",
        "moved" => "s-moved",
        _ => "s-unreadable",
    };
    let all: Vec<Series> = STATES
        .iter()
        .map(|s| Series {
            name: s.to_string(),
            class: class(s),
            values: v.runs.iter().map(|r| count(r, s)).collect(),
        })
        .collect();
    out.push_str(&svg::stacked(
        "runs",
        "Paths per verdict in each run",
        "paths",
        &labels,
        &all,
    ));
    let not_ok: Vec<Series> = all.into_iter().filter(|s| s.name != "ok").collect();
    out.push_str(&svg::stacked(
        "runs-problems",
        "The same runs without the ok paths: what changed",
        "paths",
        &labels,
        &not_ok,
    ));
    let mut head = vec!["run", "started", "mode", "status", "files read", "read"];
    head.extend(STATES);
    head.push("chain digest");
    let rows: Vec<Vec<Cell>> = v
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                (r.run.to_string(), Some(r.run as f64)),
                (when(r.started), Some(r.started as f64)),
                text(r.mode.clone()),
                text(r.status.clone()),
                num(r.files_read),
                (human::bytes(r.bytes_read), Some(r.bytes_read as f64)),
            ];
            row.extend(STATES.iter().map(|s| num(count(r, s))));
            row.push(text(
                r.chain_digest
                    .as_deref()
                    .map_or("(not sealed)".to_string(), |d| {
                        format!("{}…", &d[..16.min(d.len())])
                    }),
            ));
            row
        })
        .collect();
    table(&mut out, "runs-table", &head, &rows, true);

    out.push_str("<h2>Age of the last verification</h2>");
    let marks: Vec<Mark> = v
        .verification_age
        .iter()
        .map(|b| Mark {
            label: b.label.clone(),
            value: b.files as f64,
            interval: None,
            data: vec![
                ("age", b.label.clone()),
                ("files", b.files.to_string()),
                ("bytes", b.bytes.to_string()),
            ],
            title: format!("{}: {} files ({})", b.label, b.files, human::bytes(b.bytes)),
        })
        .collect();
    out.push_str(&svg::bars(
        "ages",
        "Present files by how long ago an audit last read them",
        "files",
        &marks,
    ));
    out.push_str(r#"<p class="note">What an auditor must show: every file read and found intact within the period. Audits with <code>--older-than</code> read the oldest first.</p>"#);

    out.push_str("<h2>Files by state</h2>");
    let rows: Vec<Vec<Cell>> = v
        .by_state
        .iter()
        .map(|(s, n, b)| {
            vec![
                text(s.clone()),
                num(*n),
                (human::bytes(*b), Some(*b as f64)),
            ]
        })
        .collect();
    table(
        &mut out,
        "states",
        &["state", "files", "bytes"],
        &rows,
        true,
    );

    out.push_str("<h2>Files that want attention</h2>");
    if v.problems.is_empty() {
        out.push_str(
            r#"<p class="note">None: no file is corrupt, missing, modified or unreadable.</p>"#,
        );
    } else {
        let rows: Vec<Vec<Cell>> = v
            .problems
            .iter()
            .map(|p| {
                vec![
                    text(p.path.path.clone()),
                    text(p.state.clone()),
                    num(p.size),
                ]
            })
            .collect();
        table(
            &mut out,
            "problems",
            &["path", "state", "bytes"],
            &rows,
            true,
        );
        if v.problem_count as usize > v.problems.len() {
            let _ = write!(
                out,
                r#"<p class="note">... and {} more (<code>trawl catalog report --list corrupt,missing,modified,unreadable</code> lists them all).</p>"#,
                v.problem_count as usize - v.problems.len()
            );
        }
    }

    out.push_str("<h2>Chain</h2>");
    match &v.chain_head {
        Some(h) => {
            let _ = write!(
                out,
                r#"<p>Each sealed run's digest covers its events and the digest before it. Head: <code id="chain-head">{}</code>. Record it elsewhere; later, <code>trawl catalog verify -c {} --expect {}</code> shows that no recorded run was changed.</p>"#,
                esc(h),
                esc(&v.catalog.path),
                esc(h)
            );
        }
        None => out.push_str(r#"<p class="note">No sealed run yet.</p>"#),
    }
    let _ = write!(
        out,
        "<footer>Made by trawl {}. One file, no network.</footer>",
        env!("CARGO_PKG_VERSION")
    );
    page(&title, &out)
}
