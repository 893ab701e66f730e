//! A catalog's collection over time as HTML: the verdicts of every audit run, how old the
//! verifications are, the files by state, the files that want attention (named), the policy
//! and the files due under it, and the chain head an auditor records.

use maud::{Markup, html};
use trawl_report::{AUDIT_STATES, CatalogView};

use super::svg::{self, Mark, Series};
use super::{Cell, card, chart, group_digits, num, page, table, text};
use crate::human_bytes;

/// `2026-11-25 06:53:30` (UTC) from seconds since the epoch.
fn when(secs: i64) -> String {
    // RFC 3339 ends at 9999-12-31T23:59:59Z: a later time is written as that.
    let secs = secs.clamp(0, 253_402_300_799) as u64;
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

/// The whole page.
pub fn html_catalog(v: &CatalogView) -> String {
    let title = format!("trawl catalog report: {}", v.catalog.path);
    let roots: Vec<&str> = v.roots.iter().map(|r| r.path.as_str()).collect();
    let body = html! {
        h1 { (title) }
        p.sub {
            (roots.join(", ")) " \u{b7} digests: " (v.algorithms.join(", "))
            " \u{b7} catalog schema " (v.schema) ", " (human_bytes(v.catalog_bytes))
            " \u{b7} as of " (when(v.now)) " UTC"
        }
        (headline(v))
        (runs(v))
        (ages(v))
        (states(v))
        (attention(v))
        (policy(v))
        (chain(v))
        footer { "Made by trawl " (env!("CARGO_PKG_VERSION")) ". One file, no network." }
    };
    page(&title, body)
}

/// The headline figures, as cards.
fn headline(v: &CatalogView) -> Markup {
    let registered: u64 = v.by_state.iter().map(|(_, n, _)| n).sum();
    let never = v.verification_age.first().map_or(0, |b| b.files);
    html! {
        div.cards id="headline" {
            (card("registered files", &registered.to_string(), "files the catalog knows", false))
            (card("audit runs", &v.runs.len().to_string(), "runs recorded", false))
            (card(
                "want attention",
                &v.problem_count.to_string(),
                "corrupt, missing, modified or unreadable",
                v.problem_count > 0,
            ))
            (card("never verified", &never.to_string(), "present files never read by an audit", never > 0))
            @if let Some(last) = v.runs.last() {
                (card(
                    "last audit",
                    &when(last.started)[..10],
                    &format!("run {} ({}, {})", last.run, last.mode, last.status),
                    last.status != "complete",
                ))
            }
        }
    }
}

/// The verdicts of every run: two stacked charts and a table.
fn runs(v: &CatalogView) -> Markup {
    let labels: Vec<String> = v.runs.iter().map(|r| format!("#{}", r.run)).collect();
    let all: Vec<Series> = verdicts(v)
        .iter()
        .map(|s| Series {
            name: s.to_string(),
            class: state_class(s),
            values: v.runs.iter().map(|r| count(r, s)).collect(),
        })
        .collect();
    let every = svg::stacked(
        "runs",
        "Paths per verdict in each run",
        "paths",
        &labels,
        &all,
    );
    let (changed, left_out) = changed_chart(v, &labels, &all);
    html! {
        h2 { "Verdicts per run" }
        (chart(every))
        (chart(changed))
        @if !left_out.is_empty() {
            p.note {
                "Left out of the second chart, as registrations (every path new), which would set its scale: "
                (left_out.join(", ")) "."
            }
        }
        (runs_table(v))
        (modes(v))
    }
}

/// What each audit mode among the runs proves of the paths it calls ok.
fn modes(v: &CatalogView) -> Markup {
    let mut seen: Vec<&str> = Vec::new();
    for r in &v.runs {
        if !seen.contains(&r.mode.as_str()) {
            seen.push(&r.mode);
        }
    }
    html! {
        @for m in seen {
            p.note { "A " (m) " audit proves: " (trawl_report::audit_mode_proves(m)) "." }
        }
    }
}

/// The verdicts the charts and the runs table show: every one, but `uncompared` (a
/// no-download audit's) only where a run has any.
fn verdicts(v: &CatalogView) -> Vec<&'static str> {
    AUDIT_STATES
        .into_iter()
        .filter(|s| *s != "uncompared" || v.runs.iter().any(|r| count(r, s) > 0))
        .collect()
}

