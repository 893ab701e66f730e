//! A run's notice: its summary (the webhook's JSON) and the same facts as a mail's text.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;
use trawl_catalog::{AuditReport, Catalog, Verdict};
use trawl_report::{AuditHead, JsonPath};

/// The most problem paths a notice names; the rest are counted (`problems.total`).
pub const PROBLEMS_SHOWN: usize = 100;

/// The verdicts a notice calls problems (with a failure: a directory not listed).
const PROBLEM_VERDICTS: [Verdict; 4] = [
    Verdict::Corrupt,
    Verdict::Missing,
    Verdict::Modified,
    Verdict::Unreadable,
];

/// What one run's notice says.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The trawl that ran the audit.
    pub trawl_version: String,
    /// The catalog.
    pub catalog: JsonPath,
    /// The roots audited.
    pub roots: Vec<JsonPath>,
    /// The run's number in the catalog.
    pub run: i64,
    /// When the run started and ended (RFC 3339, UTC).
    pub started: String,
    pub ended: Option<String>,
    /// `complete`, or `partial` when a budget stopped the reads.
    pub status: String,
    /// `full`, `metadata` or `stored`.
    pub mode: String,
    /// Paths per verdict.
    pub counts: BTreeMap<String, u64>,
    pub files_read: u64,
    pub bytes_read: u64,
    /// A directory could not be listed or a file could not be read.
    pub failure: bool,
    /// Any corrupt, missing, modified or unreadable file, or a failure.
    pub problem: bool,
    /// The problem files: how many, and the first [`PROBLEMS_SHOWN`].
    pub problems: Problems,
    /// The audit's exit code.
    pub exit_code: u8,
}

/// The problem files of a run.
#[derive(Debug, Serialize)]
pub struct Problems {
    pub total: u64,
    pub first: Vec<Problem>,
}

/// One problem file.
#[derive(Debug, Serialize)]
pub struct Problem {
    /// corrupt, missing, modified or unreadable.
    pub state: String,
    #[serde(flatten)]
    pub path: JsonPath,
}

impl Summary {
    /// The summary of the run `report` (its head `head`), the problem paths read from the
    /// catalog's events; `code`: the audit's exit code.
    pub fn of(
        cat: &Catalog,
        report: &AuditReport,
        head: &AuditHead,
        code: u8,
    ) -> trawl_catalog::Result<Summary> {
        let mut problems = Problems {
            total: 0,
            first: Vec::new(),
        };
        cat.for_each_event(head.run, &mut |ev| {
            if !PROBLEM_VERDICTS.contains(&ev.verdict) {
                return;
            }
            problems.total += 1;
            if problems.first.len() < PROBLEMS_SHOWN {
                problems.first.push(Problem {
                    state: ev.verdict.name().to_string(),
                    path: JsonPath::new(&ev.path),
                });
            }
        })?;
        let s = &report.summary;
        Ok(Summary {
            trawl_version: head.trawl_version.clone(),
            catalog: absolute(&head.catalog),
            roots: head.roots.clone(),
            run: head.run,
            started: trawl_catalog::format_time(s.started),
            ended: s.finished.map(trawl_catalog::format_time),
            status: head.status.clone(),
            mode: head.mode.clone(),
            counts: head.counts.clone(),
            files_read: head.files_read,
            bytes_read: head.bytes_read,
            failure: report.trouble,
            problem: report.trouble || problems.total > 0,
            problems,
            exit_code: code,
        })
    }

    /// The mail's subject: the verdict of the run in a few words.
    pub fn subject(&self) -> String {
        let what = if self.problem {
            let mut w: Vec<String> = PROBLEM_VERDICTS
                .iter()
                .filter_map(|v| Some((v.name(), *self.counts.get(v.name())?)))
                .filter(|(_, n)| *n > 0)
                .map(|(v, n)| format!("{n} {v}"))
                .collect();
            if self.failure {
                w.push("a failure".into());
            }
            w.join(", ")
        } else {
            "no problem".into()
        };
        let roots: Vec<String> = self.roots.iter().map(shown).collect();
        format!(
            "trawl audit run {}: {what} ({})",
            self.run,
            roots.join(", ")
        )
    }

    /// The mail's body: the same facts as the JSON, as short text.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let roots: Vec<String> = self.roots.iter().map(shown).collect();
        let _ = writeln!(t, "catalog:   {}", shown(&self.catalog));
        let _ = writeln!(t, "roots:     {}", roots.join(", "));
        let _ = writeln!(
            t,
            "run:       {} ({}, {})",
            self.run, self.mode, self.status
        );
        let ended = self.ended.as_deref().unwrap_or("-");
        let _ = writeln!(t, "started:   {}", self.started);
        let _ = writeln!(t, "ended:     {ended}");
        let _ = writeln!(
            t,
            "read:      {} files, {} bytes",
            self.files_read, self.bytes_read
        );
        for (v, n) in self.counts.iter().filter(|(_, n)| **n > 0) {
            let _ = writeln!(t, "{:<10} {n}", format!("{v}:"));
        }
        if self.failure {
            let _ = writeln!(t, "failure:   a directory not listed or a file not read");
        }
        let _ = writeln!(t, "exit code: {}", self.exit_code);
        let p = &self.problems;
        if p.total > 0 {
            let _ = writeln!(
                t,
                "\nproblems ({}, the first {} listed):",
                p.total,
                p.first.len()
            );
            for x in &p.first {
                let _ = writeln!(t, "  {}: {}", x.state, shown(&x.path));
            }
        }
        let _ = writeln!(t, "\ntrawl {}", self.trawl_version);
        t
    }
}

/// A path in a mail's subject or text: escaped as the audit's lines escape it, so that a name
/// with a line break in it cannot forge a line (a problem, a header), and with its bytes when
/// it is not UTF-8.
fn shown(p: &JsonPath) -> String {
    p.to_string().escape_debug().to_string()
}

/// The catalog's path made absolute (a notice is read elsewhere), a non-UTF-8 one as it is.
fn absolute(p: &JsonPath) -> JsonPath {
    match (&p.path_hex, std::path::absolute(&p.path)) {
        (None, Ok(a)) => JsonPath::new(&a),
        _ => p.clone(),
    }
}