/// Paths of verdict `s` in run `r`.
fn count(r: &trawl_report::RunRow, s: &str) -> u64 {
    r.counts.iter().find(|(k, _)| k == s).map_or(0, |(_, n)| *n)
}

/// The chart's class of a verdict.
fn state_class(s: &str) -> &'static str {
    match s {
        "ok" => "bar",
        "corrupt" => "s-corrupt",
        "restored" => "s-restored",
        "modified" => "s-modified",
        "missing" => "s-missing",
        "new" => "s-new",
        "moved" => "s-moved",
        "uncompared" => "s-uncompared",
        _ => "s-unreadable",
    }
}

/// The runs' chart without the ok paths and the registrations, and the registrations left
/// out of it.
fn changed_chart(v: &CatalogView, labels: &[String], all: &[Series]) -> (String, Vec<String>) {
    // What changed, without the ok paths and without the registrations (runs whose every path
    // is new): a registration's thousands of new paths would set the scale, and a later run's
    // few events would be slivers.
    let registration = |r: &trawl_report::RunRow| {
        count(r, "new") > 0 && AUDIT_STATES.iter().all(|s| *s == "new" || count(r, s) == 0)
    };
    let kept: Vec<usize> = (0..v.runs.len())
        .filter(|&i| !registration(&v.runs[i]))
        .collect();
    let left_out: Vec<String> = v
        .runs
        .iter()
        .filter(|r| registration(r))
        .map(|r| format!("#{} ({} new paths)", r.run, count(r, "new")))
        .collect();
    let not_ok: Vec<Series> = all
        .iter()
        .filter(|s| s.name != "ok")
        .map(|s| Series {
            name: s.name.clone(),
            class: s.class,
            values: kept.iter().map(|&i| s.values[i]).collect(),
        })
        .collect();
    let kept_labels: Vec<String> = kept.iter().map(|&i| labels[i].clone()).collect();
    let changed = svg::stacked(
        "runs-problems",
        "The same runs without the ok paths: what changed",
        "paths",
        &kept_labels,
        &not_ok,
    );
    (changed, left_out)
}

/// A row per run: when, how, what was read, each verdict's paths and the chain's digest.
fn runs_table(v: &CatalogView) -> Markup {
    let mut head = vec!["run", "started", "mode", "status", "files read", "read"];
    let states = verdicts(v);
    head.extend(&states);
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
                (human_bytes(r.bytes_read), Some(r.bytes_read as f64)),
            ];
            row.extend(states.iter().map(|s| num(count(r, s))));
            row.push(text(
                r.chain_digest
                    .as_deref()
                    .map_or("(not sealed)".to_string(), |d| {
                        format!("{}…", &d[..12.min(d.len())])
                    }),
            ));
            row
        })
        .collect();
    table("runs-table", &head, &rows, true)
}

/// How long ago present files were last read.
fn ages(v: &CatalogView) -> Markup {
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
            title: format!("{}: {} files ({})", b.label, b.files, human_bytes(b.bytes)),
        })
        .collect();
    html! {
        h2 { "Age of the last verification" }
        (chart(svg::bars(
            "ages",
            "Present files by how long ago an audit last read them",
            "files",
            &marks,
        )))
        p.note {
            "What an auditor must show: every file read and found intact within the period. Audits with "
            code { "--older-than" } " read the oldest first."
        }
    }
}

/// Files and bytes by state.
fn states(v: &CatalogView) -> Markup {
    let rows: Vec<Vec<Cell>> = v
        .by_state
        .iter()
        .map(|(s, n, b)| vec![text(s.clone()), num(*n), (human_bytes(*b), Some(*b as f64))])
        .collect();
    html! {
        h2 { "Files by state" }
        (table("states", &["state", "files", "bytes"], &rows, true))
    }
}

/// The files that are corrupt, missing, modified or unreadable, named (the first ones).
fn attention(v: &CatalogView) -> Markup {
    let rows: Vec<Vec<Cell>> = v
        .problems
        .iter()
        .map(|p| vec![text(p.path.readable()), text(p.state.clone()), num(p.size)])
        .collect();
    html! {
        h2 { "Files that want attention" }
        @if v.problems.is_empty() {
            p.note { "None: no file is corrupt, missing, modified or unreadable." }
        } @else {
            (table("problems", &["path", "state", "bytes"], &rows, true))
            @if v.problem_count as usize > v.problems.len() {
                p.note {
                    "... and " (v.problem_count as usize - v.problems.len()) " more ("
                    code { "trawl catalog report --list corrupt,missing,modified,unreadable" }
                    " lists them all)."
                }
            }
        }
    }
}

/// `30 days`, `36 hours`, `90 minutes`, `45 s`: a period in its largest whole unit.
fn period(secs: u64) -> String {
    let units = [(86_400, "day"), (3_600, "hour"), (60, "minute")];
    match units
        .iter()
        .find(|(n, _)| secs >= *n && secs.is_multiple_of(*n))
    {
        Some((n, name)) => {
            let k = secs / n;
            format!("{k} {name}{}", if k == 1 { "" } else { "s" })
        }
        None => format!("{secs} s"),
    }
}

/// The policy (how often each file is read, what one run may read, when) and the files due.
fn policy(v: &CatalogView) -> Markup {
    let cat = &v.catalog.path;
    html! {
        h2 { "Policy" }
        @match &v.policy {
            None => p.note {
                "None: no audit period is set. "
                code { "trawl catalog policy -c " (cat) " --every 90d" }
                " sets one; "
                code { "trawl audit --policy -c " (cat) }
                " then reads what is due."
            },
            Some(p) => {
                p id="policy" {
                    "Every file read at least every " (period(p.every_secs))
                    @if let Some(b) = p.max_bytes { "; at most " (human_bytes(b)) " a run" }
                    @if let Some(t) = p.max_time_secs { "; at most " (period(t)) " a run" }
                    @if let Some(w) = &p.window { "; runs start " (w) " (local time)" }
                    "."
                }
                p id="due" {
                    strong { (group_digits(p.due_files)) }
                    " files (" (human_bytes(p.due_bytes)) ") due now: never verified, or not within the period."
                }
                @if !p.due.is_empty() {
                    (table("due", &["path", "bytes", "last verified (UTC)"], &due_rows(p), true))
                    @if p.due_files as usize > p.due.len() {
                        p.note {
                            "... and " (p.due_files as usize - p.due.len()) " more ("
                            code { "trawl catalog due -c " (cat) }
                            " lists them all)."
                        }
                    }
                }
            }
        }
    }
}

/// The due files' rows: path, size, last verification.
fn due_rows(p: &trawl_report::PolicyView) -> Vec<Vec<Cell>> {
    p.due
        .iter()
        .map(|d| {
            vec![
                text(d.path.readable()),
                num(d.size),
                text(d.last_verified.map_or_else(|| "never".to_string(), when)),
            ]
        })
        .collect()
}

/// The hash chain's head, for an auditor to record.
fn chain(v: &CatalogView) -> Markup {
    html! {
        h2 { "Chain" }
        @match &v.chain_head {
            Some(h) => p {
                "Each sealed run's digest covers its events and the digest before it. Head: "
                code id="chain-head" { (h) }
                ". Record it elsewhere; later, "
                code { "trawl catalog verify -c " (v.catalog.path) " --expect " (h) }
                " shows that no recorded run was changed."
            },
            None => p.note { "No sealed run yet." },
        }
    }
}
